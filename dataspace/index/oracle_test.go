package index

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

var oracleLong = flag.Bool("oracle.long", false, "run many more random operation sequences in TestOracle")

// The oracle test runs random operation sequences against the Index and
// against model, a naive implementation of the observable contract of
// runtime spec §10 (scan every registration, match with pattern.Match, keep
// a counted bag of tuples per registration). After every operation each
// observer's events must be the same multiset; at the end the tuples each
// observer holds must agree, and tearing everything down must retract every
// tuple and leave the trie empty.
func TestOracle(t *testing.T) {
	runs, ops := 400, 250
	if *oracleLong {
		runs, ops = 20000, 600
	}
	if testing.Short() {
		runs = 50
	} else if raceDetector && !*oracleLong {
		runs = 100
	}
	total := 0
	for run := 0; run < runs; run++ {
		total += oracleRun(t, uint64(run), ops)
		if t.Failed() {
			t.Fatalf("oracle run %d failed (seed %d)", run, run)
		}
	}
	t.Logf("%d runs, %d operations, events compared: %d asserts, %d retracts, %d messages",
		runs, total, oracleStats['+'], oracleStats['-'], oracleStats['!'])
}

var oracleStats = map[byte]int{}

type model struct {
	vals   map[string]*mval
	regs   []*mreg
	reject func(obs Observer, tuple preserves.Sequence) bool
	events []string
}

type mval struct {
	v     preserves.Value
	count int
}

type mreg struct {
	p    pattern.Pattern
	obs  int
	refs int
	bag  map[string]int // tuple text → number of distinct values producing it
	tup  map[string]preserves.Sequence
}

func (m *model) emit(obs int, kind byte, tuple preserves.Sequence) {
	if kind != '!' && m.reject(obs, tuple) {
		return
	}
	m.events = append(m.events, event{obs, kind, text(tuple)}.String())
}

func (m *model) take() []string {
	out := m.events
	m.events = nil
	sort.Strings(out)
	return out
}

func (m *model) insert(v preserves.Value) bool {
	k := text(v)
	if mv := m.vals[k]; mv != nil {
		mv.count++
		return false
	}
	m.vals[k] = &mval{v: v, count: 1}
	for _, r := range m.regs {
		if caps, ok := pattern.Match(r.p, v); ok {
			tk := text(preserves.Sequence(caps))
			if r.bag[tk]++; r.bag[tk] == 1 {
				r.tup[tk] = caps
				m.emit(r.obs, '+', caps)
			}
		}
	}
	return true
}

func (m *model) remove(v preserves.Value) bool {
	k := text(v)
	mv := m.vals[k]
	if mv == nil {
		return false
	}
	if mv.count--; mv.count > 0 {
		return false
	}
	delete(m.vals, k)
	for _, r := range m.regs {
		if caps, ok := pattern.Match(r.p, v); ok {
			tk := text(preserves.Sequence(caps))
			if r.bag[tk]--; r.bag[tk] == 0 {
				delete(r.bag, tk)
				delete(r.tup, tk)
				m.emit(r.obs, '-', caps)
			}
		}
	}
	return true
}

func (m *model) send(v preserves.Value) {
	for _, r := range m.regs {
		if caps, ok := pattern.Match(r.p, v); ok {
			m.emit(r.obs, '!', caps)
		}
	}
}

func (m *model) find(p pattern.Pattern, obs int) int {
	return slices.IndexFunc(m.regs, func(r *mreg) bool { return r.obs == obs && pattern.Equal(r.p, p) })
}

func (m *model) observe(p pattern.Pattern, obs int) {
	if i := m.find(p, obs); i >= 0 {
		m.regs[i].refs++
		return
	}
	r := &mreg{p: p, obs: obs, refs: 1, bag: map[string]int{}, tup: map[string]preserves.Sequence{}}
	m.regs = append(m.regs, r)
	for _, mv := range m.vals {
		if caps, ok := pattern.Match(p, mv.v); ok {
			tk := text(preserves.Sequence(caps))
			if r.bag[tk]++; r.bag[tk] == 1 {
				r.tup[tk] = caps
				m.emit(obs, '+', caps)
			}
		}
	}
}

