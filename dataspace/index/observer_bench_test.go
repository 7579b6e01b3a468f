package index

import (
	"fmt"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// BenchmarkObserverArrives is issue 23's subscription cost: one observer of
// <service-state _ _> arrives in (and leaves) a dataspace holding n
// unrelated <x N> assertions and 10 service states. Its cost should follow
// what it matches, not n: the target is 10^6 within 2× of 10^3.
//
//	go test -run '^$' -bench ObserverArrives ./dataspace/index
func BenchmarkObserverArrives(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ix, e := New(), &countEmitter{}
			for i := range n {
				ix.Insert(preserves.NewRecord(preserves.Symbol("x"), preserves.Int(i)), e)
			}
			for i := range 10 {
				ix.Insert(preserves.NewRecord(preserves.Symbol("service-state"), preserves.Int(i), preserves.Symbol("ready")), e)
			}
			p := pattern.Rec(preserves.Symbol("service-state"), pattern.Capture(), pattern.Capture())
			e.asserts = 0
			b.ReportAllocs()
			for b.Loop() {
				ix.AddObserver(p, 1, e)
				ix.RemoveObserver(p, 1, e)
			}
			if e.asserts != 10*b.N {
				b.Fatalf("%d tuples asserted in %d arrivals", e.asserts, b.N)
			}
		})
	}
}
