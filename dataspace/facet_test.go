package dataspace

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Siblings stopped one by one leave holes that are compacted away; the
// parent still stops the rest in creation order, and only the rest.
func TestStoppedSiblingsLeaveCreationOrder(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "parent")
	var stopped []int
	done := make(chan struct{})
	do(t, fr, func(t *Turn) error {
		_, err := t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			var ids []FacetID
			for i := range 100 {
				id, err := t.Facet(func(t *Turn) error {
					t.PreventInertCheck()
					t.OnStop(func(*Turn) error { stopped = append(stopped, i); return nil })
					return nil
				})
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			// Stop 70 of them, most from the front (compaction runs).
			for i := range 100 {
				if i%10 < 7 {
					t.StopFacet(ids[i])
				}
			}
			stopped = nil
			t.Stop() // the parent: the 30 left, in creation order
			return nil
		})
		close(done)
		return err
	})
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("the turn did not run")
	}
	var want []int
	for i := range 100 {
		if i%10 >= 7 {
			want = append(want, i)
		}
	}
	require.Equal(t, want, stopped)
}

// BenchmarkStopSiblings: N facets under one parent (an observer's
// during-facets, one per matched assertion) stopped one by one, as when a
// connection holding N assertions closes. One op is one facet made and
// stopped; the cost per facet must not grow with N.
func BenchmarkStopSiblings(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := benchSys(b)
			ch := make(chan FacetRef)
			s.Spawn("bench", func(t *Turn) error {
				t.PreventInertCheck()
				ch <- t.FacetRef()
				return nil
			})
			fr := <-ch
			ids := make([]FacetID, 0, n)
			b.ResetTimer()
			for range (b.N + n - 1) / n {
				done := make(chan struct{})
				fr.ActivateNow(func(t *Turn) error {
					defer close(done)
					ids = ids[:0]
					for range n {
						id, err := t.Facet(func(t *Turn) error { t.PreventInertCheck(); return nil })
						if err != nil {
							return err
						}
						ids = append(ids, id)
					}
					for _, id := range ids {
						t.StopFacet(id)
					}
					return nil
				})
				<-done
			}
		})
	}
}
