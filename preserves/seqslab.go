package preserves

import "unsafe"

// SequenceSlab hands out small Sequences, boxed as Values, carved from
// shared chunks: one allocation per chunk instead of two per sequence (the
// backing array and the interface's box). It is for producers of many
// small sequences, most of which die young: a dataspace building the
// capture tuple of every message it routes (issue 28: those two
// allocations per message were most of an in-process pub/sub's collector
// work). Each sequence is a full slice of its own (capacity equals
// length), so appending to it copies and never reaches a neighbour; like
// every Value it must not be modified. A sequence that is kept keeps its
// chunk reachable, and chunks are bounded (seqSlabValues values, a quarter
// as many boxes), so what one retained sequence pins is bounded too, as
// with the binary decoder's slabs. A SequenceSlab is not safe for
// concurrent use; the zero value is ready.
type SequenceSlab struct {
	vals []Value
	hdrs []Sequence
}

// seqSlabValues is the size of a value chunk; a sequence longer than a
// quarter of it gets its own allocation.
const seqSlabValues = 256

// Make returns a Sequence holding a copy of items, boxed as a Value. An
// empty items gives the empty Sequence.
func (s *SequenceSlab) Make(items []Value) Value {
	n := len(items)
	switch {
	case n == 0:
		return emptySequence // not nil: a tuple without bindings is [] as before
	case n > seqSlabValues/4:
		return append(Sequence(nil), items...)
	}
	if cap(s.vals)-len(s.vals) < n {
		s.vals = make([]Value, 0, seqSlabValues)
	}
	l := len(s.vals)
	s.vals = append(s.vals, items...)
	if len(s.hdrs) == cap(s.hdrs) {
		s.hdrs = make([]Sequence, 0, seqSlabValues/4)
	}
	s.hdrs = append(s.hdrs, s.vals[l:l+n:l+n])
	return boxIn(sequenceBox, unsafe.Pointer(&s.hdrs[len(s.hdrs)-1]))
}
