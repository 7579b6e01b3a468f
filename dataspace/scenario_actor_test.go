package dataspace

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// Runtime spec §18 scenarios 1–26: actors and facets.

var errBoom = errors.New("boom")

func TestScenario01_EmptyBootExitsNormal(t *testing.T) {
	s := newSys(t)
	var hooks atomic.Int32
	var hookErr atomic.Value
	a := s.Spawn("a", func(t *Turn) error {
		t.AddExitHook(func(_ *Turn, err error) {
			hooks.Add(1)
			hookErr.Store(fmtErr(err))
		})
		return nil
	})
	waitDone(t, a)
	if a.Status() != Normal || a.Err() != nil {
		t.Fatalf("status %v err %v", a.Status(), a.Err())
	}
	if hooks.Load() != 1 || hookErr.Load() != "<nil>" {
		t.Fatalf("exit hooks ran %d times with %v", hooks.Load(), hookErr.Load())
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestScenario02_EntityAloneDoesNotKeepAlive(t *testing.T) {
	s := newSys(t)
	a := s.Spawn("a", func(t *Turn) error {
		t.Create(&recorder{})
		return nil
	})
	waitDone(t, a)
	if a.Status() != Normal {
		t.Fatalf("status %v", a.Status())
	}
}

func TestScenario03_PreventerKeepsAliveUntilShutdown(t *testing.T) {
	s := newSys(t)
	var stopped atomic.Int32
	fr, r, ref := client(t, s, "probe")
	_ = r
	var afr FacetRef
	ready := make(chan struct{})
	a := s.Spawn("a", func(t *Turn) error {
		t.PreventInertCheck()
		t.OnStop(func(*Turn) error { stopped.Add(1); return nil })
		afr = t.FacetRef()
		close(ready)
		return nil
	})
	<-ready
	// Several later turns go by; the actor stays up.
	for range 3 {
		settle(t, fr, ref)
		do(t, afr, func(*Turn) error { return nil })
	}
	if !a.Alive() {
		t.Fatal("actor with an armed preventer exited")
	}
	do(t, afr, func(t *Turn) error { t.Shutdown(); return nil })
	waitDone(t, a)
	if a.Status() != Normal || stopped.Load() != 1 {
		t.Fatalf("status %v, stop actions ran %d times", a.Status(), stopped.Load())
	}
}

func TestScenario04_DisarmedPreventerIsInertAtPreCommit(t *testing.T) {
	s := newSys(t)
	a := s.Spawn("a", func(t *Turn) error {
		disarm := t.PreventInertCheck()
		disarm()
		disarm() // idempotent
		return nil
	})
	waitDone(t, a)
	if a.Status() != Normal {
		t.Fatalf("status %v", a.Status())
	}
}

func TestScenario05_AssertionKeepsAliveAndStopRootRetracts(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	var afr FacetRef
	ready := make(chan struct{})
	var h Handle
	a := s.Spawn("a", func(t *Turn) error {
		h = t.Assert(eref, sym("x"))
		afr = t.FacetRef()
		close(ready)
		return nil
	})
	<-ready
	waitFor(t, "assert", func() bool { return e.len() == 1 })
	if !a.Alive() {
		t.Fatal("actor holding an assertion exited")
	}
	if ev := e.events()[0]; ev.kind != "assert" || ev.h != h || !preserves.Equal(ev.v, sym("x")) {
		t.Fatalf("got %+v", ev)
	}
	do(t, afr, func(t *Turn) error { t.StopRoot(); return nil })
	waitDone(t, a)
	waitFor(t, "retract", func() bool { return e.len() == 2 })
	if ev := e.events()[1]; ev.kind != "retract" || ev.h != h {
		t.Fatalf("got %+v", ev)
	}
	if a.Status() != Normal {
		t.Fatalf("status %v", a.Status())
	}
}

func TestScenario06_BootErrorCrashes(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	efr, _, _ := client(t, s, "prober")
	_, eref := hold(t, s, "e", e)
	var hooks, stops atomic.Int32
	a := s.Spawn("a", func(t *Turn) error {
		t.Message(eref, sym("never"))
		t.OnStop(func(*Turn) error { stops.Add(1); return nil })
		t.AddExitHook(func(_ *Turn, err error) {
			if errors.Is(err, errBoom) {
				hooks.Add(1)
			}
		})
		return errBoom
	})
	waitDone(t, a)
	if a.Status() != Failed || !errors.Is(a.Err(), errBoom) {
		t.Fatalf("status %v err %v", a.Status(), a.Err())
	}
	if hooks.Load() != 1 || stops.Load() != 0 {
		t.Fatalf("hooks %d stops %d", hooks.Load(), stops.Load())
	}
	// A probe sent now arrives after anything the crashed actor could
	// have sent; it must be the only message.
	do(t, efr, func(t *Turn) error { t.Message(eref, sym("probe")); return nil })
	waitFor(t, "probe", func() bool { return e.len() >= 1 })
	if tr := e.trace(); !slices.Equal(tr, []string{"message probe"}) {
		t.Fatalf("got %v", tr)
	}
}

// failer asserts y to e and sends z on "ok", and fails on "fail".
type failer struct {
	BaseEntity
	e *Ref
}

func (f *failer) Message(t *Turn, v preserves.Value) error {
	if preserves.Equal(v, sym("fail")) {
		return errBoom
	}
	t.Assert(f.e, sym("y"))
	t.Message(f.e, sym("z"))
	return nil
}

func TestScenario07_ErrorMidBatchRollsBack(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	var stops atomic.Int32
	var h1, h2 Handle
	var xref *Ref
	ready := make(chan struct{})
	a := s.Spawn("a", func(t *Turn) error {
		h1 = t.Assert(eref, sym("a1"))
		h2 = t.Assert(eref, sym("a2"))
		t.OnStop(func(*Turn) error { stops.Add(1); return nil })
		xref = t.Create(&failer{e: eref})
		close(ready)
		return nil
	})
	<-ready
	waitFor(t, "assertions", func() bool { return e.len() == 2 })
	cfr, _, _ := client(t, s, "c")
	do(t, cfr, func(t *Turn) error {
		t.Message(xref, sym("ok"))   // effects must vanish
		t.Message(xref, sym("fail")) // same batch
		return nil
	})
	waitDone(t, a)
	waitFor(t, "retractions", func() bool { return e.len() == 4 })
	evs := e.events()
	if evs[2].kind != "retract" || evs[2].h != h2 || evs[3].kind != "retract" || evs[3].h != h1 {
		t.Fatalf("want retractions newest first, got %v", e.trace())
	}
	if !errors.Is(a.Err(), errBoom) || stops.Load() != 0 {
		t.Fatalf("err %v stops %d", a.Err(), stops.Load())
	}
}

// stopOrder builds P with children C1, C2, each asserting to e and
// registering a stop action that appends to order.
func TestScenario08_StopOrderChildrenFirst(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	var order []string
	var p FacetID
	fr, _, _ := client(t, s, "a")
	do(t, fr, func(t *Turn) error {
		var err error
		p, err = t.Facet(func(t *Turn) error {
			t.Assert(eref, sym("p"))
			t.OnStop(func(*Turn) error { order = append(order, "P"); return nil })
			for _, name := range []string{"C1", "C2"} {
				if _, err := t.Facet(func(t *Turn) error {
					t.Assert(eref, sym(name))
					t.PreventInertCheck()
					t.OnStop(func(*Turn) error { order = append(order, name); return nil })
					return nil
				}); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	})
	waitFor(t, "assertions", func() bool { return e.len() == 3 })
	do(t, fr, func(t *Turn) error { t.StopFacet(p); return nil })
	waitFor(t, "retractions", func() bool { return e.len() == 6 })
	if !slices.Equal(order, []string{"C1", "C2", "P"}) {
		t.Fatalf("stop actions ran %v", order)
	}
	evs := e.events()
	byH := map[Handle]string{}
	for _, ev := range evs[:3] {
		byH[ev.h] = string(ev.v.(preserves.Symbol))
	}
	var retracted []string
	for _, ev := range evs[3:] {
		retracted = append(retracted, byH[ev.h])
	}
	if !slices.Equal(retracted, []string{"C1", "C2", "p"}) {
		t.Fatalf("retractions in order %v", retracted)
	}
	// One batch: all three in the same receiving turn.
	if evs[3].turn != evs[5].turn {
		t.Fatal("retractions split across turns")
	}
}

func TestScenario09_StopActionAssertionSurvives(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	fr, _, probe := client(t, s, "a")
	var p FacetID
	do(t, fr, func(t *Turn) error {
		var err error
		p, err = t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			t.OnStop(func(t *Turn) error { t.Assert(eref, sym("w")); return nil })
			return nil
		})
		return err
	})
	do(t, fr, func(t *Turn) error { t.StopFacet(p); return nil })
	settle(t, fr, eref)
	settle(t, fr, probe)
	if st := e.state(); !equalVals(st, vals(sym("w"))) {
		t.Fatalf("state %v", st)
	}
}

func TestScenario10_DescendantStopActionAssertionDropped(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	fr, _, _ := client(t, s, "a")
	var p FacetID
	do(t, fr, func(t *Turn) error {
		var err error
		p, err = t.Facet(func(t *Turn) error {
			_, err := t.Facet(func(t *Turn) error {
				t.PreventInertCheck()
				t.OnStop(func(t *Turn) error {
					t.Assert(eref, sym("dropped"))
					t.Message(eref, sym("sent"))
					return nil
				})
				return nil
			})
			return err
		})
		return err
	})
	do(t, fr, func(t *Turn) error { t.StopFacet(p); return nil })
	settle(t, fr, eref)
	if tr := e.trace(); !slices.Equal(tr, []string{"message sent", "sync"}) {
		t.Fatalf("got %v", tr)
	}
}

func TestScenario11_StopCascadesToRoot(t *testing.T) {
	s := newSys(t)
	var child FacetRef
	ready := make(chan struct{})
	a := s.Spawn("a", func(t *Turn) error {
		_, err := t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			child = t.FacetRef()
			close(ready)
			return nil
		})
		return err
	})
	<-ready
	if !a.Alive() {
		t.Fatal("exited early")
	}
	child.Activate(func(t *Turn) error { t.Stop(); return nil })
	waitDone(t, a)
	if a.Status() != Normal {
		t.Fatalf("status %v", a.Status())
	}
}

func TestScenario12_RetractingLastAssertionDoesNotStop(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	var fr FacetRef
	var h Handle
	ready := make(chan struct{})
	a := s.Spawn("a", func(t *Turn) error {
		h = t.Assert(eref, sym("x"))
		fr = t.FacetRef()
		close(ready)
		return nil
	})
	<-ready
	do(t, fr, func(t *Turn) error { t.Retract(h); return nil })
	settle(t, fr, eref)
	do(t, fr, func(*Turn) error { return nil })
	if !a.Alive() {
		t.Fatal("facet stopped after retracting its last assertion")
	}
	if tr := e.trace(); !slices.Equal(tr, []string{"assert x", "retract", "sync"}) {
		t.Fatalf("got %v", tr)
	}
}

func TestScenario13_EventsToStoppedFacetIgnored(t *testing.T) {
	s := newSys(t)
	r := &recorder{}
	probe := &recorder{}
	var bfr FacetRef
	var f FacetID
	var rref, pref *Ref
	ready := make(chan struct{})
	s.Spawn("b", func(t *Turn) error {
		t.PreventInertCheck()
		bfr = t.FacetRef()
		pref = t.Create(probe)
		var err error
		f, err = t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			rref = t.Create(r)
			return nil
		})
		close(ready)
		return err
	})
	<-ready
	afr, _, _ := client(t, s, "a")
	var h Handle
	do(t, afr, func(t *Turn) error { h = t.Assert(rref, sym("x")); return nil })
	settle(t, afr, rref)
	do(t, bfr, func(t *Turn) error { t.StopFacet(f); return nil })
	do(t, afr, func(t *Turn) error {
		t.Retract(h)
		t.Message(rref, sym("m"))
		t.Assert(rref, sym("y"))
		t.Message(pref, sym("done"))
		return nil
	})
	waitFor(t, "probe", func() bool { return probe.len() == 1 })
	if tr := r.trace(); !slices.Equal(tr, []string{"assert x", "sync"}) {
		t.Fatalf("stopped facet's entity saw %v", tr)
	}
}

