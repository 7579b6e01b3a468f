// Package index implements the dataspace skeleton index (runtime spec §12):
// the data structure that routes assertions, retractions and messages to the
// observers whose patterns match them, and replays current matches to new
// observers.
//
// # Design
//
// The index is a pure data structure: no goroutines, no locks. The dataspace
// entity that owns it runs inside one actor, which serialises every call.
// Notifications go out through an [Emitter] passed to each call; the emitter
// must not call back into the index.
//
// Every distinct asserted value is interned once as an *entry (value, hash,
// bag count) in an open-addressing table keyed by preserves.Hash and compared
// with preserves.Equal, since Go maps cannot key on values that contain
// slices; every cache below shares these entries (see sets.go). Observers'
// patterns are analysed into a *shape* (the class guards of their group
// sub-patterns, in pre-order) and a trie of shapes is kept; patterns of the
// same shape share a node (§12.2). A node caches the set of entries that pass
// its guards, so a new observer is answered from the caches without scanning
// unrelated assertions. Below a node, observers are grouped by the positions
// they constrain to constants or merely require to exist (a *leaf map*), then
// by the constants themselves (a *leaf*, found by one hash lookup), then by
// the positions they capture (*endpoints*), which hold the counted bag of
// capture tuples and, per observer, the handle of each tuple asserted to it.
//
// Inserting, removing or sending a value walks only the trie edges whose
// guards the value satisfies, doing one hash lookup per leaf map at each
// node visited: the cost depends on the shapes and on the matching observers,
// not on the number of unrelated assertions or observers. (As in §12, it
// does grow with the number of distinct constrained-position sets at a
// visited node: many dictionary patterns over distinct keys, such as
// {k1: ?x}, {k2: ?x}, …, are each looked at for every dictionary value.) The
// walk keeps its value stack and projection buffers in the Index and reuses
// them, so a message costs one allocation per matching endpoint (the capture
// tuple it delivers) and nothing else.
//
// Departures from the letter of §12, none observable: a position that is both
// captured and required to exist is checked when capturing rather than in
// the leaf, so a pattern like <foo ?x> needs no separate leaf set (its leaf
// shares the node's cache); a leaf map is dropped when its last observer
// goes, and a trie node with no leaf maps and no children is pruned, so the
// index only keeps caches for shapes somebody is observing.
package index

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// Observer identifies one observer. It must be comparable; the runtime passes
// a canonical key for the observer capability.
type Observer = any

// Emitter receives the index's notifications. The index calls it
// synchronously during Insert, Remove, Send, AddObserver and RemoveObserver;
// it must not call the index back. Capture sequences passed to it are
// immutable and may be retained.
type Emitter interface {
	// AssertTo asserts a capture tuple to obs and returns the handle naming
	// that assertion, or ok=false when obs rejected it (attenuation); a
	// rejected tuple is not retracted later. The handle ^uint64(0) is
	// reserved.
	AssertTo(obs Observer, captures preserves.Sequence) (handle uint64, ok bool)
	// RetractFrom retracts a tuple previously asserted to obs.
	RetractFrom(obs Observer, handle uint64)
	// SendTo delivers a message's capture tuple to obs: a
	// preserves.Sequence, boxed as a Value by the index (from a
	// preserves.SequenceSlab, so that routing a message allocates
	// nothing of its own), shared by the observers of one pattern.
	SendTo(obs Observer, captures preserves.Value)
}

// noHandle marks a tuple an observer rejected.
const noHandle = ^uint64(0)

// Index is the skeleton index. The zero value is not usable; call New.
type Index struct {
	all  table[*entry] // bag of asserted values, by preserves.Hash
	top  topClasses    // the same values by top-level class (top.go)
	root *node

	// Scratch space reused by every traversal, so the hot paths do not
	// allocate: wrap is the one-element sequence the walk starts from (its
	// boxed form wrapVal is built once), stack the walk's value stack, and
	// keyBuf/capBuf hold projections while they are looked up.
	wrap    preserves.Sequence
	wrapVal preserves.Value
	stack   []preserves.Value
	keyBuf  []preserves.Value
	capBuf  []preserves.Value
	// caps boxes the capture tuples of messages (Emitter.SendTo).
	caps preserves.SequenceSlab
}

// entry is one distinct asserted value, shared by every cache holding it.
// It keeps the value's hash so that growing a table never has to touch (and
// fault in) the values themselves.
type entry struct {
	v     preserves.Value
	hash  uint64
	count int
}

// New returns an empty index.
func New() *Index {
	ix := &Index{root: &node{}, wrap: make(preserves.Sequence, 1)}
	ix.wrapVal = ix.wrap
	return ix
}

