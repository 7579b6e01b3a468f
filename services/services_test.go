package services

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

func TestScenario08RequireServiceLeadsToRunService(t *testing.T) {
	h := newHarness(t, Boot)
	s := preserves.Rec("svc", preserves.Int(1))
	retract := h.assert(RequireService(s))
	h.waitHas(RunService(s), true)
	retract()
	h.waitHas(RunService(s), false)
}

func TestScenario09DependsOnWaitsForDependee(t *testing.T) {
	h := newHarness(t, Boot)
	a, b := sym("A"), sym("B")
	// Same "file": both assertions in one turn.
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.Assert(h.env.Config, RequireService(a))
		t.Assert(h.env.Config, DependsOn(a, ServiceState(b, StateReady)))
		return nil
	})
	h.waitHas(RequireService(b), true) // asserted automatically
	h.waitHas(RunService(b), true)
	h.settle()
	if h.has(RunService(a)) || h.countHistory("+"+preserves.FormatText(RunService(a))) != 0 {
		t.Fatal("run-service A appeared before B was ready")
	}
	h.assert(ServiceState(b, StateReady))
	h.waitHas(RunService(a), true)
}

func TestScenario10DependeeReadyWithdrawnStopsDependent(t *testing.T) {
	h := newHarness(t, Boot)
	a, b := sym("A"), sym("B")
	h.assert(RequireService(a))
	h.assert(DependsOn(a, ServiceState(b, StateReady)))
	unready := h.assert(ServiceState(b, StateReady))
	h.waitHas(RunService(a), true)
	unready()
	h.waitHas(RunService(a), false)
	h.assert(ServiceState(b, StateReady))
	h.waitHas(RunService(a), true)
}

func TestScenario11NonServiceStateDependency(t *testing.T) {
	h := newHarness(t, Boot)
	a := sym("A")
	fact := preserves.Rec("some-fact")
	h.assert(RequireService(a))
	h.assert(DependsOn(a, fact))
	h.settle()
	if h.has(RunService(a)) {
		t.Fatal("run-service A before <some-fact>")
	}
	if !h.warns.Has("cannot deduce dependee service name", `"warn"`) {
		t.Errorf("no warning logged; log: %q", h.warns.Lines())
	}
	// Extensible matching: extra trailing fields satisfy it too, and
	// several matching assertions count once.
	r1 := h.assert(preserves.Rec("some-fact", preserves.Int(1)))
	h.waitHas(RunService(a), true)
	r2 := h.assert(preserves.Rec("some-fact", preserves.Int(2)))
	r1()
	h.settle()
	if !h.has(RunService(a)) {
		t.Fatal("run-service withdrawn while a matching assertion remains")
	}
	r2()
	h.waitHas(RunService(a), false)
}

func TestRequirementRetractedWithdrawsDependeeRequirement(t *testing.T) {
	h := newHarness(t, Boot)
	a, b := sym("A"), sym("B")
	ra := h.assert(RequireService(a))
	h.assert(DependsOn(a, ServiceState(b, StateStarted)))
	h.assert(ServiceState(b, StateStarted))
	h.waitHas(RunService(a), true)
	h.waitHas(RunService(b), true)
	ra()
	h.waitHas(RunService(a), false)
	h.waitHas(RequireService(b), false)
	h.waitHas(RunService(b), false)
}

func TestTransitiveDependencies(t *testing.T) {
	h := newHarness(t, Boot)
	a, b, c := sym("A"), sym("B"), sym("C")
	h.assert(RequireService(a))
	h.assert(DependsOn(a, ServiceState(b, StateReady)))
	h.assert(DependsOn(b, ServiceState(c, StateReady)))
	h.waitHas(RunService(c), true)
	h.settle()
	if h.has(RunService(b)) || h.has(RunService(a)) {
		t.Fatal("B or A ran before C was ready")
	}
	h.assert(ServiceState(c, StateReady))
	h.waitHas(RunService(b), true)
	h.assert(ServiceState(b, StateReady))
	h.waitHas(RunService(a), true)
}

func TestMilestoneBuiltIn(t *testing.T) {
	h := newHarness(t, Boot)
	m := preserves.Rec("milestone", sym("network"))
	app := sym("app")
	h.assert(RequireService(app))
	h.assert(DependsOn(app, ServiceState(m, StateReady)))
	h.waitHas(ServiceState(m, StateStarted), true)
	h.waitHas(ServiceState(m, StateReady), true)
	h.waitHas(RunService(app), true)
}