func TestScenario14_UnknownAndDoubleRetractAreNoOps(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	fr, _, _ := client(t, s, "a")
	var h Handle
	do(t, fr, func(t *Turn) error { h = t.Assert(eref, sym("x")); return nil })
	do(t, fr, func(t *Turn) error {
		t.Retract(h)
		t.Retract(h)
		t.Retract(h + 1_000_000)
		t.Retract(0)
		return nil
	})
	do(t, fr, func(t *Turn) error { t.Retract(h); return nil })
	settle(t, fr, eref)
	if tr := e.trace(); !slices.Equal(tr, []string{"assert x", "retract", "sync"}) {
		t.Fatalf("got %v", tr)
	}
	if !fr.Actor().Alive() {
		t.Fatal("actor died")
	}
}

func TestScenario15_AssertRetractSameTurnOneBatch(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	fr, _, _ := client(t, s, "a")
	do(t, fr, func(t *Turn) error {
		h := t.Assert(eref, sym("x"))
		t.Retract(h)
		return nil
	})
	waitFor(t, "events", func() bool { return e.len() == 2 })
	evs := e.events()
	if evs[0].kind != "assert" || evs[1].kind != "retract" || evs[0].h != evs[1].h {
		t.Fatalf("got %v", e.trace())
	}
	if evs[0].turn != evs[1].turn {
		t.Fatal("not handled in one turn")
	}
}

