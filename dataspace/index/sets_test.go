package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Distinct items whose 64-bit hashes collide practically never occur, so the
// overflow path is tested by forcing every item under one hash.
func TestBucketMapCollisions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var b bucketMap[*int]
		var items []*int
		const h = 42
		for i := 0; i < 1+r.IntN(6); i++ {
			p := new(int)
			*p = i
			items = append(items, p)
			b.put(h, p)
			b.put(h+1+uint64(i), new(int)) // unrelated neighbours
		}
		for len(items) > 0 {
			for _, p := range items {
				got, ok := b.get(h, func(q *int) bool { return q == p })
				if !ok || got != p {
					t.Fatalf("round %d: item %d not found", round, *p)
				}
			}
			var seen []*int
			b.each(func(q *int) {
				if _, ok := b.get(h, func(x *int) bool { return x == q }); ok {
					seen = append(seen, q)
				}
			})
			if len(seen) != len(items) {
				t.Fatalf("round %d: each visits %d colliding items, want %d", round, len(seen), len(items))
			}
			i := r.IntN(len(items))
			p := items[i]
			items = slices.Delete(items, i, i+1)
			if !b.del(h, func(q *int) bool { return q == p }) {
				t.Fatalf("round %d: del failed", round)
			}
			if b.del(h, func(q *int) bool { return q == p }) {
				t.Fatalf("round %d: second del succeeded", round)
			}
			if _, ok := b.get(h, func(q *int) bool { return q == p }); ok {
				t.Fatalf("round %d: deleted item still found", round)
			}
		}
		if _, ok := b.m[h]; ok || b.over != nil {
			t.Fatalf("round %d: bucket not emptied", round)
		}
	}
}

func TestEntrySet(t *testing.T) {
	var s entrySet
	es := make([]*entry, 3*smallSet)
	for i := range es {
		es[i] = &entry{count: i}
		s.add(es[i])
		if s.len() != i+1 {
			t.Fatalf("len %d after %d adds", s.len(), i+1)
		}
	}
	for i, e := range es {
		s.remove(e)
		if s.len() != len(es)-i-1 {
			t.Fatalf("len %d after %d removals", s.len(), i+1)
		}
	}
	s = entrySet{}
	s.add(es[0])
	s.add(es[1])
	s.remove(es[0])
	n := 0
	s.each(func(e *entry) {
		if e != es[1] {
			t.Fatalf("wrong element left")
		}
		n++
	})
	if n != 1 {
		t.Fatalf("each visited %d", n)
	}
}
