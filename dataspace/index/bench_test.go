package index

import (
	"flag"
	"fmt"
	"runtime"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// Benchmarks: go test -run '^$' -bench . -benchmem ./dataspace/index
// Memory:     go test -run TestMemoryPerAssertion -index.mem -v ./dataspace/index

var memTest = flag.Bool("index.mem", false, "measure heap bytes per stored assertion (10^6 assertions)")

// countEmitter counts notifications and issues handles.
type countEmitter struct {
	next                  uint64
	asserts, retracts, ms int
}

func (c *countEmitter) AssertTo(Observer, preserves.Sequence) (uint64, bool) {
	c.next++
	c.asserts++
	return c.next, true
}
func (c *countEmitter) RetractFrom(Observer, uint64)     { c.retracts++ }
func (c *countEmitter) SendTo(Observer, preserves.Value) { c.ms++ }

var itemLabel = preserves.Symbol("item")

func item(fields ...preserves.Value) preserves.Value {
	return &preserves.Record{Label: itemLabel, Fields: fields}
}

// itemCapture is <item ?x>.
var itemCapture = pattern.Rec(itemLabel, pattern.Capture())

func BenchmarkSend1Observer(b *testing.B) {
	ix, e := New(), &countEmitter{}
	ix.AddObserver(itemCapture, 1, e)
	benchSend(b, ix, e)
}

func benchSend(b *testing.B, ix *Index, e *countEmitter) {
	v := item(preserves.Int(1000))
	b.ReportAllocs()
	for b.Loop() {
		ix.Send(v, e)
	}
	if e.ms < b.N {
		b.Fatalf("%d deliveries for %d sends", e.ms, b.N)
	}
}

// BenchmarkInsertRemove times one Insert plus one Remove of a fresh
// <item N> value with n observers that all match it, that match another
// label, or that share its shape but wait for other constants.
func BenchmarkInsertRemove(b *testing.B) {
	for _, kind := range []string{"match", "other-label", "other-const"} {
		for _, n := range []int{1, 10, 1000} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				ix, e := New(), &countEmitter{}
				for i := 0; i < n; i++ {
					switch kind {
					case "match":
						ix.AddObserver(itemCapture, i, e)
					case "other-label":
						ix.AddObserver(pattern.Rec(preserves.Symbol(fmt.Sprintf("other%d", i)), pattern.Capture()), i, e)
					case "other-const":
						ix.AddObserver(pattern.Rec(itemLabel, pattern.Lit{Value: preserves.Int(-1 - i)}, pattern.Capture()), i, e)
					}
				}
				benchInsertRemove(b, ix, e)
				if kind != "match" && e.asserts != 0 {
					b.Fatalf("non-matching observers got %d assertions", e.asserts)
				}
			})
		}
	}
}

func benchInsertRemove(b *testing.B, ix *Index, e *countEmitter) {
	vals := make([]preserves.Value, 4096)
	for i := range vals {
		vals[i] = item(preserves.Int(1_000_000+i), preserves.Int(0))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v := vals[i%len(vals)]
		i++
		ix.Insert(v, e)
		ix.Remove(v, e)
	}
}

// loaded returns an index holding 100,000 assertions and 10,000 observers
// unrelated to <item …> values (plus one observer of <item ?x>).
func loaded(_ testing.TB) (*Index, *countEmitter) {
	ix, e := New(), &countEmitter{}
	for i := 0; i < 10_000; i++ {
		label := preserves.Symbol(fmt.Sprintf("svc%d", i))
		switch i % 3 {
		case 0:
			ix.AddObserver(pattern.Rec(label, pattern.Capture()), i, e)
		case 1:
			ix.AddObserver(pattern.Rec(label, pattern.Lit{Value: preserves.Int(i)}, pattern.Arr(pattern.Capture())), i, e)
		default:
			ix.AddObserver(pattern.Dict(pattern.Entry{Key: label, Pattern: pattern.Capture()}), i, e)
		}
	}
	for i := 0; i < 100_000; i++ {
		label := preserves.Symbol(fmt.Sprintf("svc%d", i%10_000))
		switch i % 4 {
		case 0:
			ix.Insert(preserves.NewRecord(label, preserves.Int(i)), e)
		case 1:
			ix.Insert(preserves.NewRecord(label, preserves.Int(i%10_000), preserves.Sequence{preserves.Int(i)}), e)
		case 2:
			ix.Insert(preserves.NewDictionary(preserves.DictEntry{Key: label, Value: preserves.Int(i)}), e)
		default:
			ix.Insert(preserves.NewRecord(preserves.Symbol("data"), preserves.Int(i)), e)
		}
	}
	ix.AddObserver(itemCapture, -1, e)
	return ix, e
}

func BenchmarkLoadedSend1Observer(b *testing.B) {
	ix, e := loaded(b)
	e.ms = 0
	benchSend(b, ix, e)
}

func BenchmarkLoadedInsertRemove1Observer(b *testing.B) {
	ix, e := loaded(b)
	benchInsertRemove(b, ix, e)
}

func BenchmarkInsertRemove1ObserverBaseline(b *testing.B) {
	ix, e := New(), &countEmitter{}
	ix.AddObserver(itemCapture, -1, e)
	benchInsertRemove(b, ix, e)
}

// TestMemoryPerAssertion measures the heap one stored <item N> assertion
// costs with one observer of <item ?x>: the value itself, the index's
// bookkeeping, and (as an estimate of the runtime's share) a handle → value
// map like the dataspace entity keeps.
func TestMemoryPerAssertion(t *testing.T) {
	if !*memTest {
		t.Skip("run with -index.mem")
	}
	const n = 1_000_000
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	e := &countEmitter{}
	h0 := heap()
	vals := make([]preserves.Value, n)
	for i := range vals {
		vals[i] = item(preserves.Int(1_000_000 + i))
	}
	h1 := heap()
	ix := New()
	ix.AddObserver(itemCapture, 1, e)
	for _, v := range vals {
		ix.Insert(v, e)
	}
	h2 := heap()
	handles := make(map[uint64]preserves.Value)
	for i, v := range vals {
		handles[uint64(i)] = v
	}
	h3 := heap()
	sliceBytes := float64(n * 16) // the vals slice itself is test scaffolding
	valBytes := (float64(h1-h0) - sliceBytes) / n
	ixBytes := float64(h2-h1) / n
	hmBytes := float64(h3-h2) / n
	t.Logf("per assertion: value %.0f B, index %.0f B, runtime handle map %.0f B; index+handle map %.0f B, all %.0f B",
		valBytes, ixBytes, hmBytes, ixBytes+hmBytes, valBytes+ixBytes+hmBytes)
	if e.asserts != n || ix.Len() != n {
		t.Fatalf("%d assertions to the observer, Len %d", e.asserts, ix.Len())
	}
	if ixBytes+hmBytes > 300 {
		t.Errorf("index + handle map cost %.0f bytes per assertion, want under 300", ixBytes+hmBytes)
	}
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ix)
	runtime.KeepAlive(handles)
}