func TestScenario17_PerPairFIFO(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	fr, _, _ := client(t, s, "a")
	do(t, fr, func(t *Turn) error { t.Message(eref, preserves.Int(1)); return nil })
	do(t, fr, func(t *Turn) error { t.Message(eref, preserves.Int(2)); return nil })
	do(t, fr, func(t *Turn) error {
		for i := 3; i <= 6; i++ {
			t.Message(eref, preserves.Int(i))
		}
		return nil
	})
	waitFor(t, "messages", func() bool { return e.len() == 6 })
	evs := e.events()
	for i, ev := range evs {
		if !preserves.Equal(ev.v, preserves.Int(i+1)) {
			t.Fatalf("order %v", e.trace())
		}
	}
	if evs[0].turn == evs[1].turn {
		t.Fatal("m1 and m2 were handled in one turn")
	}
	for _, ev := range evs[3:] {
		if ev.turn != evs[2].turn {
			t.Fatal("one sending turn's events split across receiving turns")
		}
	}
}

func TestScenario18_SelfMessageInLaterTurn(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	var sent uint64
	var ref *Ref
	var fr FacetRef
	ready := make(chan struct{})
	s.Spawn("a", func(t *Turn) error {
		t.PreventInertCheck()
		ref = t.Create(e)
		fr = t.FacetRef()
		close(ready)
		return nil
	})
	<-ready
	do(t, fr, func(t *Turn) error {
		sent = t.serial
		t.Message(ref, sym("self"))
		if e.len() != 0 {
			return errors.New("delivered synchronously")
		}
		return nil
	})
	waitFor(t, "message", func() bool { return e.len() == 1 })
	if e.events()[0].turn <= sent {
		t.Fatal("self message handled in the sending turn")
	}
}

