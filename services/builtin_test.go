package services

import (
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// crashy is a built-in service with the bug issue 12 found: it lifts a
// value from outside with MustLift, which panics on sets.
func crashy(t *dataspace.Turn, env Env) error {
	t.OnMessage(env.Config, pattern.Rec(sym("boom"), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		pattern.MustLift(caps[0])
		return nil
	})
	return nil
}

// canary answers `<ping N>` with `<pong N>`.
func canary(t *dataspace.Turn, env Env) error {
	t.During(env.Config, pattern.Rec(sym("ping"), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		t.Assert(env.Config, preserves.NewRecord(sym("pong"), caps[0]))
		return nil
	})
	return nil
}

// TestRunBuiltinContainsCrash (issue 12, containment by structure): a
// crash in one built-in service is logged with the service's name, the
// offending value and its source position, shows as `failed`, and is
// followed by a restart; the other service and the supervising actor keep
// running.
func TestRunBuiltinContainsCrash(t *testing.T) {
	opts := SuperviseOptions{Delay: 5 * time.Millisecond, Backoff: 20 * time.Millisecond}
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		RunBuiltin(t, env, "crashy", crashy, opts)
		RunBuiltin(t, env, "canary", canary, opts)
		return nil
	})
	crashyName, canaryName := BuiltinName("crashy"), BuiltinName("canary")
	h.waitHas(ServiceState(crashyName, StateReady), true)
	h.waitHas(ServiceState(canaryName, StateReady), true)

	set := &preserves.Annotated{Pos: preserves.Pos{File: "hostile.pr", Line: 3, Col: 7}, Item: preserves.NewSet(preserves.Int(1))}
	h.send(h.env.Config, preserves.NewRecord(sym("boom"), set))

	testutil.WaitFor(t, "the crash report", func() bool { return h.warns.Has("service worker failed") })
	for _, want := range []string{`"service":"<builtin crashy>"`, `"value":"[#{1}]"`, `"pos":"hostile.pr:3:7"`, `"at":"`, `"level":"error"`} {
		if !h.warns.Has(want) {
			t.Errorf("crash report lacks %s:\n%s", want, h.warns.String())
		}
	}
	testutil.WaitFor(t, "failed reported", func() bool {
		return h.countHistory("+"+preserves.FormatText(ServiceState(crashyName, StateFailed))) == 1
	})
	testutil.WaitFor(t, "the restarted worker ready", func() bool {
		return h.countHistory("+"+preserves.FormatText(ServiceState(crashyName, StateReady))) == 2 &&
			h.has(ServiceState(crashyName, StateReady))
	})
	// The canary never restarted and still answers.
	h.assert(preserves.NewRecord(sym("ping"), preserves.Int(1)))
	h.waitHas(preserves.NewRecord(sym("pong"), preserves.Int(1)), true)
	if n := h.countHistory("+" + preserves.FormatText(ServiceState(canaryName, StateReady))); n != 1 {
		t.Errorf("canary became ready %d times", n)
	}
	// After the crash the service is stable again: started and ready, not failed.
	h.settle()
	if h.has(ServiceState(crashyName, StateFailed)) || !h.has(ServiceState(crashyName, StateStarted)) {
		t.Errorf("crashy's state after restart: failed=%v started=%v",
			h.has(ServiceState(crashyName, StateFailed)), h.has(ServiceState(crashyName, StateStarted)))
	}
}

// held records what is asserted at it.
type held struct {
	dataspace.BaseEntity
	h    *harness
	name string
}

func (x *held) Assert(_ *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	x.h.mu.Lock()
	x.h.history = append(x.h.history, x.name+"+"+preserves.FormatText(v))
	x.h.mu.Unlock()
	return nil
}

func (x *held) Retract(_ *dataspace.Turn, _ dataspace.Handle) error {
	x.h.mu.Lock()
	x.h.history = append(x.h.history, x.name+"-")
	x.h.mu.Unlock()
	return nil
}

func (x *held) Message(_ *dataspace.Turn, v preserves.Value) error {
	x.h.mu.Lock()
	x.h.history = append(x.h.history, x.name+"!"+preserves.FormatText(v))
	x.h.mu.Unlock()
	return nil
}

// TestForwarderFollowsRestarts: assertions made at a forwarder reach each
// target in turn, survive a target's death, and messages reach the current
// target; a sync with no target is answered.
func TestForwarderFollowsRestarts(t *testing.T) {
	var pub, ctl *dataspace.Ref
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		pub, ctl = NewForwarder(t)
		return nil
	})
	var t1, t2 *dataspace.Ref
	var c1 dataspace.Handle
	h.driver.Activate(func(t *dataspace.Turn) error {
		t1 = t.Create(&held{h: h, name: "t1"})
		t2 = t.Create(&held{h: h, name: "t2"})
		t.Assert(pub, sym("early")) // before any target
		return nil
	})
	synced := make(chan struct{})
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.Sync(pub, func(*dataspace.Turn) error { close(synced); return nil })
		return nil
	})
	<-synced
	h.driver.Activate(func(t *dataspace.Turn) error { c1 = t.Assert(ctl, dataspace.Embed(t1)); return nil })
	testutil.WaitFor(t, "t1 gets the early assertion", func() bool { return h.countHistory("t1+early") == 1 })
	h.driver.Activate(func(t *dataspace.Turn) error { t.Message(pub, sym("hello")); return nil })
	testutil.WaitFor(t, "t1 gets the message", func() bool { return h.countHistory("t1!hello") == 1 })
	// t1's worker dies: its control assertion goes; t2 takes over.
	h.driver.Activate(func(t *dataspace.Turn) error { t.Retract(c1); return nil })
	testutil.WaitFor(t, "t1's assertion withdrawn", func() bool { return h.countHistory("t1-") == 1 })
	h.driver.Activate(func(t *dataspace.Turn) error { t.Assert(ctl, dataspace.Embed(t2)); return nil })
	testutil.WaitFor(t, "t2 gets the early assertion", func() bool { return h.countHistory("t2+early") == 1 })
	if h.countHistory("t2!hello") != 0 {
		t.Error("a message was delivered twice")
	}
	if strings.Contains(h.warns.String(), "error") {
		t.Errorf("unexpected log: %s", h.warns.String())
	}
}
