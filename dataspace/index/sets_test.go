package index

import (
	"math/rand/v2"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// TestTable runs random adds and deletes against a Go map, with hashes drawn
// from a tiny range so that long collision runs, tombstones, growth,
// rebuilds and shrinking all happen.
func TestTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rounds := 100
	if raceDetector {
		rounds = 25
	}
	for round := 0; round < rounds; round++ {
		var tb table[*int]
		hashes := map[*int]uint64{}
		hashOf := func(p *int) uint64 { return hashes[p] }
		spread := uint64(1 + r.IntN(64))
		var live []*int
		for op := 0; op < 2000; op++ {
			if len(live) == 0 || r.IntN(5) < 3 {
				p := new(int)
				*p = op
				// Hashes share low bits (slot) and often high bits (tag).
				hashes[p] = (r.Uint64N(spread) << 57) | r.Uint64N(spread)
				tb.add(hashes[p], p, hashOf)
				live = append(live, p)
			} else {
				i := r.IntN(len(live))
				p := live[i]
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				if !tb.del(hashes[p], func(q *int) bool { return q == p }, hashOf) {
					t.Fatalf("round %d op %d: del of a live item failed", round, op)
				}
				if tb.del(hashes[p], func(q *int) bool { return q == p }, hashOf) {
					t.Fatalf("round %d op %d: second del succeeded", round, op)
				}
				if _, ok := tb.get(hashes[p], func(q *int) bool { return q == p }); ok {
					t.Fatalf("round %d op %d: deleted item found", round, op)
				}
			}
			if tb.len() != len(live) {
				t.Fatalf("round %d op %d: len %d, want %d", round, op, tb.len(), len(live))
			}
			if op%97 == 0 {
				for _, p := range live {
					if got, ok := tb.get(hashes[p], func(q *int) bool { return q == p }); !ok || got != p {
						t.Fatalf("round %d op %d: live item %d not found", round, op, *p)
					}
				}
				n := 0
				tb.each(func(*int) { n++ })
				if n != len(live) {
					t.Fatalf("round %d op %d: each visited %d, want %d", round, op, n, len(live))
				}
				if len(tb.tags) > 0 && tb.used*4 > len(tb.tags)*3 {
					t.Fatalf("round %d op %d: table over-full: %d used of %d", round, op, tb.used, len(tb.tags))
				}
			}
		}
	}
}

func TestEntrySet(t *testing.T) {
	var s entrySet
	es := make([]*entry, 3*smallSet)
	for i := range es {
		es[i] = &entry{v: preserves.Int(i)}
		s.add(es[i], entryHash(es[i]))
		if s.len() != i+1 {
			t.Fatalf("len %d after %d adds", s.len(), i+1)
		}
	}
	for i, e := range es {
		s.remove(e, entryHash(e))
		if s.len() != len(es)-i-1 {
			t.Fatalf("len %d after %d removals", s.len(), i+1)
		}
		n := 0
		s.each(func(x *entry) {
			n++
			for _, y := range es[:i+1] {
				if x == y {
					t.Fatalf("removed entry still present")
				}
			}
		})
		if n != s.len() {
			t.Fatalf("each visited %d, len %d", n, s.len())
		}
	}
}
