package dataspace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// traceLog is a Tracer keeping every record.
type traceLog struct {
	mu   sync.Mutex
	recs []*TraceRecord
}

func (l *traceLog) Trace(r *TraceRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

// of returns the records of one actor, in order.
func (l *traceLog) of(id uint64) []*TraceRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*TraceRecord
	for _, r := range l.recs {
		if r.Actor == id {
			out = append(out, r)
		}
	}
	return out
}

// turns returns the turn records of one actor.
func (l *traceLog) turns(id uint64) []*TraceTurn {
	var out []*TraceTurn
	for _, r := range l.of(id) {
		if r.Kind == TraceKindTurn {
			out = append(out, r.Turn)
		}
	}
	return out
}

// turnByID finds a turn of any actor.
func (l *traceLog) turnByID(id uint64) (actor uint64, t *TraceTurn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Kind == TraceKindTurn && r.Turn.ID == id {
			return r.Actor, r.Turn
		}
	}
	return 0, nil
}

func tracedSys(tb testing.TB) (*System, *traceLog) {
	tb.Helper()
	l := &traceLog{}
	s := NewSystem(Options{Trace: l})
	tb.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	})
	return s, l
}

// findAction returns the first action of kind in t satisfying ok.
func findAction(t *TraceTurn, kind TraceActionKind, ok func(a *TraceAction) bool) *TraceAction {
	for i := range t.Actions {
		a := &t.Actions[i]
		if a.Kind == kind && (ok == nil || ok(a)) {
			return a
		}
	}
	return nil
}

func anyTurn(ts []*TraceTurn, kind TraceActionKind, ok func(a *TraceAction) bool) (*TraceTurn, *TraceAction) {
	for _, t := range ts {
		if a := findAction(t, kind, ok); a != nil {
			return t, a
		}
	}
	return nil, nil
}

func TestTraceStartTurnStop(t *testing.T) {
	s, l := tracedSys(t)
	a := s.Spawn("solo", func(t *Turn) error {
		t.Stop() // the boot facet: the root is then inert and the actor ends
		return nil
	})
	waitDone(t, a)
	recs := l.of(a.ID())
	if len(recs) < 3 {
		t.Fatalf("records %d, want start, turn(s), stop", len(recs))
	}
	if recs[0].Kind != TraceKindStart || recs[0].Name != "solo" {
		t.Fatalf("first record %+v, want start of solo", recs[0])
	}
	last := recs[len(recs)-1]
	if last.Kind != TraceKindStop || last.Status != Normal || last.Err != nil {
		t.Fatalf("last record %+v, want a normal stop", last)
	}
	boot := recs[1].Turn
	if boot == nil || boot.Cause.Kind != CauseExternal || boot.Cause.Description != "spawn" {
		t.Fatalf("boot turn %+v, want an external spawn cause", boot)
	}
	start := findAction(boot, ActFacetStart, nil)
	if start == nil || len(start.Path) != 2 {
		t.Fatalf("boot turn actions %+v: want facet-start of [root boot]", boot.Actions)
	}
	stop := findAction(boot, ActFacetStop, func(x *TraceAction) bool { return len(x.Path) == 2 })
	if stop == nil || stop.Reason != StopExplicit || stop.Path[1] != start.Path[1] {
		t.Fatalf("boot turn actions %+v: want an explicit stop of the boot facet", boot.Actions)
	}
	if root := findAction(boot, ActFacetStop, func(x *TraceAction) bool { return len(x.Path) == 1 }); root == nil || root.Reason != StopInert {
		t.Fatalf("boot turn actions %+v: want the inert root stopped", boot.Actions)
	}
}