func TestScenario19_SyncAfterAssert(t *testing.T) {
	s := newSys(t)
	e := &recorder{}
	_, eref := hold(t, s, "e", e)
	fr, _, _ := client(t, s, "a")
	var seen []string
	ch := make(chan struct{})
	do(t, fr, func(t *Turn) error {
		t.Assert(eref, sym("x"))
		t.Sync(eref, func(*Turn) error {
			seen = e.trace()
			close(ch)
			return nil
		})
		return nil
	})
	<-ch
	if !slices.Equal(seen, []string{"assert x", "sync"}) {
		t.Fatalf("at sync reply E had seen %v", seen)
	}
}

func TestScenario20_LinkedTaskOutcomes(t *testing.T) {
	t.Run("normal stops facet", func(t *testing.T) {
		s := newSys(t)
		var stopped atomic.Int32
		fr, _, _ := client(t, s, "a")
		do(t, fr, func(t *Turn) error {
			_, err := t.Facet(func(t *Turn) error {
				t.PreventInertCheck() // the facet must not be inert anyway
				t.OnStop(func(*Turn) error { stopped.Add(1); return nil })
				t.LinkedTask("ok", func(context.Context) error { return nil })
				return nil
			})
			return err
		})
		waitFor(t, "facet stop", func() bool { return stopped.Load() == 1 })
		if !fr.Actor().Alive() {
			t.Fatal("actor died")
		}
	})
	t.Run("keep facet", func(t *testing.T) {
		s := newSys(t)
		release := make(chan struct{})
		ended := make(chan struct{})
		var fr FacetRef
		ready := make(chan struct{})
		a := s.Spawn("a", func(t *Turn) error {
			fr = t.FacetRef()
			t.LinkedTask("keep", func(context.Context) error {
				<-release
				defer close(ended)
				return ErrKeepFacet
			})
			close(ready)
			return nil
		})
		<-ready
		close(release)
		<-ended
		// The task's outcome is applied under the turn lock; once an
		// Activate has gone through after it, the actor has seen it.
		waitFor(t, "task unregistered", func() bool {
			n := -1
			fr.Activate(func(t *Turn) error { n = t.active.nTasks; return nil })
			return n == 0
		})
		if !a.Alive() {
			t.Fatal("KeepFacet stopped an otherwise inert facet")
		}
	})
	t.Run("error crashes", func(t *testing.T) {
		s := newSys(t)
		a := s.Spawn("a", func(t *Turn) error {
			t.LinkedTask("bad", func(context.Context) error { return errBoom })
			return nil
		})
		waitDone(t, a)
		if a.Status() != Failed || !errors.Is(a.Err(), errBoom) {
			t.Fatalf("status %v err %v", a.Status(), a.Err())
		}
	})
	t.Run("cancelled on facet stop", func(t *testing.T) {
		s := newSys(t)
		a := s.Spawn("a", func(t *Turn) error {
			_, err := t.Facet(func(t *Turn) error {
				t.LinkedTask("wait", func(ctx context.Context) error {
					<-ctx.Done()
					return errBoom // ignored: cancelled
				})
				t.Later(func(t *Turn) error { t.Stop(); return nil })
				return nil
			})
			return err
		})
		waitDone(t, a)
		if a.Status() != Normal {
			t.Fatalf("status %v err %v", a.Status(), a.Err())
		}
	})
}

