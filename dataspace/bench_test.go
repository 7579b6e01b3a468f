package dataspace

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// Benchmarks (go test -bench . -benchmem ./dataspace/). One op is one
// message delivered (or published, for BenchmarkPublish), or one
// assert+retract pair for BenchmarkChurn. The producer sends chunks of
// benchChunk events per turn from the benchmark goroutine (Activate) and
// keeps at most benchWindow events in flight, so queues stay bounded.

const (
	benchChunk  = 512
	benchWindow = 64 * 1024
)

// cpuTime returns the process's user+system CPU time. The benchmarks
// report CPU nanoseconds per op next to wall-clock figures because the
// build machine is shared: wall time varies with other load, CPU time
// much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter reports cpu-ns/op when stopped.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) *cpuMeter { return &cpuMeter{b, cpuTime()} }

func (m *cpuMeter) stop(n int) {
	m.b.ReportMetric(float64(cpuTime()-m.start)/float64(n), "cpu-ns/op")
}

// benchSys is a system for benchmarks (no leak polling).
func benchSys(b *testing.B) *System {
	s := NewSystem(Options{})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// counter counts messages and assertions and signals progress.
type counter struct {
	BaseEntity
	n        atomic.Int64
	progress chan struct{}
}

func newCounter() *counter { return &counter{progress: make(chan struct{}, 1)} }

func (c *counter) bump() {
	if c.n.Add(1)%1024 == 0 {
		select {
		case c.progress <- struct{}{}:
		default:
		}
	}
}

func (c *counter) Message(*Turn, preserves.Value) error        { c.bump(); return nil }
func (c *counter) Assert(*Turn, preserves.Value, Handle) error { c.bump(); return nil }
func (c *counter) Retract(*Turn, Handle) error                 { return nil }

func (c *counter) waitFor(n int64, tb testing.TB, what string) {
	deadline := time.Now().Add(60 * time.Second)
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for c.n.Load() < n {
		select {
		case <-c.progress:
		case <-tk.C:
			if time.Now().After(deadline) {
				tb.Fatalf("%s: %d of %d", what, c.n.Load(), n)
			}
		}
	}
}

var saysLabel = preserves.Symbol("Says")

// saysPattern is <group <rec Says> {0: <lit "bench_pub">, 1: <bind <_>>}>.
var saysPattern = pattern.Rec(saysLabel, pattern.Lit{Value: preserves.String("bench_pub")}, pattern.Capture())

// benchMessages are prebuilt, so the producer allocates nothing per message.
var benchMessages = func() []preserves.Value {
	vs := make([]preserves.Value, 1024)
	for k := range vs {
		vs[k] = preserves.NewRecord(saysLabel, preserves.String("bench_pub"), preserves.Int(k))
	}
	return vs
}()

// hostDataspace starts an actor holding a Dataspace entity.
func hostDataspace(s *System) (*Ref, FacetRef) {
	ch := make(chan struct{})
	var ds *Ref
	var fr FacetRef
	s.Spawn("ds", func(t *Turn) error {
		t.PreventInertCheck()
		ds = t.Create(NewDataspace())
		fr = t.FacetRef()
		close(ch)
		return nil
	})
	<-ch
	return ds, fr
}

// hostEntity starts an actor holding e.
func hostEntity(s *System, name string, e Entity) (*Ref, FacetRef) {
	ch := make(chan struct{})
	var r *Ref
	var fr FacetRef
	s.Spawn(name, func(t *Turn) error {
		t.PreventInertCheck()
		r = t.Create(e)
		fr = t.FacetRef()
		close(ch)
		return nil
	})
	<-ch
	return r, fr
}

// syncWait makes fr's actor sync with target and waits for the reply.
func syncWait(fr FacetRef, target *Ref) {
	ch := make(chan struct{})
	fr.Activate(func(t *Turn) error {
		t.Sync(target, func(*Turn) error { close(ch); return nil })
		return nil
	})
	<-ch
}

// BenchmarkPublish (a): messages to a dataspace nobody observes.
func BenchmarkPublish(b *testing.B) {
	s := benchSys(b)
	ds, _ := hostDataspace(s)
	_, pfr := hostEntity(s, "producer", BaseEntity{})
	// Window by syncs: each chunk ends with a sync; wait for the one
	// sent benchWindow/benchChunk chunks ago.
	acks := make(chan struct{}, benchWindow/benchChunk+1)
	inflight := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for sent := 0; sent < b.N; {
		n := min(benchChunk, b.N-sent)
		if inflight == cap(acks)-1 {
			<-acks
			inflight--
		}
		pfr.Activate(func(t *Turn) error {
			for k := 0; k < n; k++ {
				t.Message(ds, benchMessages[(sent+k)&1023])
			}
			t.Sync(ds, func(*Turn) error { acks <- struct{}{}; return nil })
			return nil
		})
		inflight++
		sent += n
	}
	for ; inflight > 0; inflight-- {
		<-acks
	}
	b.StopTimer()
	cpu.stop(b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// pubSub runs the producer → dataspace → consumer pipeline for b.N
// messages.
func pubSub(b *testing.B, s *System, ds *Ref) {
	c := newCounter()
	cref, cfr := hostEntity(s, "consumer", c)
	cfr.Activate(func(t *Turn) error { t.Assert(ds, Observe(saysPattern, cref)); return nil })
	syncWait(cfr, ds) // registered
	_, pfr := hostEntity(s, "producer", BaseEntity{})
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for sent := 0; sent < b.N; {
		n := min(benchChunk, b.N-sent)
		if int64(sent)-c.n.Load() > benchWindow {
			c.waitFor(int64(sent-benchWindow), b, "window")
		}
		pfr.Activate(func(t *Turn) error {
			for k := 0; k < n; k++ {
				t.Message(ds, benchMessages[(sent+k)&1023])
			}
			return nil
		})
		sent += n
	}
	c.waitFor(int64(b.N), b, "delivery")
	b.StopTimer()
	cpu.stop(b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if got := c.n.Load(); got != int64(b.N) {
		b.Fatalf("delivered %d of %d", got, b.N)
	}
}

// BenchmarkPubSub (b): one producer, one consumer observing
// <Says "bench_pub" ?x>.
func BenchmarkPubSub(b *testing.B) {
	s := benchSys(b)
	ds, _ := hostDataspace(s)
	pubSub(b, s, ds)
}

// BenchmarkPubSubScaled (d): (b) with 100,000 unrelated assertions and
// 10,000 unrelated observers in the dataspace.
func BenchmarkPubSubScaled(b *testing.B) {
	s := benchSys(b)
	ds, _ := hostDataspace(s)
	u := newCounter()
	uref, ufr := hostEntity(s, "unrelated", u)
	for chunk := 0; chunk < 100; chunk++ {
		ufr.Activate(func(t *Turn) error {
			for k := 0; k < 1000; k++ {
				n := chunk*1000 + k
				t.Assert(ds, preserves.Rec("item", preserves.Int(n)))
			}
			for k := 0; k < 100; k++ {
				n := chunk*100 + k
				var p pattern.Pattern
				switch n % 3 {
				case 0: // same shape as the benchmark's, other constant
					p = pattern.Rec(saysLabel, pattern.Lit{Value: preserves.String(fmt.Sprint("topic-", n))}, pattern.Capture())
				case 1: // other label
					p = pattern.Rec(preserves.Symbol(fmt.Sprint("other-", n)), pattern.Capture())
				default: // observes unrelated items
					p = pattern.Rec(preserves.Symbol("item"), pattern.Lit{Value: preserves.Int(-n)})
				}
				t.Assert(ds, Observe(p, uref))
			}
			return nil
		})
		syncWait(ufr, ds)
	}
	pubSub(b, s, ds)
}

// BenchmarkChurn (c): assert then retract one value, with 1, 10 or 1,000
// observers whose pattern matches it or not.
func BenchmarkChurn(b *testing.B) {
	for _, nobs := range []int{1, 10, 1000} {
		for _, matching := range []bool{true, false} {
			b.Run(fmt.Sprintf("observers=%d/matching=%v", nobs, matching), func(b *testing.B) {
				s := benchSys(b)
				ds, _ := hostDataspace(s)
				c := newCounter()
				cref, cfr := hostEntity(s, "observers", c)
				cfr.Activate(func(t *Turn) error {
					for k := 0; k < nobs; k++ {
						lit := "bench_pub"
						if !matching {
							lit = fmt.Sprint("other-", k)
						}
						// Distinct observers: one entity each.
						r := cref
						if k > 0 {
							r = t.Create(c)
						}
						p := pattern.Rec(saysLabel, pattern.Lit{Value: preserves.String(lit)}, pattern.Capture())
						t.Assert(ds, Observe(p, r))
					}
					return nil
				})
				syncWait(cfr, ds)
				_, pfr := hostEntity(s, "producer", BaseEntity{})
				chunk := max(1, benchChunk/nobs)
				acks := make(chan struct{}, 3)
				inflight := 0
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU(b)
				for done := 0; done < b.N; {
					n := min(chunk, b.N-done)
					if inflight == cap(acks)-1 {
						<-acks
						inflight--
					}
					pfr.Activate(func(t *Turn) error {
						for k := 0; k < n; k++ {
							h := t.Assert(ds, benchMessages[(done+k)&1023])
							t.Retract(h)
						}
						t.Sync(ds, func(*Turn) error { acks <- struct{}{}; return nil })
						return nil
					})
					inflight++
					done += n
				}
				for ; inflight > 0; inflight-- {
					<-acks
				}
				if matching {
					c.waitFor(int64(b.N*nobs), b, "notifications")
				}
				b.StopTimer()
				cpu.stop(b.N)
			})
		}
	}
}

// BenchmarkAssertionMemory reports the heap bytes one stored assertion
// costs (dataspace side plus the asserting actor's bookkeeping), for 10^6
// <item N> assertions. It ignores b.N: one measurement per run.
func BenchmarkAssertionMemory(b *testing.B) {
	const total = 1_000_000
	s := benchSys(b)
	ds, _ := hostDataspace(s)
	_, pfr := hostEntity(s, "asserter", BaseEntity{})
	items := make([]preserves.Value, total)
	for k := range items {
		items[k] = preserves.Rec("item", preserves.Int(k))
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	for k := 0; k < total; k += 10_000 {
		pfr.Activate(func(t *Turn) error {
			for j := k; j < k+10_000; j++ {
				t.Assert(ds, items[j])
			}
			return nil
		})
		syncWait(pfr, ds)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	// The values themselves were allocated before m0; count them too.
	valueBytes := float64(48 + 16 + 8) // *Record, its field slice, a boxed Int
	perAssertion := float64(m1.HeapAlloc-m0.HeapAlloc)/total + valueBytes
	b.ReportMetric(perAssertion, "B/assertion")
	b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/total, "B/assertion-excl-value")
	runtime.KeepAlive(items)
}
