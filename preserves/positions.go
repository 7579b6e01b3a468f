package preserves

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Source positions of plain values: the side table.
//
// A value read with TextOptions.Positions comes back wrapped in *Annotated
// at every depth. That suits a reader of source text (the script parser
// walks it once), but not values that travel: every consumer would have to
// look through wrappers, and one that forgot would reject a string as "not
// a string". So values leave the script language plain, and where they came
// from is kept here, beside them, for error messages only.
//
// Compound values are immutable and shared, so a compound's identity names
// the place it was written: the table is keyed by the address of a *Record,
// *Dictionary or *Set, or of the first element of a non-empty Sequence.
// Atoms have no identity; an atom's place is the item position its parent
// compound remembers (ItemPos). Each entry holds a weak pointer to its
// compound, so the table never keeps a value alive; entries of collected
// compounds are swept after garbage collections while the table changes,
// and whenever it has doubled, so it never grows without bound (a cleanup
// per entry would do the same at twice the cost per remembered value). An
// address reused by a new value is told apart by the weak pointer, which
// no longer resolves to the old one.
//
// Values remembered through an Owner (a compiled program's constants) are
// not in that map: their Owned keeps them in a packed table of its own,
// sorted by address, about 50 bytes for a config file's fact `<x N>` where
// the map took 125 (issue 28). That table holds its values (no address it
// knows can be reused while it lives) and goes with the Owned. A lookup
// tries the map, then each live Owned's table (a binary search).
//
// Writes happen when a script is compiled and when it builds values; reads
// only on error paths. A mutex is enough; and while nothing has ever been
// remembered (no program compiled with positions), lookups are one atomic
// load.

type posEntry struct {
	ref weak.Pointer[byte] // the value's own
	pos []packedPos        // the value's, then its items'
}

// packedPos is a Pos in 16 bytes rather than 40, its file named by its
// number in the table's list of file names: a config file of 300,000
// small facts keeps two positions for each (issue 28). Offsets, lines and
// columns beyond 2^32-1 are kept as that (no script is that long).
type packedPos struct{ file, off, line, col uint32 }

// pack and unpack convert positions; the table's lock is held.
func pack(p Pos) packedPos {
	id, ok := positions.fileIDs[p.File]
	if !ok {
		if positions.fileIDs == nil {
			positions.fileIDs = map[string]uint32{"": 0}
			positions.files = []string{""}
			id, ok = positions.fileIDs[p.File]
		}
		if !ok {
			id = uint32(len(positions.files))
			positions.fileIDs[p.File] = id
			positions.files = append(positions.files, p.File)
		}
	}
	u32 := func(n int) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }
	return packedPos{file: id, off: u32(p.Offset), line: u32(p.Line), col: u32(p.Col)}
}

func (p packedPos) unpack() Pos {
	return Pos{File: positions.files[p.file], Offset: int(p.off), Line: int(p.line), Col: int(p.col)}
}

func packAll(at Pos, items []Pos) []packedPos {
	ps := make([]packedPos, 1+len(items))
	ps[0] = pack(at)
	for i, p := range items {
		ps[1+i] = pack(p)
	}
	return ps
}

// live reports whether e still describes the value at address p.
func (e *posEntry) live(p unsafe.Pointer) bool { return e.ref.Value() == (*byte)(p) }

// An Owner remembers the positions of a program's constants in the table
// of its Owned, which the program keeps: packed, without a weak pointer
// per value (the bulk of Remember's cost), and gone with the Owned. The
// zero Owner is no owner: each value on its own weak pointer.
type Owner struct{ tab *ownedTab }

// Owned holds the positions remembered through its Owner: they are known
// while it lives, and the memory they take goes with it, in the same
// collection (issue 28: a removed config file's positions).
type Owned struct{ tab ownedTab }

// NewOwned returns an Owned. Its table holds the values remembered
// through its Owner (Owner.NewSetAt and NewDictionaryAt forget, and let
// go of, the duplicates they drop).
//
// When it is collected its table goes in the same collection, and the
// list of tables is swept at once (the map's sweeps wait for changes, and
// a removed config file of 300,000 facts changes nothing after it).
func NewOwned() *Owned {
	o := &Owned{}
	runtime.AddCleanup(o, func(struct{}) { ownerGone() }, struct{}{})
	o.tab.sorted = true
	positions.mu.Lock()
	positions.tabs = append(positions.tabs, weak.Make(o))
	positions.mu.Unlock()
	return o
}