// A message from one actor to another: the sender's turn enqueues it, and
// the receiver's turn dequeues it, caused by the sender's turn.
func TestTraceCausality(t *testing.T) {
	s, l := tracedSys(t)
	got := make(chan struct{})
	recv, ref := hold(t, s, "receiver", &funcEntity{msg: func(t *Turn, v preserves.Value) error {
		close(got)
		return nil
	}})
	sender := s.Spawn("sender", func(t *Turn) error {
		t.Message(ref, preserves.Rec("hello", Embed(ref)))
		return nil
	})
	<-got
	waitFor(t, "the receiver's turn record", func() bool {
		_, a := anyTurn(l.turns(recv.ID()), ActDequeue, nil)
		return a != nil
	})
	rt, deq := anyTurn(l.turns(recv.ID()), ActDequeue, nil)
	if deq.Event != TraceMessage || deq.Target.OID == 0 || deq.Target.Actor != recv.ID() {
		t.Fatalf("dequeue %+v", deq)
	}
	if rt.Cause.Kind != CauseTurn {
		t.Fatalf("receiver turn cause %+v, want caused-by", rt.Cause)
	}
	who, st := l.turnByID(rt.Cause.Turn)
	if who != sender.ID() {
		t.Fatalf("cause turn %d belongs to actor %d, want the sender %d", rt.Cause.Turn, who, sender.ID())
	}
	enq := findAction(st, ActEnqueue, nil)
	if enq == nil || enq.Target != deq.Target || !preserves.Equal(enq.Value, deq.Value) {
		t.Fatalf("sender turn %+v does not enqueue what the receiver dequeued (%+v)", st.Actions, deq)
	}
}

// funcEntity handles messages with a function.
type funcEntity struct {
	BaseEntity
	msg func(t *Turn, v preserves.Value) error
}

func (e *funcEntity) Message(t *Turn, v preserves.Value) error { return e.msg(t, v) }

func TestTraceSpawnLink(t *testing.T) {
	s, l := tracedSys(t)
	var child *Actor
	booted := make(chan struct{})
	parent := s.Spawn("parent", func(t *Turn) error {
		child = t.SpawnLink("child", func(t *Turn) error {
			close(booted)
			t.PreventInertCheck()
			return nil
		})
		return nil
	})
	<-booted
	var boot *TraceTurn
	waitFor(t, "the parent's boot turn", func() bool {
		ts := l.turns(parent.ID())
		if len(ts) > 0 {
			boot = ts[0]
		}
		return boot != nil
	})
	sp := findAction(boot, ActSpawn, nil)
	if sp == nil || sp.Child != child.ID() || !sp.Link {
		t.Fatalf("boot actions %+v: want a linked spawn of the child", boot.Actions)
	}
	ln := findAction(boot, ActLink, nil)
	if ln == nil || ln.Child != child.ID() || ln.ChildToParent == 0 || ln.ParentToChild == 0 || ln.ChildToParent == ln.ParentToChild {
		t.Fatalf("boot actions %+v: want a link with both handles", boot.Actions)
	}
	waitFor(t, "the child's boot turn", func() bool { return len(l.turns(child.ID())) > 0 })
	cb := l.turns(child.ID())[0]
	if cb.Cause.Kind != CauseTurn || cb.Cause.Turn != boot.ID {
		t.Fatalf("child boot cause %+v, want caused-by %d", cb.Cause, boot.ID)
	}
}

func TestTraceLaterIsInternal(t *testing.T) {
	s, l := tracedSys(t)
	ran := make(chan struct{})
	a := s.Spawn("later", func(t *Turn) error {
		t.PreventInertCheck()
		t.Later(func(t *Turn) error { close(ran); return nil })
		return nil
	})
	<-ran
	waitFor(t, "the later turn", func() bool {
		_, d := anyTurn(l.turns(a.ID()), ActDequeueInternal, nil)
		return d != nil
	})
	ts := l.turns(a.ID())
	bt, enq := anyTurn(ts, ActEnqueueInternal, nil)
	if enq == nil || enq.Value != nil || enq.Event != TraceMessage {
		t.Fatalf("turns %+v: want an internal enqueue of an opaque message", ts)
	}
	lt, _ := anyTurn(ts, ActDequeueInternal, nil)
	if lt.Cause.Kind != CauseTurn || lt.Cause.Turn != bt.ID {
		t.Fatalf("later turn cause %+v, want caused-by %d", lt.Cause, bt.ID)
	}
}