func TestNextDelaySpecSequence(t *testing.T) {
	// fail, 0.2 s, fail, 10 s, fail, 0.2 s, fail, 10 s…
	var terms []time.Time
	at := time.Unix(1000, 0)
	var got []time.Duration
	for i := 0; i < 4; i++ {
		var d time.Duration
		terms, d = NextDelay(terms, at, SuperviseOptions{})
		got = append(got, d)
		at = at.Add(d + 10*time.Millisecond) // the worker fails at once
	}
	want := []time.Duration{RestartDelay, RestartBackoff, RestartDelay, RestartBackoff}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	// Terminations further apart than the window never back off.
	terms, d := NextDelay([]time.Time{at.Add(-TerminationWindow)}, at, SuperviseOptions{})
	if d != RestartDelay || len(terms) != 1 {
		t.Errorf("delay %v with %d remembered", d, len(terms))
	}
}

func TestSuperviseStates(t *testing.T) {
	var runs atomic.Int32
	name := sym("w")
	opts := SuperviseOptions{Delay: 5 * time.Millisecond, Backoff: 50 * time.Millisecond}
	var sup dataspace.FacetID
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		sup, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			Supervise(t, env, name, Always, "w", func(t *dataspace.Turn, _ *dataspace.Ref) error {
				n := runs.Add(1)
				if n <= 2 {
					return errors.New("boom") // crash: failed
				}
				if n == 3 {
					return nil // inert: normal exit → complete, restart
				}
				t.PreventInertCheck() // keeps running
				t.Assert(env.Config, ServiceState(name, StateReady))
				return nil
			}, opts)
			return nil
		})
		return nil
	})
	h.waitHas(ServiceState(name, StateReady), true)
	h.waitHas(ServiceState(name, StateStarted), true)
	for _, s := range []preserves.Value{StateFailed, StateComplete} {
		if h.countHistory("+"+preserves.FormatText(ServiceState(name, s))) == 0 {
			t.Errorf("state %v never reported", s)
		}
	}
	if runs.Load() != 4 {
		t.Errorf("worker ran %d times, want 4", runs.Load())
	}
	// Never two states at once (the new one is asserted before the old is
	// withdrawn, so at most transiently, never after settling).
	h.settle()
	n := 0
	for _, s := range []preserves.Value{StateStarted, StateFailed, StateComplete} {
		if h.has(ServiceState(name, s)) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d supervisor states asserted", n)
	}
	// Stopping the supervisor stops the worker and withdraws all states.
	h.driver.Activate(func(t *dataspace.Turn) error { return nil })
	stopFacet(h, sup)
	h.waitHas(ServiceState(name, StateStarted), false)
	h.waitHas(ServiceState(name, StateReady), false)
	if h.countHistory("+"+preserves.FormatText(ServiceState(name, StateComplete))) != 1 {
		t.Error("a final complete was reported on stop")
	}
}

func TestSuperviseOnErrorOnlyCompletes(t *testing.T) {
	name := sym("once")
	var runs atomic.Int32
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		t.PreventInertCheck()
		Supervise(t, env, name, OnErrorOnly, "once", func(t *dataspace.Turn, _ *dataspace.Ref) error {
			runs.Add(1)
			return nil
		}, SuperviseOptions{Delay: time.Millisecond})
		return nil
	})
	h.waitHas(ServiceState(name, StateComplete), true)
	h.settle()
	if runs.Load() != 1 || h.has(ServiceState(name, StateStarted)) {
		t.Errorf("runs %d, started still asserted %v", runs.Load(), h.has(ServiceState(name, StateStarted)))
	}
}

// stopFacet stops a facet of the harness actor from outside.
func stopFacet(h *harness, id dataspace.FacetID) {
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.StopFacet(id)
		return nil
	})
}

func TestStopOnRestartRestartsAlwaysWorker(t *testing.T) {
	name := preserves.Rec("watcher", preserves.String("/etc"))
	var runs atomic.Int32
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		t.PreventInertCheck()
		Supervise(t, env, name, Always, "watcher", func(t *dataspace.Turn, _ *dataspace.Ref) error {
			runs.Add(1)
			StopOnRestart(t, env, name)
			t.Assert(env.Config, ServiceState(name, StateReady))
			return nil
		}, SuperviseOptions{})
		return nil
	})
	h.waitHas(ServiceState(name, StateReady), true)
	h.send(h.env.Config, RestartService(name))
	h.waitHas(ServiceState(name, StateComplete), true)
	h.waitHas(ServiceState(name, StateStarted), true)
	h.waitHas(ServiceState(name, StateReady), true)
	if runs.Load() != 2 {
		t.Errorf("worker ran %d times", runs.Load())
	}
}