// Owner returns the Owner that remembers positions for o.
func (o *Owned) Owner() Owner { return Owner{tab: &o.tab} }

// ownedTab holds what an Owner remembered, packed: 16 bytes a value and 12
// a position, all in one file, where a map entry, its posEntry and its
// 16-byte positions took about 125 bytes for a config file's fact `<x N>`
// (issue 28). Keys are appended as values are remembered, and sorted by
// address (Owner.Compact, or the first lookup after a change); the last
// of equal addresses wins, and a dropped key makes its value forgotten.
// A value with a position in another file goes to the map as before.
type ownedTab struct {
	file   string // of every valid position in pos
	named  bool   // file is set
	keys   []ownedKey
	pos    []ownedPos
	sorted bool
}

// An ownedKey holds its value's identity as a pointer, so the table
// keeps each value it describes alive: no address it knows can be taken
// by another value while it lives. (The collector does not move objects,
// so the addresses it is sorted by stay put.)
type ownedKey struct {
	ref      unsafe.Pointer // identityOf the value
	start, n uint32         // the value's positions are pos[start:start+n]
}

func (k ownedKey) addr() uintptr { return uintptr(k.ref) }

// ownedPos is a Pos of the table's file; the zero ownedPos is the zero Pos.
type ownedPos struct{ off, line, col uint32 }

// droppedKey is the n of a key that forgets its value (Owner.drop).
const droppedKey = math.MaxUint32

// fits reports whether at and items can be packed into t: each is the zero
// Pos or a valid one of t's file (the first valid position names it).
func (t *ownedTab) fits(at Pos, items []Pos) bool {
	ok := func(p Pos) bool {
		if p == (Pos{}) {
			return true
		}
		if !p.IsValid() {
			return false
		}
		if !t.named {
			t.file, t.named = p.File, true
		}
		return p.File == t.file
	}
	if !ok(at) {
		return false
	}
	for _, p := range items {
		if !ok(p) {
			return false
		}
	}
	return true
}

func (t *ownedTab) add(ref unsafe.Pointer, at Pos, items []Pos) {
	u32 := func(n int) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }
	pk := func(p Pos) ownedPos { return ownedPos{off: u32(p.Offset), line: u32(p.Line), col: u32(p.Col)} }
	start := len(t.pos)
	t.pos = append(t.pos, pk(at))
	for _, p := range items {
		t.pos = append(t.pos, pk(p))
	}
	t.keys = append(t.keys, ownedKey{ref: ref, start: uint32(start), n: uint32(1 + len(items))})
	t.sorted = false
}

func (t *ownedTab) unpack(p ownedPos) Pos {
	if p == (ownedPos{}) {
		return Pos{}
	}
	return Pos{File: t.file, Offset: int(p.off), Line: int(p.line), Col: int(p.col)}
}

// sort sorts t's keys by address, keeping the last of equal ones and
// dropping the forgotten; with trim, it also gives back spare capacity.
func (t *ownedTab) sort(trim bool) {
	if !t.sorted {
		slices.SortStableFunc(t.keys, func(a, b ownedKey) int { return cmp.Compare(a.addr(), b.addr()) })
		out := t.keys[:0]
		for i, k := range t.keys {
			if (i+1 < len(t.keys) && t.keys[i+1].ref == k.ref) || k.n == droppedKey {
				continue
			}
			out = append(out, k)
		}
		clear(t.keys[len(out):])
		positions.owned -= len(t.keys) - len(out)
		t.keys, t.sorted = out, true
	}
	if trim {
		t.keys = slices.Clone(t.keys)
		t.pos = slices.Clone(t.pos)
	}
}

