package services

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
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

	set := preserves.NewSet(preserves.Int(1))
	preserves.Remember(set, preserves.Pos{File: "hostile.pr", Line: 3, Col: 7}, nil) // as a script does
	h.send(h.env.Config, preserves.NewRecord(sym("boom"), set))

	testutil.WaitFor(t, "the crash report", func() bool { return h.warns.Has("service worker failed") })
	for _, want := range []string{`"service":"<builtin crashy>"`, `"value":"[#{1}]"`, `"pos":"hostile.pr:3:7"`, `"level":"error"`} {
		if !h.warns.Has(want) {
			t.Errorf("crash report lacks %s:\n%s", want, h.warns.String())
		}
	}
	// The Go line to blame is crashy's, not MustLift's.
	if !regexp.MustCompile(`"at":"[^"]*/services/builtin_test\.go:\d+"`).MatchString(h.warns.String()) {
		t.Errorf("crash report does not blame crashy:\n%s", h.warns.String())
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
	x.h.rec.Note(x.name + "+" + preserves.FormatText(v))
	return nil
}

func (x *held) Retract(_ *dataspace.Turn, _ dataspace.Handle) error {
	x.h.rec.Note(x.name + "-")
	return nil
}

func (x *held) Message(_ *dataspace.Turn, v preserves.Value) error {
	x.h.rec.Note(x.name + "!" + preserves.FormatText(v))
	return nil
}

// forwarderHarness runs a forwarder (its public and control Refs) and two
// recording targets, t1 and t2, for it.
func forwarderHarness(tb testing.TB) (h *harness, pub, ctl, t1, t2 *dataspace.Ref) {
	h = newHarness(tb, func(t *dataspace.Turn, env Env) error {
		pub, ctl = NewForwarder(t)
		return nil
	})
	h.driver.Activate(func(t *dataspace.Turn) error {
		t1 = t.Create(&held{h: h, name: "t1"})
		t2 = t.Create(&held{h: h, name: "t2"})
		return nil
	})
	return h, pub, ctl, t1, t2
}

// TestForwarderFollowsRestarts: assertions made at a forwarder reach each
// target in turn, survive a target's death, and messages reach the current
// target; a sync with no target is answered.
func TestForwarderFollowsRestarts(t *testing.T) {
	h, pub, ctl, t1, t2 := forwarderHarness(t)
	var c1 dataspace.Handle
	h.driver.Activate(func(t *dataspace.Turn) error {
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

// Messages sent before the first target came reach it, in order, once;
// messages sent while a later target is replaced are still dropped.
func TestForwarderKeepsMessagesForItsFirstTarget(t *testing.T) {
	h, pub, ctl, t1, t2 := forwarderHarness(t)
	var c1 dataspace.Handle
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.Message(pub, sym("first"))
		t.Message(pub, sym("second"))
		return nil
	})
	h.driver.Activate(func(t *dataspace.Turn) error { c1 = t.Assert(ctl, dataspace.Embed(t1)); return nil })
	testutil.WaitFor(t, "t1 gets the early messages", func() bool { return h.countHistory("t1!second") == 1 })
	if hist := strings.Join(h.rec.History(), " "); h.countHistory("t1!first") != 1 || strings.Index(hist, "t1!first") > strings.Index(hist, "t1!second") {
		t.Errorf("early messages lost, repeated or out of order: %s", hist)
	}
	h.driver.Activate(func(t *dataspace.Turn) error { t.Retract(c1); t.Message(pub, sym("between")); return nil })
	h.driver.Activate(func(t *dataspace.Turn) error { t.Assert(ctl, dataspace.Embed(t2)); return nil })
	h.driver.Activate(func(t *dataspace.Turn) error { t.Message(pub, sym("later")); return nil })
	testutil.WaitFor(t, "t2 gets a later message", func() bool { return h.countHistory("t2!later") == 1 })
	if h.countHistory("t2!between") != 0 || h.countHistory("t2!first") != 0 {
		t.Errorf("a message from between targets, or an early one, reached t2: %v", h.rec.History())
	}
}

// TestSuperviseFailuresOnly: a silent service (§2.5) reports no state
// while it runs, `failed` after a crash, and none again once restarted;
// the failure's summary names the offending value and its position.
func TestSuperviseFailuresOnly(t *testing.T) {
	name := sym("quiet")
	opts := SuperviseOptions{Delay: 5 * time.Millisecond, Backoff: 20 * time.Millisecond, FailuresOnly: true}
	var runs atomic.Int32
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		t.PreventInertCheck()
		Supervise(t, env, name, Always, "quiet", func(t *dataspace.Turn, _ *dataspace.Ref) error {
			runs.Add(1)
			t.PreventInertCheck()
			return crashy(t, env)
		}, opts)
		return nil
	})
	testutil.WaitFor(t, "the worker", func() bool { return runs.Load() == 1 })
	// The worker counts its run inside the turn that subscribes; a boom
	// sent before that turn's Observe reaches the dataspace would be lost.
	testutil.WaitFor(t, "the worker listening", func() bool { return h.observing("boom") })
	h.settle()
	for _, s := range []preserves.Value{StateStarted, StateReady, StateFailed} {
		if h.has(ServiceState(name, s)) {
			t.Errorf("a silent service reported %v", s)
		}
	}
	pos := preserves.NewSet()
	preserves.Remember(pos, preserves.Pos{File: "q.pr", Line: 1, Col: 2}, nil)
	h.send(h.env.Config, preserves.NewRecord(sym("boom"), pos))
	testutil.WaitFor(t, "failed reported", func() bool {
		return h.countHistory("+"+preserves.FormatText(ServiceState(name, StateFailed))) == 1
	})
	testutil.WaitFor(t, "restarted, silent again", func() bool {
		return runs.Load() == 2 && !h.has(ServiceState(name, StateFailed))
	})
	if !h.warns.Has(`"pos":"q.pr:1:2"`) {
		t.Errorf("crash report without position: %s", h.warns.String())
	}
}

