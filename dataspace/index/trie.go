package index

import (
	"slices"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// step is one key of a path: a record field / sequence item index (idx ≥ 0)
// or a dictionary key. idx is precomputed so walks never convert keys.
type step struct {
	key preserves.Value
	idx int // -1 when key is not a valid position
}

type path []step

func mkStep(key preserves.Value) step {
	if i, ok := pattern.Index(key); ok {
		return step{key: key, idx: i}
	}
	return step{key: key, idx: -1}
}

// rootStep selects the asserted value out of the one-element wrapper the walk
// starts from.
var rootStep = step{key: preserves.Int(0), idx: 0}

func (s step) equal(t step) bool { return s.idx == t.idx && preserves.Equal(s.key, t.key) }

func pathEqual(a, b path) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].equal(b[i]) {
			return false
		}
	}
	return true
}

func pathsEqual(a, b []path) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !pathEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// stepInto follows one key into v (looking through annotations).
func stepInto(v preserves.Value, s step) (preserves.Value, bool) {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Record:
		if s.idx >= 0 && s.idx < len(x.Fields) {
			return x.Fields[s.idx], true
		}
	case preserves.Sequence:
		if s.idx >= 0 && s.idx < len(x) {
			return x[s.idx], true
		}
	case *preserves.Dictionary:
		return x.Get(s.key)
	}
	return nil, false
}

func project(v preserves.Value, p path) (preserves.Value, bool) {
	for _, s := range p {
		var ok bool
		if v, ok = stepInto(v, s); !ok {
			return nil, false
		}
	}
	return v, true
}

// projectAll appends the projections of v on ps to dst; ok is false when a
// path does not exist in v.
func projectAll(dst []preserves.Value, v preserves.Value, ps []path) ([]preserves.Value, bool) {
	for _, p := range ps {
		w, ok := project(v, p)
		if !ok {
			return dst, false
		}
		dst = append(dst, w)
	}
	return dst, true
}

func allExist(v preserves.Value, ps []path) bool {
	for _, p := range ps {
		if _, ok := project(v, p); !ok {
			return false
		}
	}
	return true
}

// analysis is §12.1's reading of a pattern (the shape is read by walk).
type analysis struct {
	constPaths []path
	constVals  []preserves.Value
	checkPaths []path // positions that must exist, minus those captured
	capPaths   []path
}

// analyse reads p in capture order. ok is false when p can never match (a
// hand-built pattern with a nil literal or group type).
func analyse(p pattern.Pattern) (a analysis, ok bool) {
	var checks []path
	ok = a.visit(p, nil, &checks)
	// A position that is captured must exist anyway: checking it while
	// capturing lets more patterns share leaves (e.g. <foo ?x> shares the
	// node's cache instead of keeping its own set).
	for _, c := range checks {
		captured := false
		for _, cp := range a.capPaths {
			if pathEqual(c, cp) {
				captured = true
				break
			}
		}
		if !captured {
			a.checkPaths = append(a.checkPaths, c)
		}
	}
	return a, ok
}