func TestTraceLinkedTaskRelease(t *testing.T) {
	s, l := tracedSys(t)
	a := s.Spawn("task", func(t *Turn) error {
		t.LinkedTask("quick", func(ctx context.Context) error { return nil })
		return nil
	})
	waitDone(t, a)
	ts := l.turns(a.ID())
	_, start := anyTurn(ts, ActLinkedTaskStart, nil)
	if start == nil || start.TaskName != "quick" || start.Task == 0 {
		t.Fatalf("turns %+v: want a linked-task-start", ts)
	}
	var rel *TraceTurn
	for _, x := range ts {
		if x.Cause.Kind == CauseTaskRelease {
			rel = x
		}
	}
	if rel == nil || rel.Cause.Task != start.Task {
		t.Fatalf("turns %+v: want a linked-task-release turn for task %d", ts, start.Task)
	}
	if findAction(rel, ActFacetStop, nil) == nil {
		t.Fatalf("release turn %+v does not stop the facet", rel.Actions)
	}
}

func TestTraceTimerCauses(t *testing.T) {
	s, l := tracedSys(t)
	fired, ticked := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a := s.Spawn("timers", func(t *Turn) error {
		t.After(time.Millisecond, func(t *Turn) error { close(fired); return nil })
		t.Every(time.Hour, func(t *Turn) error { once.Do(func() { close(ticked) }); return nil })
		return nil
	})
	<-fired
	<-ticked
	var delay, periodic *TraceTurn
	waitFor(t, "both timer turns", func() bool {
		for _, x := range l.turns(a.ID()) {
			switch x.Cause.Kind {
			case CauseDelay:
				delay = x
			case CausePeriodic:
				periodic = x
			}
		}
		return delay != nil && periodic != nil
	})
	boot := l.turns(a.ID())[0]
	if delay.Cause.Turn != boot.ID || delay.Cause.Period != time.Millisecond {
		t.Fatalf("delay cause %+v, want set by turn %d for 1ms", delay.Cause, boot.ID)
	}
	if periodic.Cause.Period != time.Hour {
		t.Fatalf("periodic cause %+v", periodic.Cause)
	}
}

var errTraceBoom = errors.New("boom")

// A failed turn lists what it did except its discarded output; the stop
// record carries the error; the crashed actor's held assertion is
// retracted by a cleanup turn.
func TestTraceFailure(t *testing.T) {
	s, l := tracedSys(t)
	sink, sinkRef := hold(t, s, "sink", &BaseEntity{})
	_ = sink
	var victim *Ref
	ready := make(chan struct{})
	a := s.Spawn("crasher", func(t *Turn) error {
		t.Assert(sinkRef, preserves.String("held"))
		victim = t.Create(&funcEntity{msg: func(t *Turn, v preserves.Value) error {
			t.Message(sinkRef, preserves.String("lost"))
			t.Spawn("never", func(*Turn) error { return nil })
			return errTraceBoom
		}})
		close(ready)
		return nil
	})
	<-ready
	s.Spawn("trigger", func(t *Turn) error {
		t.Message(victim, preserves.Bool(true))
		t.Stop()
		return nil
	})
	waitDone(t, a)
	recs := l.of(a.ID())
	last := recs[len(recs)-1]
	if last.Kind != TraceKindStop || last.Status != Failed || !errors.Is(last.Err, errTraceBoom) {
		t.Fatalf("last record %+v, want a failed stop with boom", last)
	}
	var failed, cleanup *TraceTurn
	for _, r := range recs {
		if r.Kind != TraceKindTurn {
			continue
		}
		if r.Turn.Failed {
			failed = r.Turn
		}
		if r.Turn.Cause.Kind == CauseCleanup {
			cleanup = r.Turn
		}
	}
	if failed == nil || findAction(failed, ActDequeue, nil) == nil || findAction(failed, ActEnqueue, nil) != nil || findAction(failed, ActSpawn, nil) != nil {
		t.Fatalf("failed turn %+v: want its dequeue and no enqueue or spawn", failed)
	}
	if cleanup == nil || findAction(cleanup, ActEnqueue, func(x *TraceAction) bool { return x.Event == TraceRetract }) == nil {
		t.Fatalf("cleanup turn %+v: want the held assertion retracted", cleanup)
	}
}

// Without a tracer no actor carries tracing state.
func TestTraceOffByDefault(t *testing.T) {
	s := newSys(t)
	a := s.Spawn("plain", func(t *Turn) error {
		if t.a.tr != nil {
			return errors.New("tracing state without a tracer")
		}
		return nil
	})
	waitDone(t, a)
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
}