func TestScenario21_After(t *testing.T) {
	s := newSys(t)
	var ran atomic.Int32
	// Stopped before d: never runs. Done closes only once the timer's
	// goroutine has returned, so the check below is final.
	a := s.Spawn("a", func(t *Turn) error {
		id, err := t.Facet(func(t *Turn) error {
			t.After(time.Hour, func(*Turn) error { ran.Add(1); return nil })
			return nil
		})
		t.StopFacet(id)
		return err
	})
	waitDone(t, a)
	if ran.Load() != 0 || a.Status() != Normal {
		t.Fatalf("ran %d status %v", ran.Load(), a.Status())
	}
	b := s.Spawn("b", func(t *Turn) error {
		t.After(time.Millisecond, func(t *Turn) error {
			ran.Add(1)
			t.Later(func(t *Turn) error { t.StopRoot(); return nil })
			return nil
		})
		return nil
	})
	waitDone(t, b)
	if ran.Load() != 1 {
		t.Fatalf("ran %d times", ran.Load())
	}
}

func TestScenario22_Every(t *testing.T) {
	s := newSys(t)
	var mu sync.Mutex
	var turns []uint64
	var boot uint64
	a := s.Spawn("a", func(t *Turn) error {
		boot = t.serial
		t.Every(2*time.Millisecond, func(t *Turn) error {
			mu.Lock()
			defer mu.Unlock()
			turns = append(turns, t.serial)
			if len(turns) == 3 {
				t.Stop() // stops the boot facet, hence the actor
			}
			return nil
		})
		return nil
	})
	waitDone(t, a)
	mu.Lock()
	defer mu.Unlock()
	if len(turns) != 3 {
		t.Fatalf("ran %d times", len(turns))
	}
	if turns[0] == boot || turns[0] == turns[1] || turns[1] == turns[2] {
		t.Fatalf("ticks not in separate turns: boot %d, %v", boot, turns)
	}
}

func TestScenario23_SpawnInFailedTurnNeverBoots(t *testing.T) {
	s := newSys(t)
	var booted atomic.Bool
	var child *Actor
	a := s.Spawn("a", func(t *Turn) error {
		child = t.Spawn("child", func(*Turn) error { booted.Store(true); return nil })
		return errBoom
	})
	waitDone(t, a)
	waitDone(t, child)
	if booted.Load() || child.Status() != Dropped {
		t.Fatalf("booted %v status %v", booted.Load(), child.Status())
	}
}