// TestFailureSummary: the status line of a crash names the value and its
// position, cut short.
func TestFailureSummary(t *testing.T) {
	at := []preserves.Pos{{File: "f.pr", Line: 3, Col: 4}}
	ev := preserves.String(strings.Repeat("x", 2000))
	got := FailureSummary(&dataspace.PanicError{Value: "boom", Event: preserves.Sequence{ev}})
	if !strings.HasPrefix(got, `dataspace: panic in actor: boom (handling ["xxx`) || len(got) > preserves.ShowLimit+len("…") {
		t.Errorf("summary %q", got)
	}
	got = FailureSummary(&dataspace.PanicError{Value: "boom", Event: preserves.Sequence{preserves.NewRecord(sym("x"), ev)}})
	if !strings.Contains(got, "(handling [<x") {
		t.Errorf("summary %q", got)
	}
	// An atom's position is its parent's to remember.
	short := preserves.Sequence{preserves.Int(1)}
	preserves.Remember(short, preserves.Pos{}, at)
	if got := FailureSummary(&dataspace.PanicError{Value: "boom", Event: short}); got != "dataspace: panic in actor: boom (handling [1] from f.pr:3:4)" {
		t.Errorf("summary %q", got)
	}
}

// Past maxEarly, messages sent before the first target are dropped, and
// the drop is logged (once), not silent.
func TestForwarderLogsEarlyMessagesItDrops(t *testing.T) {
	h, pub, ctl, t1, _ := forwarderHarness(t)
	h.driver.Activate(func(t *dataspace.Turn) error {
		for i := range maxEarly + 5 {
			t.Message(pub, preserves.Int(i))
		}
		return nil
	})
	h.driver.Activate(func(t *dataspace.Turn) error { t.Assert(ctl, dataspace.Embed(t1)); return nil })
	last := fmt.Sprintf("t1!%d", maxEarly-1)
	testutil.WaitFor(t, "the kept messages", func() bool { return h.countHistory(last) == 1 })
	if n := h.countHistory(fmt.Sprintf("t1!%d", maxEarly)); n != 0 {
		t.Errorf("a message past maxEarly was delivered")
	}
	if n := strings.Count(h.warns.String(), "dropped past the first ones kept"); n != 1 {
		t.Errorf("the drop was logged %d times, want once: %s", n, h.warns.String())
	}
}