// find returns the positions of the value at addr, if t knows it.
func (t *ownedTab) find(addr uintptr) ([]ownedPos, bool) {
	t.sort(false)
	i, ok := slices.BinarySearchFunc(t.keys, addr, func(k ownedKey, a uintptr) int { return cmp.Compare(k.addr(), a) })
	if !ok {
		return nil, false
	}
	k := t.keys[i]
	return t.pos[k.start : k.start+k.n], true
}

// Compact packs what o remembered into as little memory as it can: call it
// once done remembering (a compiler, at the end of a program). Remembering
// more afterwards still works.
func (o Owner) Compact() {
	if o.tab == nil {
		return
	}
	positions.mu.Lock()
	defer positions.mu.Unlock()
	o.tab.sort(true)
	positions.n.Store(int64(len(positions.m) + positions.owned))
}

// ownerGone sweeps the table after an Owned was collected.
func ownerGone() {
	positions.mu.Lock()
	defer positions.mu.Unlock()
	sweepLocked()
}

var positions struct {
	mu sync.Mutex
	m  map[uintptr]*posEntry
	n  atomic.Int64 // len(m) + owned, for the lock-free test in lookup
	// tabs are the Owneds (until swept after they went), owned the keys
	// their tables hold.
	tabs  []weak.Pointer[Owned]
	owned int
	sweep int // len(m) that triggers the next sweep
	// files lists the file names of packed positions, fileIDs numbers
	// them; both only grow (one entry per script file ever compiled).
	files   []string
	fileIDs map[string]uint32
	peak    int  // len(m) at most since m was last rebuilt
	armed   bool // a GC sentinel is waiting (armSweep)
	added   int  // entries added since the last sweep
	dying   bool // the last sweep dropped entries: values are being collected
}

// sweepMin is the table size below which dead entries are not worth a
// sweep of their own.
const sweepMin = 1024

// identityOf is the address that names compound v, nil for atoms, wrappers
// and empty sequences (which have nothing to name).
func identityOf(v Value) unsafe.Pointer {
	switch x := v.(type) {
	case *Record:
		return unsafe.Pointer(x)
	case Sequence:
		if len(x) > 0 {
			return unsafe.Pointer(unsafe.SliceData(x))
		}
	case *Dictionary:
		return unsafe.Pointer(x)
	case *Set:
		return unsafe.Pointer(x)
	}
	return nil
}

// Remember records that compound v was written at `at` and that its items
// were written at items: a record's label then its fields, a sequence's or
// set's elements, a dictionary's key and value of each entry, all in the
// value's own order (Entries, Elems). items may be nil or shorter than the
// value. Atoms, *Annotated and empty sequences are ignored. Remembering a compound again replaces what was known.
func Remember(v Value, at Pos, items []Pos) { Owner{}.Remember(v, at, items) }

// Remember is Remember for a value owned by o.
func (o Owner) Remember(v Value, at Pos, items []Pos) {
	p := identityOf(v)
	if p == nil || (!at.IsValid() && len(items) == 0) {
		return
	}
	key := uintptr(p)
	positions.mu.Lock()
	defer positions.mu.Unlock()
	if o.tab != nil && o.tab.fits(at, items) {
		// An entry in the map is older (or dead): the table's wins.
		delete(positions.m, key)
		o.tab.add(p, at, items)
		positions.owned++
		positions.n.Store(int64(len(positions.m) + positions.owned))
		return
	}
	if e := positions.m[key]; e != nil && e.live(p) {
		e.pos = packAll(at, items)
		return
	}
	if positions.m == nil {
		positions.m = make(map[uintptr]*posEntry)
	}
	// A dead entry at this address is replaced: the weak pointer tells
	// the new value from the collected one.
	// Unowned, or with a position the Owned's table cannot hold: the
	// value's own weak pointer.
	e := &posEntry{ref: weak.Make((*byte)(p)), pos: packAll(at, items)}
	positions.m[key] = e
	positions.added++
	positions.n.Store(int64(len(positions.m) + positions.owned))
	if len(positions.m) >= max(positions.sweep, sweepMin) {
		sweepLocked()
	}
	if !positions.armed {
		positions.armed = true
		armSweep()
	}
}