func TestScenario24_SpawnLink(t *testing.T) {
	cases := []struct {
		name  string
		child func(t *Turn) error
	}{
		{"child exits normally", func(t *Turn) error {
			t.PreventInertCheck()
			t.Later(func(t *Turn) error { t.StopRoot(); return nil })
			return nil
		}},
		{"child crashes", func(t *Turn) error {
			t.PreventInertCheck()
			t.Later(func(*Turn) error { return errBoom })
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSys(t)
			var stopped atomic.Int32
			var child *Actor
			fr, _, _ := client(t, s, "parent")
			do(t, fr, func(t *Turn) error {
				_, err := t.Facet(func(t *Turn) error {
					t.OnStop(func(*Turn) error { stopped.Add(1); return nil })
					child = t.SpawnLink("child", c.child)
					return nil
				})
				return err
			})
			waitDone(t, child)
			waitFor(t, "spawning facet stop", func() bool { return stopped.Load() == 1 })
			if !fr.Actor().Alive() {
				t.Fatal("parent actor died")
			}
		})
	}
	t.Run("parent facet stops", func(t *testing.T) {
		s := newSys(t)
		var child *Actor
		var childStopped atomic.Int32
		fr, _, _ := client(t, s, "parent")
		var f FacetID
		do(t, fr, func(t *Turn) error {
			var err error
			f, err = t.Facet(func(t *Turn) error {
				child = t.SpawnLink("child", func(t *Turn) error {
					t.PreventInertCheck()
					t.OnStop(func(*Turn) error { childStopped.Add(1); return nil })
					return nil
				})
				return nil
			})
			return err
		})
		do(t, fr, func(t *Turn) error { t.StopFacet(f); return nil })
		waitDone(t, child)
		if child.Status() != Normal || childStopped.Load() != 1 {
			t.Fatalf("child status %v, stop actions %d", child.Status(), childStopped.Load())
		}
	})
}

func TestScenario25_SpawnLinkIdleChildStopsParentFacet(t *testing.T) {
	s := newSys(t)
	var stopped atomic.Int32
	fr, _, _ := client(t, s, "parent")
	do(t, fr, func(t *Turn) error {
		_, err := t.Facet(func(t *Turn) error {
			t.OnStop(func(*Turn) error { stopped.Add(1); return nil })
			t.SpawnLink("child", func(*Turn) error { return nil })
			return nil
		})
		return err
	})
	waitFor(t, "spawning facet stop", func() bool { return stopped.Load() == 1 })
}

// blocker blocks its actor inside Message until released, so the test can
// look at the actor's mailbox while it is busy.
type blocker struct {
	recorder
	entered chan struct{}
	release chan struct{}
}

func (b *blocker) Message(t *Turn, v preserves.Value) error {
	if preserves.Equal(v, sym("block")) {
		close(b.entered)
		<-b.release
		return nil
	}
	return b.recorder.Message(t, v)
}

// block makes fr's actor send "block" to ref, b's entity, and returns
// once b's actor is blocked in that turn. The send uses ActivateNow: a
// plain Activate would run b's turn on this goroutine (hand-off), which
// would then block the test itself.
func (b *blocker) block(fr FacetRef, ref *Ref) {
	fr.ActivateNow(func(t *Turn) error { t.Message(ref, sym("block")); return nil })
	<-b.entered
}

func TestScenario26_ExitHooksAfterRetractions(t *testing.T) {
	s := newSys(t)
	b := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	bActor, bref := hold(t, s, "b", b)
	var order []string
	var xref *Ref
	ready := make(chan struct{})
	a := s.Spawn("a", func(t *Turn) error {
		t.Assert(bref, sym("x"))
		t.Assert(bref, sym("y"))
		xref = t.Create(&failer{e: bref})
		for _, name := range []string{"hook1", "hook2"} {
			t.AddExitHook(func(*Turn, error) {
				// Both retractions must already sit in b's mailbox.
				bActor.mb.mu.Lock()
				n := 0
				for _, bt := range bActor.mb.q {
					for _, ev := range bt.events {
						if ev.kind == evRetract {
							n++
						}
					}
				}
				bActor.mb.mu.Unlock()
				order = append(order, name+":"+string(rune('0'+n)))
			})
		}
		close(ready)
		return nil
	})
	<-ready
	waitFor(t, "assertions", func() bool { return b.len() == 2 })
	cfr, _, _ := client(t, s, "c")
	b.block(cfr, bref)
	do(t, cfr, func(t *Turn) error { t.Message(xref, sym("fail")); return nil })
	waitDone(t, a)
	close(b.release)
	if !slices.Equal(order, []string{"hook1:2", "hook2:2"}) {
		t.Fatalf("hooks saw %v", order)
	}
	waitFor(t, "retractions", func() bool { return b.len() == 4 })
}