func (m *model) unobserve(p pattern.Pattern, obs int) {
	i := m.find(p, obs)
	if i < 0 {
		return
	}
	r := m.regs[i]
	if r.refs--; r.refs > 0 {
		return
	}
	m.regs = slices.Delete(m.regs, i, i+1)
	for _, caps := range r.tup {
		m.emit(obs, '-', caps)
	}
}

func (m *model) holdings() []string {
	var out []string
	for _, r := range m.regs {
		for _, caps := range r.tup {
			if !m.reject(r.obs, caps) {
				out = append(out, fmt.Sprintf("%v%s", r.obs, text(caps)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// gen draws values and patterns from a small universe so that random
// patterns often match random values, at several depths.
type gen struct {
	r      *rand.Rand
	labels []preserves.Value
}

var (
	// Runs use the first two labels, or all of them so that trie edges
	// switch to their by-hash table of record labels.
	genLabels = []preserves.Value{preserves.Symbol("foo"), preserves.Symbol("bar"), preserves.Symbol("l3"),
		preserves.Symbol("l4"), preserves.Symbol("l5"), preserves.Symbol("l6"), preserves.String("foo")}
	genKeys = []preserves.Value{preserves.Symbol("a"), preserves.Symbol("b"), preserves.Int(0), preserves.String("a")}
)

func (g gen) atom() preserves.Value {
	switch g.r.IntN(8) {
	case 0, 1, 2:
		return preserves.Int(g.r.IntN(3))
	case 3:
		return preserves.Symbol([]string{"a", "b"}[g.r.IntN(2)])
	case 4:
		return preserves.String("a")
	case 5:
		return preserves.Bool(g.r.IntN(2) == 0)
	case 6:
		return preserves.NewDouble(1.5)
	default:
		return preserves.NewEmbedded(preserves.Int(g.r.IntN(2)))
	}
}

func (g gen) value(depth int) preserves.Value {
	if depth >= 3 || g.r.IntN(3) == 0 {
		return g.atom()
	}
	n := g.r.IntN(4)
	switch g.r.IntN(9) {
	case 0, 1, 2, 3:
		fs := make([]preserves.Value, n)
		for i := range fs {
			fs[i] = g.value(depth + 1)
		}
		return preserves.NewRecord(g.labels[g.r.IntN(len(g.labels))], fs...)
	case 4, 5:
		s := make(preserves.Sequence, n)
		for i := range s {
			s[i] = g.value(depth + 1)
		}
		return s
	case 6, 7:
		es := make([]preserves.DictEntry, n)
		for i := range es {
			es[i] = preserves.DictEntry{Key: genKeys[g.r.IntN(len(genKeys))], Value: g.value(depth + 1)}
		}
		return preserves.NewDictionary(es...)
	default:
		es := make([]preserves.Value, n)
		for i := range es {
			es[i] = g.atom()
		}
		return preserves.NewSet(es...)
	}
}

func (g gen) pattern(depth int) pattern.Pattern {
	k := g.r.IntN(10)
	if depth >= 3 {
		k %= 4
	}
	switch k {
	case 0:
		return pattern.Discard{}
	case 1:
		return pattern.Capture()
	case 2:
		return pattern.Lit{Value: g.atom()}
	case 3:
		return pattern.Bind{Pattern: g.pattern(depth + 1)}
	}
	var t pattern.GroupType
	var keys []preserves.Value
	switch g.r.IntN(3) {
	case 0:
		t = pattern.RecType{Label: g.labels[g.r.IntN(len(g.labels))]}
		keys = []preserves.Value{preserves.Int(0), preserves.Int(1), preserves.Int(2)}
	case 1:
		t = pattern.ArrType{}
		keys = []preserves.Value{preserves.Int(0), preserves.Int(1), preserves.Int(2)}
	default:
		t = pattern.DictType{}
		keys = genKeys
	}
	if g.r.IntN(20) == 0 {
		keys = append(keys, preserves.Int(-1), preserves.Symbol("x"))
	}
	var es []pattern.Entry
	for _, key := range keys {
		if g.r.IntN(2) == 0 {
			es = append(es, pattern.Entry{Key: key, Pattern: g.pattern(depth + 1)})
		}
	}
	return pattern.NewGroup(t, es...)
}

func oracleRun(t *testing.T, seed uint64, nops int) int {
	g := gen{r: rand.New(rand.NewPCG(seed, 0x5eed)), labels: genLabels[:2]}
	nobs := 5
	switch seed % 4 {
	case 2:
		// Many labels: trie edges switch to their label hash table.
		g.labels = genLabels
	case 3:
		// Many observers per pattern: endpoints index their observers.
		nobs = 14
	}
	rejectSalt := g.r.Uint64()
	reject := func(obs Observer, tuple preserves.Sequence) bool {
		// Observers 3 and 4 play attenuated caps rejecting some tuples.
		o := obs.(int)
		return o >= 3 && (preserves.Hash(tuple)^rejectSalt)%3 == 0
	}
	ix, rec := New(), newRecorder(t)
	rec.reject = reject
	m := &model{vals: map[string]*mval{}, reject: reject}

	vals, pats := g.workload(seed)
	var regs []oracleReg // live registrations (with repeats for refcounts)
	var live []preserves.Value
	check := func(what string) {
		got, want := rec.take(), m.take()
		for _, e := range got {
			oracleStats[e[strings.IndexAny(e, "+-!")]]++
		}
		if !slices.Equal(got, want) {
			t.Errorf("seed %d: %s:\n index: %v\n model: %v", seed, what, got, want)
		}
	}
	for op := 0; op < nops && !t.Failed(); op++ {
		switch k := g.r.IntN(20); {
		case k < 7:
			v := vals[g.r.IntN(len(vals))]
			if g.r.IntN(10) == 0 {
				v = preserves.Annotate(v, preserves.String("ann"))
			}
			a, b := ix.Insert(v, rec), m.insert(v)
			if a != b {
				t.Errorf("seed %d: Insert(%s) = %v, model %v", seed, text(v), a, b)
			}
			live = append(live, v)
			check("insert " + text(v))
		case k < 12 && len(live) > 0:
			i := g.r.IntN(len(live))
			v := live[i]
			live = slices.Delete(live, i, i+1)
			a, b := ix.Remove(v, rec), m.remove(v)
			if a != b {
				t.Errorf("seed %d: Remove(%s) = %v, model %v", seed, text(v), a, b)
			}
			check("remove " + text(v))
		case k < 14:
			v := vals[g.r.IntN(len(vals))]
			if g.r.IntN(3) == 0 {
				v = g.value(0)
			}
			ix.Send(v, rec)
			m.send(v)
			check("send " + text(v))
		case k < 17:
			r := oracleReg{g.r.IntN(len(pats)), g.r.IntN(nobs)}
			regs = append(regs, r)
			ix.AddObserver(pats[r.p], r.obs, rec)
			m.observe(pats[r.p], r.obs)
			check(fmt.Sprintf("observe %d %s", r.obs, text(pattern.ToValue(pats[r.p]))))
		case len(regs) > 0:
			i := g.r.IntN(len(regs))
			r := regs[i]
			regs = slices.Delete(regs, i, i+1)
			ix.RemoveObserver(pats[r.p], r.obs, rec)
			m.unobserve(pats[r.p], r.obs)
			check(fmt.Sprintf("unobserve %d %s", r.obs, text(pattern.ToValue(pats[r.p]))))
		}
		for _, v := range live[:min(len(live), 3)] {
			if a, b := ix.Count(v), m.vals[text(v)].count; a != b {
				t.Errorf("seed %d: Count(%s) = %d, model %d", seed, text(v), a, b)
			}
		}
		if ix.Len() != len(m.vals) {
			t.Errorf("seed %d: Len = %d, model %d", seed, ix.Len(), len(m.vals))
		}
		if op%25 == 0 {
			checkInvariants(t, ix)
		}
	}
	checkInvariants(t, ix)
	if a, b := rec.holdings(), m.holdings(); !slices.Equal(a, b) {
		t.Errorf("seed %d: final holdings differ:\n index: %v\n model: %v", seed, a, b)
	}
	oracleTeardown(t, seed, ix, rec, m, pats, regs, live, check)
	return nops
}

// oracleReg is a live observer registration of oracleRun: pattern p
// for observer obs.
type oracleReg struct {
	p   int
	obs int
}

// workload draws oracleRun's values and patterns (how many patterns
// depends on the seed's class).
func (g *gen) workload(seed uint64) ([]preserves.Value, []pattern.Pattern) {
	vals := make([]preserves.Value, 10+g.r.IntN(30))
	for i := range vals {
		vals[i] = g.value(0)
	}
	npats := 4 + g.r.IntN(12)
	switch seed % 4 {
	case 2:
		npats = 16 + g.r.IntN(10)
	case 3:
		npats = 2 + g.r.IntN(3)
	}
	pats := make([]pattern.Pattern, npats)
	for i := range pats {
		pats[i] = g.pattern(0)
	}
	return vals, pats
}

// oracleTeardown removes the observers (checking each step with check),
// then the values, and checks that nothing is left.
func oracleTeardown(t *testing.T, seed uint64, ix *Index, rec *recorder, m *model, pats []pattern.Pattern, regs []oracleReg, live []preserves.Value, check func(string)) {
	// Tear down: observers first, then values.
	for len(regs) > 0 {
		r := regs[len(regs)-1]
		regs = regs[:len(regs)-1]
		ix.RemoveObserver(pats[r.p], r.obs, rec)
		m.unobserve(pats[r.p], r.obs)
		check("teardown unobserve")
	}
	if len(rec.live) != 0 {
		t.Errorf("seed %d: %d tuples still held after every observer left", seed, len(rec.live))
	}
	if len(ix.root.edges) != 0 || len(ix.root.conts) != 0 {
		t.Errorf("seed %d: trie not empty after every observer left", seed)
	}
	for _, v := range live {
		ix.Remove(v, rec)
	}
	if ix.Len() != 0 {
		t.Errorf("seed %d: Len = %d after removing everything", seed, ix.Len())
	}
}

// checkInvariants recomputes the caches of §12.3 from the bag of assertions
// and compares them with what the index maintained incrementally.
func checkInvariants(t *testing.T, ix *Index) {
	t.Helper()
	var all []*entry
	ix.all.each(func(e *entry) {
		all = append(all, e)
		if e.hash != preserves.Hash(e.v) || e.count <= 0 {
			t.Fatalf("entry %s: stale hash or count %d", text(e.v), e.count)
		}
	})
	if len(all) != ix.all.len() {
		t.Fatalf("bag length %d, but %d entries", ix.all.len(), len(all))
	}
	// reach[n] = entries whose traversal visits n.
	reach := map[*node]map[*entry]bool{}
	for _, e := range all {
		ix.wrap[0] = e.v
		var walk func(n *node, stack []preserves.Value)
		walk = func(n *node, stack []preserves.Value) {
			if reach[n] == nil {
				reach[n] = map[*entry]bool{}
			}
			reach[n][e] = true
			for _, ed := range n.edges {
				s := stack[:len(stack)-ed.pop]
				w, ok := stepInto(s[len(s)-1], ed.st)
				if !ok {
					continue
				}
				if c := ed.child(w); c != nil {
					if !c.cls.matches(w) {
						t.Fatalf("edge child class does not match its value")
					}
					walk(c, append(s[:len(s):len(s)], w))
				}
			}
		}
		walk(ix.root, []preserves.Value{ix.wrapVal})
		ix.wrap[0] = nil
	}
	var visit func(n *node)
	visit = func(n *node) {
		if n != ix.root {
			if n.cached.len() != len(reach[n]) {
				t.Fatalf("node cache holds %d entries, %d reach it", n.cached.len(), len(reach[n]))
			}
			n.cached.each(func(e *entry) {
				if !reach[n][e] {
					t.Fatalf("node cache holds %s, which does not reach it", text(e.v))
				}
			})
		}
		if n != ix.root && len(n.conts) == 0 && len(n.edges) == 0 {
			t.Fatalf("unpruned empty node")
		}
		for _, lm := range n.conts {
			checkLeafMap(t, ix, n, lm, reach[n])
		}
		for _, ed := range n.edges {
			if ed.empty() {
				t.Fatalf("empty edge left in the trie")
			}
			for _, c := range ed.children() {
				if c.parent != n || c.in != ed {
					t.Fatalf("bad parent link")
				}
				visit(c)
			}
		}
	}
	visit(ix.root)
}

func checkLeafMap(t *testing.T, ix *Index, n *node, lm *leafMap, reach map[*entry]bool) {
	t.Helper()
	if lm.users <= 0 {
		t.Fatalf("leaf map without users")
	}
	// Expected leaves: every constant tuple among reaching entries.
	want := map[string]map[*entry]bool{}
	for e := range reach {
		if !allExist(e.v, lm.checkPaths) {
			continue
		}
		key, ok := projectAll(nil, e.v, lm.constPaths)
		if !ok {
			continue
		}
		k := text(preserves.Sequence(key))
		if want[k] == nil {
			want[k] = map[*entry]bool{}
		}
		want[k][e] = true
	}
	var leaves []*leaf
	if len(lm.constPaths) == 0 {
		if lm.only != nil {
			leaves = append(leaves, lm.only)
		}
	} else {
		lm.byKey.each(func(l *leaf) { leaves = append(leaves, l) })
	}
	users := 0
	seen := map[string]bool{}
	for _, lf := range leaves {
		k := text(preserves.Sequence(lf.key))
		if len(lm.constPaths) == 0 {
			k = "[]"
		}
		seen[k] = true
		if len(want[k]) == 0 && len(lf.eps) == 0 {
			t.Fatalf("empty leaf %s kept", k)
		}
		if !lm.alias {
			if lf.cached.len() != len(want[k]) {
				t.Fatalf("leaf %s caches %d entries, want %d", k, lf.cached.len(), len(want[k]))
			}
			lf.cached.each(func(e *entry) {
				if !want[k][e] {
					t.Fatalf("leaf %s caches %s", k, text(e.v))
				}
			})
		}
		for _, ep := range lf.eps {
			if len(ep.obs) == 0 {
				t.Fatalf("endpoints without observers")
			}
			users += len(ep.obs)
			bag := map[string]int{}
			for e := range want[k] {
				if caps, ok := projectAll(nil, e.v, ep.capPaths); ok {
					bag[text(preserves.Sequence(caps))]++
				}
			}
			if ep.captures.len() != len(bag) {
				t.Fatalf("endpoints hold %d tuples, want %d", ep.captures.len(), len(bag))
			}
			ep.captures.each(func(ce *capEntry) {
				tk := text(ce.tuple())
				if bag[tk] != ce.count {
					t.Fatalf("tuple %s counted %d, want %d", tk, ce.count, bag[tk])
				}
				if ce.hash != hashTuple(ce.tuple()) {
					t.Fatalf("tuple %s has a stale hash", tk)
				}
				more := 0
				if ce.moreH != nil {
					more = len(*ce.moreH)
				}
				if len(ep.obs) != more+1 {
					t.Fatalf("tuple %s has handles for %d observers, want %d", tk, more+1, len(ep.obs))
				}
			})
			if ep.byObs != nil {
				for o, i := range ep.byObs {
					if ep.obs[i].key != o {
						t.Fatalf("observer index out of step")
					}
				}
			}
		}
	}
	for k, es := range want {
		if len(es) > 0 && !seen[k] {
			t.Fatalf("no leaf for constants %s", k)
		}
	}
	if users != lm.users {
		t.Fatalf("leaf map counts %d users, has %d", lm.users, users)
	}
}

// children lists every child node (for the pruning checks).
func (ed *edge) children() []*node {
	var out []*node
	for _, n := range []*node{ed.arr, ed.dict} {
		if n != nil {
			out = append(out, n)
		}
	}
	out = append(out, ed.recs...)
	for _, n := range ed.bySym {
		out = append(out, n)
	}
	ed.byOther.each(func(n *node) { out = append(out, n) })
	return out
}