// sweepLocked drops the entries of collected values. Remember calls it
// when the table has doubled since the last sweep, so the table stays
// within twice the values it describes (plus sweepMin) and the sweeps
// cost O(1) amortised per entry.
func sweepLocked() {
	before := len(positions.m)
	positions.dying = false
	for k, e := range positions.m {
		if e.ref.Value() == nil {
			delete(positions.m, k)
			positions.dying = true
		}
	}
	tabs := positions.tabs[:0]
	for _, w := range positions.tabs {
		if w.Value() != nil {
			tabs = append(tabs, w)
		}
	}
	clear(positions.tabs[len(tabs):])
	positions.tabs = tabs
	positions.owned = 0
	for _, w := range positions.tabs {
		if o := w.Value(); o != nil {
			positions.owned += len(o.tab.keys)
		}
	}
	// A Go map keeps the room it grew to: rebuild it once it is down to
	// a quarter of its peak.
	positions.peak = max(positions.peak, before)
	if n := len(positions.m); positions.peak >= sweepMin && n <= positions.peak/4 {
		m := make(map[uintptr]*posEntry, n)
		for k, e := range positions.m {
			m[k] = e
		}
		positions.m, positions.peak = m, n
	}
	positions.sweep = 2 * len(positions.m)
	positions.added = 0
	positions.n.Store(int64(len(positions.m) + positions.owned))
}

// armSweep sweeps once after the next garbage collection, and re-arms while
// the table is not empty: collected values leave the table without waiting
// for it to double. It costs one cleanup per GC cycle rather than one per
// remembered value. A table at rest (nothing added since the last sweep,
// which dropped nothing) is not swept: its entries of values collected
// meanwhile wait for the next change, and the table does not grow.
func armSweep() {
	runtime.AddCleanup(new(sentinel), func(struct{}) {
		positions.mu.Lock()
		defer positions.mu.Unlock()
		if positions.added > 0 || positions.dying {
			// Sweep while entries come or go; a table at rest (the
			// last sweep found nothing to drop, nothing added since)
			// is left alone.
			sweepLocked()
		}
		if positions.armed = len(positions.m) > 0; positions.armed {
			armSweep()
		}
	}, struct{}{})
}

// sentinel is big enough and holds a pointer, so it is not batched with
// other small objects (runtime.AddCleanup) and dies with the next GC.
type sentinel struct {
	_ *int
	_ [8]int
}

// lookup returns position i remembered for v (0 the value's, i+1 its item
// i's), the zero Pos if the entry has none, and whether v has an entry.
func lookup(v Value, i int) (Pos, bool) {
	if positions.n.Load() == 0 {
		return Pos{}, false
	}
	p := identityOf(v)
	if p == nil {
		return Pos{}, false
	}
	positions.mu.Lock()
	defer positions.mu.Unlock()
	if e := positions.m[uintptr(p)]; e != nil && e.live(p) {
		if i < 0 || i >= len(e.pos) {
			return Pos{}, true
		}
		return e.pos[i].unpack(), true
	}
	for _, w := range positions.tabs {
		o := w.Value()
		if o == nil {
			continue
		}
		if ps, ok := o.tab.find(uintptr(p)); ok {
			if i < 0 || i >= len(ps) {
				return Pos{}, true
			}
			return o.tab.unpack(ps[i]), true
		}
	}
	return Pos{}, false
}

// PosOf returns the source position of v: an *Annotated's own, else the
// one remembered for compound v, else the zero Pos. An atom's position is
// known only to its parent: see ItemPos.
func PosOf(v Value) Pos {
	if a, ok := v.(*Annotated); ok {
		return a.Pos
	}
	p, _ := lookup(v, 0)
	return p
}

// ItemPos returns the source position of item i of compound parent (the
// numbering of Remember): the item's own position if it is a remembered
// compound (or an *Annotated), else the place its parent remembers for
// it, else the zero Pos.
func ItemPos(parent Value, i int) Pos {
	parent = Unwrap(parent)
	if item, ok := ItemOf(parent, i); ok {
		if p := PosOf(item); p.IsValid() {
			return p
		}
	}
	p, _ := lookup(parent, i+1)
	return p
}

// FieldPos is ItemPos of field i of record r (item i+1).
func FieldPos(r *Record, i int) Pos { return ItemPos(r, i+1) }