func (a *analysis) visit(p pattern.Pattern, at path, checks *[]path) bool {
	switch x := p.(type) {
	case nil, pattern.Discard:
		*checks = append(*checks, at)
	case pattern.Bind:
		a.capPaths = append(a.capPaths, at)
		return a.visit(x.Pattern, at, checks)
	case pattern.Lit:
		if x.Value == nil {
			return false
		}
		a.constPaths = append(a.constPaths, at)
		a.constVals = append(a.constVals, x.Value)
	case pattern.Group:
		if _, ok := classOf(x.Type); !ok {
			return false
		}
		for _, e := range x.Entries {
			sub := append(at[:len(at):len(at)], mkStep(e.Key))
			if !a.visit(e.Pattern, sub, checks) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// class is what a trie edge requires of the value it steps to (§12.2).
type class struct {
	kind  classKind
	label preserves.Value // for classRec
}

type classKind uint8

const (
	classRec classKind = iota + 1
	classArr
	classDict
)

func classOf(t pattern.GroupType) (class, bool) {
	switch x := t.(type) {
	case pattern.RecType:
		if x.Label == nil {
			return class{}, false
		}
		return class{kind: classRec, label: x.Label}, true
	case pattern.ArrType:
		return class{kind: classArr}, true
	case pattern.DictType:
		return class{kind: classDict}, true
	}
	return class{}, false
}

func (c class) matches(v preserves.Value) bool {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Record:
		return c.kind == classRec && preserves.Equal(c.label, x.Label)
	case preserves.Sequence:
		return c.kind == classArr
	case *preserves.Dictionary:
		return c.kind == classDict
	}
	return false
}

// node is a trie node: one shape prefix.
type node struct {
	parent *node
	in     *edge // the parent's edge holding this node
	cls    class
	cached entrySet // entries passing every guard down to here (unused at the root, whose set is Index.all)
	edges  []*edge
	conts  []*leafMap
}

// edge is a selector (pop, key) with its children by class.
type edge struct {
	pop       int
	st        step
	arr, dict *node
	// Record children: a short list compared linearly while there are few
	// labels; then symbol labels (nearly all of them) in a Go map, whose
	// string hashing is much cheaper than preserves.Hash, and any other
	// labels in a table.
	recs    []*node
	many    bool
	bySym   map[preserves.Symbol]*node
	byOther table[*node]
	// hot is the child bySym gave last, and hotSym its label: a stream
	// of messages mostly repeats its label, and comparing it costs less
	// than hashing it (issue 28). removeChild forgets it.
	hot    *node
	hotSym preserves.Symbol
}

const fewLabels = 4

func labelHash(n *node) uint64 { return preserves.Hash(n.cls.label) }

func (ed *edge) child(w preserves.Value) *node {
	switch x := preserves.Unwrap(w).(type) {
	case *preserves.Record:
		return ed.recChild(x.Label)
	case preserves.Sequence:
		return ed.arr
	case *preserves.Dictionary:
		return ed.dict
	}
	return nil
}

func (ed *edge) recChild(label preserves.Value) *node {
	if !ed.many {
		for _, n := range ed.recs {
			if preserves.Equal(n.cls.label, label) {
				return n
			}
		}
		return nil
	}
	label = preserves.Unwrap(label)
	if s, ok := label.(preserves.Symbol); ok {
		if ed.hot != nil && s == ed.hotSym {
			return ed.hot
		}
		n := ed.bySym[s]
		if n != nil {
			ed.hot, ed.hotSym = n, s
		}
		return n
	}
	n, _ := ed.byOther.get(preserves.Hash(label), func(n *node) bool { return preserves.Equal(n.cls.label, label) })
	return n
}

func (ed *edge) childOf(c class) *node {
	switch c.kind {
	case classArr:
		return ed.arr
	case classDict:
		return ed.dict
	}
	return ed.recChild(c.label)
}

func (ed *edge) addChild(n *node) {
	switch n.cls.kind {
	case classArr:
		ed.arr = n
	case classDict:
		ed.dict = n
	default:
		if !ed.many && len(ed.recs) < fewLabels {
			ed.recs = append(ed.recs, n)
			return
		}
		if !ed.many {
			ed.many = true
			ed.bySym = make(map[preserves.Symbol]*node)
			for _, m := range ed.recs {
				ed.addMany(m)
			}
			ed.recs = nil
		}
		ed.addMany(n)
	}
}

func (ed *edge) addMany(n *node) {
	if s, ok := preserves.Unwrap(n.cls.label).(preserves.Symbol); ok {
		ed.bySym[s] = n
		return
	}
	ed.byOther.add(labelHash(n), n, labelHash)
}

func (ed *edge) removeChild(n *node) {
	switch n.cls.kind {
	case classArr:
		ed.arr = nil
	case classDict:
		ed.dict = nil
	default:
		if !ed.many {
			ed.recs = without(ed.recs, n)
			return
		}
		if s, ok := preserves.Unwrap(n.cls.label).(preserves.Symbol); ok {
			delete(ed.bySym, s)
			if ed.hot == n {
				ed.hot, ed.hotSym = nil, ""
			}
			return
		}
		ed.byOther.del(labelHash(n), func(m *node) bool { return m == n }, labelHash)
	}
}

func (ed *edge) empty() bool {
	return ed.arr == nil && ed.dict == nil && len(ed.recs) == 0 && len(ed.bySym) == 0 && ed.byOther.len() == 0
}

// leafMap groups a node's observers by the positions they constrain
// (constant positions and positions that must exist), then by constants.
type leafMap struct {
	constPaths []path
	checkPaths []path
	users      int // observer registrations below this map
	// alias: no constants and no checks, so the one leaf's cache would
	// equal the node's; it uses the node's instead of keeping a copy.
	alias bool
	only  *leaf        // the leaf, when there are no constant positions
	byKey table[*leaf] // leaves by hash of their constant tuple
	// hot is the leaf byKey gave last (see edge.hot); removeLeaf
	// forgets it.
	hot *leaf
}

type leaf struct {
	key    []preserves.Value
	hash   uint64
	cached entrySet // unused when the leaf map is an alias
	eps    []*endpoints
}

// endpoints are the observers of one leaf capturing the same positions.
type endpoints struct {
	capPaths []path
	captures table[*capEntry]
	obs      []obsSlot
	byObs    map[Observer]int // index into obs, once there are many observers
}

type obsSlot struct {
	key  Observer
	refs int
}

// capEntry is one distinct capture tuple with the number of distinct values
// producing it and the handle under which each observer (by slot index)
// holds it. There is one per distinct tuple, so it is laid out for the
// common case (one captured value, one observer) in a single 64-byte
// allocation: a one-value tuple lives in one, the first observer's handle in
// h0, and only longer tuples and further observers use extra storage.
type capEntry struct {
	hash  uint64 // hashTuple of the tuple, kept so that rebuilding a table never touches the values
	count int
	h0    uint64              // handle of observer slot 0
	moreH *[]uint64           // handles of observer slots 1…
	one   [1]preserves.Value  // the tuple, when it has one value
	many  *preserves.Sequence // the tuple, otherwise
}

func newCapEntry(tuple []preserves.Value, h uint64, nobs int) *capEntry {
	ce := &capEntry{hash: h, count: 1}
	if nobs > 1 {
		more := make([]uint64, 0, nobs-1)
		ce.moreH = &more
	}
	if len(tuple) == 1 {
		ce.one[0] = tuple[0]
	} else {
		s := append(make(preserves.Sequence, 0, len(tuple)), tuple...)
		ce.many = &s
	}
	return ce
}

// tuple returns the capture tuple. It is immutable and may be handed to
// emitters, which may keep it.
func (ce *capEntry) tuple() preserves.Sequence {
	if ce.many != nil {
		return *ce.many
	}
	return ce.one[:]
}

func (ce *capEntry) handle(i int) uint64 {
	if i == 0 {
		return ce.h0
	}
	return (*ce.moreH)[i-1]
}

// addHandle records the handle of observer slot i, the next free slot.
func (ce *capEntry) addHandle(i int, h uint64) {
	if i == 0 {
		ce.h0 = h
		return
	}
	if ce.moreH == nil {
		ce.moreH = new([]uint64)
	}
	*ce.moreH = append(*ce.moreH, h)
}

// dropHandle moves the handle of the last slot into slot i and forgets the
// last slot, mirroring endpoints.removeObserver.
func (ce *capEntry) dropHandle(i, last int) {
	if last == 0 {
		ce.h0 = 0
		return
	}
	more := *ce.moreH
	if i == 0 {
		ce.h0 = more[last-1]
	} else {
		more[i-1] = more[last-1]
	}
	more = more[:last-1]
	if len(more) == 0 {
		ce.moreH = nil
		return
	}
	*ce.moreH = more
}

const fewObservers = 8

func (ep *endpoints) find(obs Observer) int {
	if ep.byObs != nil {
		if i, ok := ep.byObs[obs]; ok {
			return i
		}
		return -1
	}
	return slices.IndexFunc(ep.obs, func(s obsSlot) bool { return s.key == obs })
}

func (ep *endpoints) addObserver(obs Observer) {
	ep.obs = append(ep.obs, obsSlot{key: obs, refs: 1})
	if ep.byObs != nil {
		ep.byObs[obs] = len(ep.obs) - 1
	} else if len(ep.obs) > fewObservers {
		ep.byObs = make(map[Observer]int, 2*len(ep.obs))
		for i, s := range ep.obs {
			ep.byObs[s.key] = i
		}
	}
}

// removeObserver drops slot i by moving the last slot (and each tuple's
// last handle) into its place.
func (ep *endpoints) removeObserver(i int) {
	last := len(ep.obs) - 1
	gone := ep.obs[i].key
	ep.obs[i] = ep.obs[last]
	ep.obs[last] = obsSlot{}
	ep.obs = ep.obs[:last]
	ep.captures.each(func(ce *capEntry) { ce.dropHandle(i, last) })
	if ep.byObs != nil {
		delete(ep.byObs, gone)
		if i < last {
			ep.byObs[ep.obs[i].key] = i
		}
	}
}

func (n *node) leafMap(a *analysis) *leafMap {
	for _, lm := range n.conts {
		if pathsEqual(lm.constPaths, a.constPaths) && pathsEqual(lm.checkPaths, a.checkPaths) {
			return lm
		}
	}
	return nil
}

func (n *node) removeLeafMap(lm *leafMap) { n.conts = without(n.conts, lm) }

func (lm *leafMap) leafFor(key []preserves.Value, create bool) *leaf {
	if len(lm.constPaths) == 0 {
		if lm.only == nil && create {
			lm.only = &leaf{}
		}
		return lm.only
	}
	if lf := lm.hot; lf != nil && tupleEqual(lf.key, key) {
		return lf
	}
	h := hashTuple(key)
	lf, ok := lm.byKey.get(h, func(l *leaf) bool { return tupleEqual(l.key, key) })
	if !ok && create {
		lf = &leaf{key: append([]preserves.Value(nil), key...), hash: h}
		lm.byKey.add(h, lf, leafHash)
	}
	if lf != nil {
		lm.hot = lf
	}
	return lf
}

func (lm *leafMap) removeLeaf(lf *leaf) {
	if len(lm.constPaths) == 0 {
		lm.only = nil
		return
	}
	lm.byKey.del(lf.hash, func(l *leaf) bool { return l == lf }, leafHash)
	if lm.hot == lf {
		lm.hot = nil
	}
}

func leafHash(l *leaf) uint64 { return l.hash }

func capHash(ce *capEntry) uint64 { return ce.hash }

func (lf *leaf) endpointsFor(caps []path) *endpoints {
	for _, ep := range lf.eps {
		if pathsEqual(ep.capPaths, caps) {
			return ep
		}
	}
	return nil
}

func (lf *leaf) removeEndpoints(ep *endpoints) { lf.eps = without(lf.eps, ep) }

// without returns s less its element x, nil once it is empty (so an empty
// node or leaf holds no array).
func without[T comparable](s []T, x T) []T {
	if i := slices.Index(s, x); i >= 0 {
		s = slices.Delete(s, i, i+1)
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// eachCached calls fn for every entry reaching n.
func (ix *Index) eachCached(n *node, fn func(*entry)) {
	if n == ix.root {
		ix.all.each(fn)
		return
	}
	n.cached.each(fn)
}

func (ix *Index) cachedLen(n *node) int {
	if n == ix.root {
		return ix.all.len()
	}
	return n.cached.len()
}

func (ix *Index) leafLen(n *node, lm *leafMap, lf *leaf) int {
	if lm.alias {
		return ix.cachedLen(n)
	}
	return lf.cached.len()
}

// walk follows (create: extends) the trie along p's shape (§12.2) and
// returns the pop count for the next sibling and the final node; the node is
// nil when create is false and the shape is absent.
func (ix *Index) walk(n *node, at path, pop int, st step, p pattern.Pattern, create bool) (int, *node) {
	switch x := p.(type) {
	case pattern.Bind:
		return ix.walk(n, at, pop, st, x.Pattern, create)
	case pattern.Group:
		cls, _ := classOf(x.Type) // analyse has rejected invalid types
		var ed *edge
		for _, e := range n.edges {
			if e.pop == pop && e.st.equal(st) {
				ed = e
				break
			}
		}
		var child *node
		if ed != nil {
			child = ed.childOf(cls)
		}
		if child == nil {
			if !create {
				return 0, nil
			}
			if ed == nil {
				ed = &edge{pop: pop, st: st}
				n.edges = append(n.edges, ed)
			}
			child = &node{parent: n, in: ed, cls: cls}
			ix.fill(child, n, at)
			ed.addChild(child)
		}
		pc := 0
		for _, e := range x.Entries {
			k := mkStep(e.Key)
			pc, child = ix.walk(child, append(at[:len(at):len(at)], k), pc, k, e.Pattern, create)
			if child == nil {
				return 0, nil
			}
		}
		return pc + 1, child
	}
	return pop, n
}

// fill caches in a new node child of n (at path at) the entries passing
// its guard: below the root, those of n's cache; at the root, those of its
// class only (topClasses), not every value asserted.
func (ix *Index) fill(child, n *node, at path) {
	add := func(ent *entry) { child.cached.add(ent, entryHash(ent)) }
	if n == ix.root && len(at) == 0 {
		ix.top.each(child.cls, add)
		return
	}
	ix.eachCached(n, func(ent *entry) {
		if w, ok := project(ent.v, at); ok && child.cls.matches(w) {
			add(ent)
		}
	})
}

// prune unlinks n and then its ancestors while they hold no leaf maps and no
// children, so caches are kept only for shapes somebody observes.
func (ix *Index) prune(n *node) {
	for n != ix.root && len(n.conts) == 0 && len(n.edges) == 0 {
		parent, ed := n.parent, n.in
		ed.removeChild(n)
		if ed.empty() {
			parent.edges = without(parent.edges, ed)
		}
		n.parent, n.in = nil, nil
		n = parent
	}
}

// buildLeafMap creates n's leaf map for a's constrained positions, bucketing
// every cached entry by its constants (§12.5 AddObserver): the leaf map
// holds a leaf for every constant tuple present, not only the one asked for.
func (ix *Index) buildLeafMap(n *node, a *analysis) *leafMap {
	lm := &leafMap{constPaths: a.constPaths, checkPaths: a.checkPaths}
	lm.alias = len(lm.constPaths) == 0 && len(lm.checkPaths) == 0
	n.conts = append(n.conts, lm)
	if lm.alias {
		if ix.cachedLen(n) > 0 {
			lm.only = &leaf{}
		}
		return lm
	}
	ix.eachCached(n, func(ent *entry) {
		if !allExist(ent.v, lm.checkPaths) {
			return
		}
		key, ok := projectAll(ix.keyBuf[:0], ent.v, lm.constPaths)
		ix.keyBuf = key[:0]
		if !ok {
			return
		}
		lm.leafFor(key, true).cached.add(ent, entryHash(ent))
	})
	clear(ix.keyBuf[:cap(ix.keyBuf)])
	return lm
}

// buildEndpoints creates lf's endpoints for caps, counting the capture tuples
// of the leaf's cached entries.
func (ix *Index) buildEndpoints(n *node, lm *leafMap, lf *leaf, caps []path) *endpoints {
	ep := &endpoints{capPaths: caps}
	lf.eps = append(lf.eps, ep)
	add := func(ent *entry) {
		tuple, ok := projectAll(ix.capBuf[:0], ent.v, caps)
		ix.capBuf = tuple[:0]
		if !ok {
			return
		}
		h := hashTuple(tuple)
		if ce, ok := ep.captures.get(h, func(c *capEntry) bool { return tupleEqual(c.tuple(), tuple) }); ok {
			ce.count++
			return
		}
		ep.captures.add(h, newCapEntry(tuple, h, 0), capHash)
	}
	if lm.alias {
		ix.eachCached(n, add)
	} else {
		lf.cached.each(add)
	}
	clear(ix.capBuf[:cap(ix.capBuf)])
	return ep
}

type op uint8

const (
	opInsert op = iota
	opRemove
	opMessage
)

// traverse runs §12.4's walk for v. ent is v's entry and h its hash (nil and
// 0 for messages).
func (ix *Index) traverse(o op, v preserves.Value, ent *entry, h uint64, e Emitter) {
	ix.wrap[0] = v
	ix.stack = append(ix.stack[:0], ix.wrapVal)
	ix.visit(ix.root, 1, o, v, ent, h, e)
	// Drop references so the scratch space does not keep values alive.
	ix.wrap[0] = nil
	clear(ix.stack)
	clear(ix.keyBuf[:cap(ix.keyBuf)])
	clear(ix.capBuf[:cap(ix.capBuf)])
}

// visit handles n's continuation, then follows each edge whose guard the
// value satisfies. The live stack is ix.stack[:sp]; a child overwrites one
// slot and restores it afterwards, so siblings see the stack unchanged and
// no stack is ever copied.
func (ix *Index) visit(n *node, sp int, o op, v preserves.Value, ent *entry, h uint64, e Emitter) {
	if len(n.conts) > 0 || (n != ix.root && o != opMessage) {
		ix.continuation(n, o, v, ent, h, e)
	}
	for _, ed := range n.edges {
		base := sp - ed.pop
		w, ok := stepInto(ix.stack[base-1], ed.st)
		if !ok {
			continue
		}
		child := ed.child(w)
		if child == nil {
			continue
		}
		if base == len(ix.stack) {
			ix.stack = append(ix.stack, w)
			ix.visit(child, base+1, o, v, ent, h, e)
			continue
		}
		old := ix.stack[base]
		ix.stack[base] = w
		ix.visit(child, base+1, o, v, ent, h, e)
		ix.stack[base] = old
	}
}

func (ix *Index) continuation(n *node, o op, v preserves.Value, ent *entry, h uint64, e Emitter) {
	// The operation is switched on here rather than in an entrySet
	// method: this is the per-assertion path, and the call did not
	// inline (BenchmarkInsertRemove, BenchmarkSend1Observer +3-6%).
	if n != ix.root {
		switch o {
		case opInsert:
			n.cached.add(ent, h)
		case opRemove:
			n.cached.remove(ent, h)
		}
	}
	for _, lm := range n.conts {
		if !allExist(v, lm.checkPaths) {
			continue
		}
		var lf *leaf
		if len(lm.constPaths) == 0 {
			lf = lm.only
			if lf == nil && o == opInsert {
				lf = &leaf{}
				lm.only = lf
			}
		} else {
			key, ok := projectAll(ix.keyBuf[:0], v, lm.constPaths)
			ix.keyBuf = key[:0]
			if !ok {
				continue
			}
			lf = lm.leafFor(key, o == opInsert)
		}
		if lf == nil {
			continue
		}
		if !lm.alias {
			switch o {
			case opInsert:
				lf.cached.add(ent, h)
			case opRemove:
				lf.cached.remove(ent, h)
			}
		}
		for _, ep := range lf.eps {
			ix.endpoint(ep, o, v, e)
		}
		if o == opRemove && len(lf.eps) == 0 && ix.leafLen(n, lm, lf) == 0 {
			lm.removeLeaf(lf)
		}
	}
}

func (ix *Index) endpoint(ep *endpoints, o op, v preserves.Value, e Emitter) {
	tuple, ok := projectAll(ix.capBuf[:0], v, ep.capPaths)
	ix.capBuf = tuple[:0]
	if !ok {
		return
	}
	if o == opMessage {
		msg := ix.caps.Make(tuple)
		for i := range ep.obs {
			e.SendTo(ep.obs[i].key, msg)
		}
		return
	}
	h := hashTuple(tuple)
	ce, found := ep.captures.get(h, func(c *capEntry) bool { return tupleEqual(c.tuple(), tuple) })
	switch o {
	case opInsert:
		if found {
			ce.count++
			return
		}
		ce = newCapEntry(tuple, h, len(ep.obs))
		ep.captures.add(h, ce, capHash)
		for i := range ep.obs {
			hd, ok := e.AssertTo(ep.obs[i].key, ce.tuple())
			if !ok {
				hd = noHandle
			}
			ce.addHandle(i, hd)
		}
	case opRemove:
		if !found {
			return
		}
		if ce.count--; ce.count > 0 {
			return
		}
		ep.captures.del(h, func(c *capEntry) bool { return c == ce }, capHash)
		for i := range ep.obs {
			if hd := ce.handle(i); hd != noHandle {
				e.RetractFrom(ep.obs[i].key, hd)
			}
		}
	}
}
