package preserves

import (
	"testing"
)

// Sequences from a slab are equal to their items, independent of each
// other and of the items slice, and appending to one never touches its
// neighbour.
func TestSequenceSlab(t *testing.T) {
	var s SequenceSlab
	var got []Value
	items := []Value{Int(1), String("two"), Symbol("three")}
	for i := range 1000 {
		n := i % 5
		xs := make([]Value, n)
		for k := range xs {
			xs[k] = items[(i+k)%len(items)]
		}
		got = append(got, s.Make(xs))
		clear(xs) // the slab copied them
	}
	for i, v := range got {
		seq, ok := v.(Sequence)
		if !ok {
			t.Fatalf("%d: %T, want Sequence", i, v)
		}
		n := i % 5
		if len(seq) != n || cap(seq) != n {
			t.Fatalf("%d: len %d cap %d, want %d", i, len(seq), cap(seq), n)
		}
		for k := range seq {
			if !Equal(seq[k], items[(i+k)%len(items)]) {
				t.Fatalf("%d: item %d is %v", i, k, seq[k])
			}
		}
	}
	a := got[1].(Sequence) // one item, followed in its chunk by got[2]'s
	_ = append(a, Int(99))
	if b := got[2].(Sequence); !Equal(b[0], items[2]) {
		t.Fatalf("appending to a neighbour overwrote %v", b[0])
	}
	long := make([]Value, seqSlabValues)
	for k := range long {
		long[k] = Int(k)
	}
	if seq := s.Make(long).(Sequence); len(seq) != len(long) || !Equal(seq[255], Int(255)) {
		t.Fatalf("a long sequence came back as %d items", len(seq))
	}
	if v, ok := s.Make(nil).(Sequence); !ok || v == nil || len(v) != 0 {
		t.Fatalf("Make(nil) = %#v, want an empty non-nil Sequence", v)
	}
}

func BenchmarkSequenceSlab(b *testing.B) {
	var s SequenceSlab
	items := []Value{Int(1)}
	b.ReportAllocs()
	for range b.N {
		_ = s.Make(items)
	}
}
