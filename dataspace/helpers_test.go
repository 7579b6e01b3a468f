package dataspace

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

var waitFor = testutil.WaitFor

// patience bounds waits that end early unless something is wrong: generous,
// because CI runs -race on a small, loaded machine (a sync behind a bulk of
// 100,000 assertions can take seconds there), and a passing test never
// waits for it.
const patience = 20 * time.Second

// waitDone waits for an actor to terminate.
func waitDone(tb testing.TB, a *Actor) {
	tb.Helper()
	select {
	case <-a.Done():
	case <-time.After(patience):
		tb.Fatalf("actor %s did not terminate", a.Name())
	}
}

// newSys returns a system shut down (and checked for leaks) at test end.
func newSys(tb testing.TB) *System {
	tb.Helper()
	base := runtime.NumGoroutine()
	s := NewSystem(Options{})
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		deadline := time.Now().Add(patience)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				tb.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	return s
}

// rec is one event seen by a recorder.
type rec struct {
	kind string // "assert", "retract", "message", "sync"
	v    preserves.Value
	h    Handle
	turn uint64 // the receiving turn's serial
}

// recorder is an entity logging every event; safe to read from the test
// goroutine.
type recorder struct {
	mu  sync.Mutex
	evs []rec
}

func (r *recorder) add(e rec) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

func (r *recorder) Assert(t *Turn, v preserves.Value, h Handle) error {
	r.add(rec{"assert", v, h, t.serial})
	return nil
}
func (r *recorder) Retract(t *Turn, h Handle) error {
	r.add(rec{"retract", nil, h, t.serial})
	return nil
}
func (r *recorder) Message(t *Turn, v preserves.Value) error {
	r.add(rec{"message", v, 0, t.serial})
	return nil
}
func (r *recorder) Sync(t *Turn, peer *Ref) error {
	r.add(rec{"sync", nil, 0, t.serial})
	t.Message(peer, preserves.Bool(true))
	return nil
}

func (r *recorder) events() []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rec(nil), r.evs...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.evs)
}

// hold spawns an actor that lives (via a never-disarmed preventer) and
// hosts entity e; it returns the actor and a Ref to e.
func hold(tb testing.TB, s *System, name string, e Entity) (*Actor, *Ref) {
	tb.Helper()
	ch := make(chan *Ref, 1)
	a := s.Spawn(name, func(t *Turn) error {
		t.PreventInertCheck()
		ch <- t.Create(e)
		return nil
	})
	select {
	case r := <-ch:
		return a, r
	case <-time.After(patience):
		tb.Fatal("boot timed out")
	}
	return nil, nil
}

// state replays the recorder's assertions and retractions and returns the
// values currently asserted, sorted.
func (r *recorder) state() []preserves.Value {
	live := map[Handle]preserves.Value{}
	for _, e := range r.events() {
		switch e.kind {
		case "assert":
			live[e.h] = e.v
		case "retract":
			delete(live, e.h)
		}
	}
	out := make([]preserves.Value, 0, len(live))
	for _, v := range live {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return preserves.Compare(out[i], out[j]) < 0 })
	return out
}

// kinds lists the recorder's event kinds and values compactly, for
// failure messages and exact comparisons.
func (r *recorder) trace() []string {
	var out []string
	for _, e := range r.events() {
		s := e.kind
		if e.v != nil {
			s += " " + fmt.Sprint(e.v)
		}
		out = append(out, s)
	}
	return out
}

// client spawns a long-lived actor whose FacetRef the test drives with
// Activate; the recorder lives in it.
func client(tb testing.TB, s *System, name string) (FacetRef, *recorder, *Ref) {
	tb.Helper()
	r := &recorder{}
	ch := make(chan struct{})
	var fr FacetRef
	var ref *Ref
	s.Spawn(name, func(t *Turn) error {
		t.PreventInertCheck()
		fr = t.FacetRef()
		ref = t.Create(r)
		close(ch)
		return nil
	})
	<-ch
	return fr, r, ref
}

// do runs fn as a turn of fr's actor, failing the test if the actor is gone.
func do(tb testing.TB, fr FacetRef, fn func(t *Turn) error) {
	tb.Helper()
	if !fr.Actor().Alive() {
		tb.Fatalf("actor %s is gone", fr.Actor().Name())
	}
	fr.Activate(fn)
}

// settle makes fr's actor sync with target and waits for the reply: every
// event fr's actor sent target earlier has then been handled, and every
// reply target's actor sent fr's actor in those turns has been delivered.
func settle(tb testing.TB, fr FacetRef, target *Ref) { settleWithin(tb, fr, target, patience) }

// settleWithin is settle with its own failure-only patience.
func settleWithin(tb testing.TB, fr FacetRef, target *Ref, within time.Duration) {
	tb.Helper()
	ch := make(chan struct{})
	do(tb, fr, func(t *Turn) error {
		t.Sync(target, func(*Turn) error { close(ch); return nil })
		return nil
	})
	select {
	case <-ch:
	case <-time.After(within):
		tb.Fatal("sync timed out")
	}
}

func sym(s string) preserves.Symbol { return preserves.Symbol(s) }

func vals(vs ...preserves.Value) []preserves.Value { return vs }

func seq(vs ...preserves.Value) preserves.Value { return preserves.Sequence(vs) }

func equalVals(a, b []preserves.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !preserves.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