// EntryPos is the position of the value at key k of dictionary d, or of
// its key (which names the entry) when the value has none; zero when k is
// absent.
func EntryPos(d *Dictionary, k Value) Pos {
	i := sort.Search(len(d.entries), func(i int) bool { return Compare(d.entries[i].Key, k) >= 0 })
	if i == len(d.entries) || Compare(d.entries[i].Key, k) != 0 {
		return Pos{}
	}
	if p := ItemPos(d, 2*i+1); p.IsValid() {
		return p
	}
	return ItemPos(d, 2*i)
}

// ItemOf returns item i of compound v in the numbering of Remember (a
// record's label then its fields, a sequence's or set's elements, a
// dictionary's key and value of each entry); false when there is none.
func ItemOf(v Value, i int) (Value, bool) {
	if i < 0 {
		return nil, false
	}
	switch x := v.(type) {
	case *Record:
		if i == 0 {
			return x.Label, true
		}
		if i-1 < len(x.Fields) {
			return x.Fields[i-1], true
		}
	case Sequence:
		if i < len(x) {
			return x[i], true
		}
	case *Set:
		if i < len(x.elems) {
			return x.elems[i], true
		}
	case *Dictionary:
		if i/2 < len(x.entries) {
			if i%2 == 0 {
				return x.entries[i/2].Key, true
			}
			return x.entries[i/2].Value, true
		}
	}
	return nil, false
}

// FirstPos returns the first source position known for v or for a part of
// it, depth first, within a bounded number of nodes: where a value that
// mixes a script's parts with others (a service's record around a
// script's value) came from.
func FirstPos(v Value) (Pos, bool) {
	budget := 1024
	var walk func(v Value) (Pos, bool)
	walk = func(v Value) (Pos, bool) {
		if budget <= 0 || v == nil {
			return Pos{}, false
		}
		budget--
		if p := PosOf(v); p.IsValid() {
			return p, true
		}
		v = Unwrap(v)
		for i := 0; ; i++ {
			item, ok := ItemOf(v, i)
			if !ok {
				return Pos{}, false
			}
			if p, ok := walk(item); ok {
				return p, true
			}
			if p := ItemPos(v, i); p.IsValid() {
				return p, true
			}
		}
	}
	return walk(v)
}

// StripRemembering is Strip that keeps what the wrappers said about
// positions: every compound of the result is remembered with its own
// position and its items' (Remember). Unlike Strip it always builds new
// compounds below a wrapper, as a shared unannotated compound may not be
// given positions that belong to one place; a value without wrappers is
// returned as it is. Comments and other annotations are dropped.
func StripRemembering(v Value) Value { return Owner{}.StripRemembering(v) }

// StripRemembering is StripRemembering for a value owned by o.
func (o Owner) StripRemembering(v Value) Value {
	if !HasAnnotations(v) {
		return v
	}
	out, _ := o.stripRemembering(v)
	return out
}

func (o Owner) stripRemembering(v Value) (Value, Pos) {
	var at Pos
	if a, ok := v.(*Annotated); ok {
		v, at = a.Item, a.Pos
	}
	var items []Pos
	var out Value
	switch x := v.(type) {
	case *Record:
		items = make([]Pos, 1+len(x.Fields))
		r := &Record{Fields: make([]Value, len(x.Fields))}
		r.Label, items[0] = o.stripRemembering(x.Label)
		for i, f := range x.Fields {
			r.Fields[i], items[i+1] = o.stripRemembering(f)
		}
		out = r
	case Sequence:
		s, ps := o.stripAll(x)
		out, items = Sequence(s), ps
	case *Set:
		// Annotations do not change the order, so the elements stay sorted.
		s, ps := o.stripAll(x.elems)
		out, items = &Set{elems: s}, ps
	case *Dictionary:
		es := make([]DictEntry, len(x.entries))
		items = make([]Pos, 2*len(x.entries))
		for i, e := range x.entries {
			es[i].Key, items[2*i] = o.stripRemembering(e.Key)
			es[i].Value, items[2*i+1] = o.stripRemembering(e.Value)
		}
		out = &Dictionary{entries: es}
	case *Embedded:
		if pv, ok := x.Payload.(Value); ok && HasAnnotations(pv) {
			return &Embedded{Payload: o.StripRemembering(pv)}, at
		}
		return x, at
	default:
		return v, at
	}
	o.Remember(out, at, items)
	return out, at
}

