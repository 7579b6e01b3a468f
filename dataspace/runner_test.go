package dataspace

import (
	"sync/atomic"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// countWaker counts its wake-ups.
type countWaker struct{ n atomic.Int32 }

func (w *countWaker) Wake() { w.n.Add(1) }

// wakeOnMessage asks for w's wake-up from every turn it receives a
// message in, and records whether the turn could defer it.
type wakeOnMessage struct {
	BaseEntity
	w        *countWaker
	deferred atomic.Int32
	direct   atomic.Int32
}

func (e *wakeOnMessage) Message(t *Turn, _ preserves.Value) error {
	if t.WakeLater(e.w) {
		e.deferred.Add(1)
	} else {
		e.direct.Add(1)
		e.w.Wake()
	}
	return nil
}

// The wake-ups a Burst's hand-offs ask for wait for its End, then come
// once per request; a plain Activate runs them before it returns; a turn
// outside the scheduler (ActivateNow) cannot defer one.
func TestWakeLaterAfterTheHandoffs(t *testing.T) {
	s := newSys(t)
	w := &countWaker{}
	sink := &wakeOnMessage{w: w}
	ref, sinkFr := hostEntity(s, "sink", sink)
	_, src := hostEntity(s, "source", BaseEntity{})
	send := func(t *Turn) error { t.Message(ref, preserves.Int(1)); return nil }
	// Once its boot's drain has ended, the sink is idle: a send claims it.
	waitFor(t, "the sink to be idle", func() bool {
		m := &sinkFr.a.mb
		m.mu.Lock()
		defer m.mu.Unlock()
		return !m.running
	})

	var b Burst
	for range 3 {
		if !b.ActivateAccount(src, nil, send) {
			t.Fatal("source gone")
		}
	}
	// The sink was idle, so each send's turn ran on this goroutine, in
	// the burst, and deferred its wake-up.
	if got := sink.deferred.Load() + sink.direct.Load(); got != 3 {
		t.Fatalf("%d messages handled before End, want 3 (handed off)", got)
	}
	if n := w.n.Load(); n != sink.direct.Load() {
		t.Fatalf("%d wake-ups before End with %d not deferred", n, sink.direct.Load())
	}
	b.End()
	if n := w.n.Load(); n != 3 {
		t.Fatalf("%d wake-ups after End, want 3", n)
	}

	src.Activate(send)
	if n := w.n.Load(); n != 4 {
		t.Fatalf("%d wake-ups after Activate returned, want 4", n)
	}

	var deferred atomic.Bool
	sinkFr.ActivateNow(func(t *Turn) error { deferred.Store(t.WakeLater(w)); return nil })
	if deferred.Load() {
		t.Fatal("ActivateNow's turn deferred a wake-up nobody runs")
	}
}

// A hub others send to faster than one runner visits it gets a goroutine
// of its own: every message still arrives, in order per sender.
func TestBacklogHubDrainsOnItsOwn(t *testing.T) {
	s := newSys(t)
	const senders, each = 4, 200
	got := make([][]int64, senders)
	var total atomic.Int32
	hub := &funcEntity{msg: func(_ *Turn, v preserves.Value) error {
		r := v.(*preserves.Record)
		i, n := int(r.Fields[0].(preserves.Int)), int64(r.Fields[1].(preserves.Int))
		got[i] = append(got[i], n) // the hub's turns: one at a time
		total.Add(1)
		return nil
	}}
	ref, _ := hostEntity(s, "hub", hub)
	done := make(chan struct{})
	for i := range senders {
		_, fr := hostEntity(s, "sender", BaseEntity{})
		go func() {
			defer func() { done <- struct{}{} }()
			for n := range each {
				fr.Activate(func(t *Turn) error {
					t.Message(ref, preserves.Rec("m", preserves.Int(int64(i)), preserves.Int(int64(n))))
					return nil
				})
			}
		}()
	}
	for range senders {
		<-done
	}
	waitFor(t, "every message at the hub", func() bool { return total.Load() == senders*each })
	for i, ns := range got {
		for k, n := range ns {
			if n != int64(k) {
				t.Fatalf("sender %d: message %d arrived as number %d", i, n, k)
			}
		}
	}
}

// A message handed to a runner for an actor whose turn lock another
// goroutine holds (a turn in progress) goes with the claim to a goroutine
// of its own, and arrives once the lock is free.
func TestHandoffToBusyActorKeepsTheBatch(t *testing.T) {
	s := newSys(t)
	c := newCounter()
	ref, fr := hostEntity(s, "busy", c)
	_, src := hostEntity(s, "source", BaseEntity{})
	waitFor(t, "the actor to be idle", func() bool {
		m := &fr.a.mb
		m.mu.Lock()
		defer m.mu.Unlock()
		return !m.running
	})
	entered, release := make(chan struct{}), make(chan struct{})
	go fr.ActivateNow(func(*Turn) error { close(entered); <-release; return nil })
	<-entered
	for range 3 {
		src.Activate(func(t *Turn) error { t.Message(ref, preserves.Int(1)); return nil })
	}
	if n := c.n.Load(); n != 0 {
		t.Fatalf("%d messages handled while the actor was busy", n)
	}
	close(release)
	waitFor(t, "every message", func() bool { return c.n.Load() == 3 })
}
