package dataspace

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDone waits for an actor to terminate.
func waitDone(tb testing.TB, a *Actor) {
	tb.Helper()
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
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
		deadline := time.Now().Add(5 * time.Second)
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

func (r *recorder) Assert(_ *Turn, v preserves.Value, h Handle) error {
	r.add(rec{"assert", v, h})
	return nil
}
func (r *recorder) Retract(_ *Turn, h Handle) error { r.add(rec{"retract", nil, h}); return nil }
func (r *recorder) Message(_ *Turn, v preserves.Value) error {
	r.add(rec{"message", v, 0})
	return nil
}
func (r *recorder) Sync(t *Turn, peer *Ref) error {
	r.add(rec{"sync", nil, 0})
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
	case <-time.After(5 * time.Second):
		tb.Fatal("boot timed out")
	}
	return nil, nil
}