func (o Owner) stripAll(vs []Value) ([]Value, []Pos) {
	out := make([]Value, len(vs))
	ps := make([]Pos, len(vs))
	for i, v := range vs {
		out[i], ps[i] = o.stripRemembering(v)
	}
	return out, ps
}

// NewSetAt is NewSet remembering the set at `at` and element i of elems
// at pos[i] (pos is in the order of elems, not the set's).
func NewSetAt(at Pos, elems []Value, pos []Pos) *Set { return Owner{}.NewSetAt(at, elems, pos) }

// NewSetAt is NewSetAt for a set owned by o.
func (o Owner) NewSetAt(at Pos, elems []Value, pos []Pos) *Set {
	idx := sortedIndex(len(elems), func(i int) Value { return elems[i] })
	out := make([]Value, 0, len(elems))
	items := make([]Pos, 0, len(elems))
	for _, i := range idx {
		if len(out) > 0 && Compare(out[len(out)-1], elems[i]) == 0 {
			o.drop(elems[i]) // the first of equal elements wins, as in NewSet
			continue
		}
		out = append(out, elems[i])
		items = append(items, posAt(pos, i))
	}
	s := &Set{elems: out}
	o.Remember(s, at, items)
	return s
}

// NewDictionaryAt is NewDictionary remembering the dictionary at `at`,
// the key of entries[i] at keyPos[i] and its value at valPos[i] (in the
// order of entries, not the dictionary's).
func NewDictionaryAt(at Pos, entries []DictEntry, keyPos, valPos []Pos) *Dictionary {
	return Owner{}.NewDictionaryAt(at, entries, keyPos, valPos)
}

// NewDictionaryAt is NewDictionaryAt for a dictionary owned by o.
func (o Owner) NewDictionaryAt(at Pos, entries []DictEntry, keyPos, valPos []Pos) *Dictionary {
	idx := sortedIndex(len(entries), func(i int) Value { return entries[i].Key })
	out := make([]DictEntry, 0, len(entries))
	items := make([]Pos, 0, 2*len(entries))
	for _, i := range idx {
		if n := len(out); n > 0 && Compare(out[n-1].Key, entries[i].Key) == 0 {
			// The last of equal keys wins, as in NewDictionary.
			o.drop(out[n-1].Key)
			o.drop(out[n-1].Value)
			out[n-1], items[2*n-2], items[2*n-1] = entries[i], posAt(keyPos, i), posAt(valPos, i)
			continue
		}
		out = append(out, entries[i])
		items = append(items, posAt(keyPos, i), posAt(valPos, i))
	}
	d := &Dictionary{entries: out}
	o.Remember(d, at, items)
	return d
}

// drop forgets what o remembered of v, which its caller is dropping, and
// lets go of v at the table's next sort. Values remembered on their own
// weak pointers need nothing.
func (o Owner) drop(v Value) {
	if o.tab == nil {
		return
	}
	if p := identityOf(v); p != nil {
		positions.mu.Lock()
		if len(o.tab.keys) > 0 {
			o.tab.keys = append(o.tab.keys, ownedKey{ref: p, n: droppedKey})
			o.tab.sorted = false
			positions.owned++
			positions.n.Store(int64(len(positions.m) + positions.owned))
		}
		positions.mu.Unlock()
	}
	for i := 0; ; i++ {
		item, ok := ItemOf(v, i)
		if !ok {
			return
		}
		o.drop(item)
	}
}

// sortedIndex is 0..n-1 stably sorted by the values key(i).
func sortedIndex(n int, key func(int) Value) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return Compare(key(idx[a]), key(idx[b])) < 0 })
	return idx
}

func posAt(ps []Pos, i int) Pos {
	if i < len(ps) {
		return ps[i]
	}
	return Pos{}
}

// rememberedCount is the number of live entries (for tests).
func rememberedCount() int64 { return positions.n.Load() }