// Len reports the number of distinct values currently asserted.
func (ix *Index) Len() int { return ix.all.len() }

// Count reports how many times v is currently asserted.
func (ix *Index) Count(v preserves.Value) int {
	if ent, ok := ix.lookup(v, preserves.Hash(v)); ok {
		return ent.count
	}
	return 0
}

func (ix *Index) lookup(v preserves.Value, h uint64) (*entry, bool) {
	return ix.all.get(h, func(e *entry) bool { return preserves.Equal(e.v, v) })
}

// Insert adds one copy of v to the bag of assertions. When v was not asserted
// before, every observer gains the capture tuples v contributes that it did
// not already hold, and Insert reports true.
func (ix *Index) Insert(v preserves.Value, e Emitter) (added bool) {
	h := preserves.Hash(v)
	if ent, ok := ix.lookup(v, h); ok {
		ent.count++
		return false
	}
	ent := &entry{v: v, hash: h, count: 1}
	ix.all.add(h, ent, entryHash)
	ix.top.add(ent)
	ix.traverse(opInsert, ent.v, ent, h, e)
	return true
}

// Remove drops one copy of v. When that was the last copy, every tuple that
// no remaining value produces is retracted from its observers, and Remove
// reports true. Removing a value that is not asserted does nothing.
func (ix *Index) Remove(v preserves.Value, e Emitter) (removed bool) {
	h := preserves.Hash(v)
	ent, ok := ix.lookup(v, h)
	if !ok {
		return false
	}
	if ent.count--; ent.count > 0 {
		return false
	}
	ix.all.del(h, func(x *entry) bool { return x == ent }, entryHash)
	ix.top.remove(ent)
	ix.traverse(opRemove, ent.v, ent, h, e)
	return true
}

// Send delivers message v to every observer whose pattern matches it, once
// per registration; the index's state does not change.
func (ix *Index) Send(v preserves.Value, e Emitter) {
	ix.traverse(opMessage, v, nil, 0, e)
}

// AddObserver registers obs for p and asserts to it every distinct capture
// tuple of the values currently asserted. Registering the same observer for
// a pattern of the same analysis again only counts a reference (the runtime
// registers identical Observe assertions once); RemoveObserver must then be
// called as often.
func (ix *Index) AddObserver(p pattern.Pattern, obs Observer, e Emitter) {
	a, ok := analyse(p)
	if !ok {
		return // the pattern can never match: nothing to register
	}
	_, n := ix.walk(ix.root, nil, 0, rootStep, p, true)
	lm := n.leafMap(&a)
	if lm == nil {
		lm = ix.buildLeafMap(n, &a)
	}
	lf := lm.leafFor(a.constVals, true)
	ep := lf.endpointsFor(a.capPaths)
	if ep == nil {
		ep = ix.buildEndpoints(n, lm, lf, a.capPaths)
	}
	if i := ep.find(obs); i >= 0 {
		ep.obs[i].refs++
		return
	}
	ep.addObserver(obs)
	lm.users++
	slot := len(ep.obs) - 1
	ep.captures.each(func(ce *capEntry) {
		h, ok := e.AssertTo(obs, ce.tuple())
		if !ok {
			h = noHandle
		}
		ce.addHandle(slot, h)
	})
}

// RemoveObserver drops one registration of obs for p; when it was the last,
// every tuple asserted to obs for p is retracted. Unknown registrations are
// ignored.
func (ix *Index) RemoveObserver(p pattern.Pattern, obs Observer, e Emitter) {
	a, ok := analyse(p)
	if !ok {
		return
	}
	_, n := ix.walk(ix.root, nil, 0, rootStep, p, false)
	if n == nil {
		return
	}
	lm := n.leafMap(&a)
	if lm == nil {
		return
	}
	lf := lm.leafFor(a.constVals, false)
	if lf == nil {
		return
	}
	ep := lf.endpointsFor(a.capPaths)
	if ep == nil {
		return
	}
	i := ep.find(obs)
	if i < 0 {
		return
	}
	if ep.obs[i].refs--; ep.obs[i].refs > 0 {
		return
	}
	ep.captures.each(func(ce *capEntry) {
		if h := ce.handle(i); h != noHandle {
			e.RetractFrom(obs, h)
		}
	})
	ep.removeObserver(i)
	lm.users--
	if len(ep.obs) == 0 {
		lf.removeEndpoints(ep)
	}
	if len(lf.eps) == 0 && ix.leafLen(n, lm, lf) == 0 {
		lm.removeLeaf(lf)
	}
	if lm.users == 0 {
		n.removeLeafMap(lm)
		ix.prune(n)
	}
}
