package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The Syndicate-speaking child of scenario 53: when the test binary is run
// with GO_WANT_HELPER_PROCESS=syndicate it exports an entity at oid 0 over
// its stdin/stdout. The entity echoes every assertion it receives to
// stderr (`got V`), and answers `<echo-to #:r>` by asserting
// `<child-hello>` at r. It runs from init, before TestMain parses flags.
func init() {
	if os.Getenv("GO_WANT_HELPER_PROCESS") == "syndicate" {
		os.Exit(syndicateChild())
	}
}

type echoEntity struct{ dataspace.BaseEntity }

func (echoEntity) Assert(t *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	fmt.Fprintf(os.Stderr, "got %s\n", preserves.FormatText(v))
	if r, ok := v.(*preserves.Record); ok && r.Label == preserves.Symbol("echo-to") && len(r.Fields) == 1 {
		if ref, ok := dataspace.RefOf(r.Fields[0]); ok {
			t.Assert(ref, preserves.Rec("child-hello"))
		}
	}
	return nil
}

func syndicateChild() int {
	sys := dataspace.NewSystem(dataspace.Options{})
	done := make(chan (<-chan struct{}), 1)
	sys.Spawn("child", func(t *dataspace.Turn) error {
		obj := t.Create(echoEntity{})
		conn, _ := relay.RunOverPipes(t, os.Stdin, os.Stdout, relay.Options{InitialRef: obj})
		done <- conn.Done()
		return nil
	})
	<-<-done
	return 0
}

// find returns the present assertions matching pred.
func (h *harness) find(pred func(v preserves.Value) bool) []preserves.Value {
	var out []preserves.Value
	for _, v := range h.rec.Present() {
		if pred(v) {
			out = append(out, v)
		}
	}
	return out
}

// recordOf returns v as a record labelled label whose first field equals
// first, with at least n fields.
func recordOf(v preserves.Value, label string, first preserves.Value, n int) (*preserves.Record, bool) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok || r.Label != preserves.Symbol(label) || len(r.Fields) < n || !preserves.Equal(r.Fields[0], first) {
		return nil, false
	}
	return r, true
}

func (h *harness) serviceObjects(id string) []*dataspace.Ref {
	var out []*dataspace.Ref
	for _, v := range h.find(func(v preserves.Value) bool { _, ok := recordOf(v, "service-object", dname(id), 2); return ok }) {
		r, _ := recordOf(v, "service-object", dname(id), 2)
		if ref, ok := dataspace.RefOf(r.Fields[1]); ok {
			out = append(out, ref)
		}
	}
	return out
}

type procStatus struct {
	pid, restarts int
	since         time.Time
}

func (h *harness) processStatuses(t testing.TB, id string) []procStatus {
	t.Helper()
	var out []procStatus
	for _, v := range h.find(func(v preserves.Value) bool { _, ok := recordOf(v, "process-status", dname(id), 2); return ok }) {
		r, _ := recordOf(v, "process-status", dname(id), 2)
		ps, err := syndicatego.ParseProcessStatus(v)
		if d, ok := r.Fields[1].(*preserves.Dictionary); err != nil || !ok || d.Len() != 3 {
			t.Fatalf("process-status info %v is not {pid restarts since}: %v", r.Fields[1], err)
		}
		pid, ok1 := ps.Info.Pid.(syndicatego.ProcessPidPresent)
		restarts, ok2 := ps.Info.Restarts.(syndicatego.ProcessRestartsPresent)
		since, ok3 := ps.Info.Since.(syndicatego.ProcessSincePresent)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("process-status info %v has wrong types", r.Fields[1])
		}
		at, err := time.Parse(time.RFC3339, since.Since)
		if err != nil {
			t.Fatalf("since %q: %v", since.Since, err)
		}
		out = append(out, procStatus{int(pid.Pid.Int64()), int(restarts.Restarts.Int64()), at})
	}
	return out
}

func syndicateSpec(protocol string) preserves.Value {
	return preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("argv"), Value: preserves.Sequence{preserves.String(os.Args[0]), preserves.String("-test.run=^$")}},
		preserves.DictEntry{Key: preserves.Symbol("env"), Value: preserves.NewDictionary(
			preserves.DictEntry{Key: preserves.Symbol("GO_WANT_HELPER_PROCESS"), Value: preserves.String("syndicate")})},
		preserves.DictEntry{Key: preserves.Symbol("protocol"), Value: preserves.Symbol(protocol)},
		preserves.DictEntry{Key: preserves.Symbol("readyOnStart"), Value: preserves.Bool(false)},
	)
}

func (h *harness) assertTo(ref *dataspace.Ref, v preserves.Value) {
	h.driver.Activate(func(t *dataspace.Turn) error { t.Assert(ref, v); return nil })
}

func (h *harness) stderrLines(id string) []string {
	var out []string
	for _, l := range h.output(id) {
		if s, ok := l.line.(preserves.String); ok && preserves.Equal(l.stream, preserves.Symbol("stderr")) {
			out = append(out, string(s))
		}
	}
	return out
}

// Scenario 53, in both syntaxes: the child's oid 0 is published as the
// daemon's service object while it runs; an assertion made at it reaches
// the child, and a capability passed along lets the child assert back.
func TestScenario53SyndicateProtocolDaemon(t *testing.T) {
	parallel(t)
	for _, protocol := range []string{"application/syndicate", "text/syndicate"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			h, _ := bootDaemons(t, Options{})
			unrequire, _ := require(h, "d", syndicateSpec(protocol))
			var obj *dataspace.Ref
			eventually(t, func() bool {
				objs := h.serviceObjects("d")
				if len(objs) == 1 {
					obj = objs[0]
				}
				return obj != nil
			}, "service-object of <daemon d>")
			h.waitHas(state("d", services.StateStarted), true)
			if h.has(state("d", services.StateReady)) {
				t.Error("ready although readyOnStart is #f")
			}

			h.assertTo(obj, preserves.Rec("ping", preserves.Int(1)))
			h.assertTo(obj, preserves.Rec("echo-to", dataspace.Embed(h.env.Config)))
			h.waitHas(preserves.Rec("child-hello"), true)
			eventually(t, func() bool {
				ls := h.stderrLines("d")
				return len(ls) >= 1 && ls[0] == "got <ping 1>\n"
			}, "stderr echo of <ping 1>: %q", h.stderrLines("d"))
			for _, l := range h.output("d") {
				if preserves.Equal(l.stream, preserves.Symbol("stdout")) {
					t.Errorf("stdout of a protocol daemon logged: %v", l.line)
				}
			}
			ps := h.processStatuses(t, "d")
			if len(ps) != 1 || !alive(ps[0].pid) {
				t.Fatalf("process-status %+v", ps)
			}

			// Unrequired: the child is stopped, its service object and
			// whatever it asserted through the relay vanish.
			unrequire()
			h.waitHas(preserves.Rec("child-hello"), false)
			eventually(t, func() bool { return len(h.serviceObjects("d")) == 0 }, "service-object withdrawn")
			eventually(t, func() bool { return !alive(ps[0].pid) }, "child %d alive", ps[0].pid)
		})
	}
}

// The child exiting on its own withdraws its service object; the restart
// publishes a new one.
func TestSyndicateDaemonRestartRepublishes(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	spec := syndicateSpec("application/syndicate").(*preserves.Dictionary)
	spec = preserves.NewDictionary(append(spec.Entries(), preserves.DictEntry{Key: preserves.Symbol("restartDelay"), Value: preserves.NewDouble(0.01)})...)
	require(h, "d", spec)
	var ps []procStatus
	eventually(t, func() bool {
		ps = h.processStatuses(t, "d")
		return len(ps) == 1 && len(h.serviceObjects("d")) == 1
	}, "running")
	first := h.serviceObjects("d")[0]
	if err := syscall.Kill(ps[0].pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		objs := h.serviceObjects("d")
		return len(objs) == 1 && objs[0] != first
	}, "a new service object after the restart")
	eventually(t, func() bool {
		ps := h.processStatuses(t, "d")
		return len(ps) == 1 && ps[0].restarts == 1
	}, "process-status restarts 1")
}

// process-status: one per running process, replaced on restart with the
// restart count raised, withdrawn when the process ends.
func TestProcessStatus(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	before := time.Now().Add(-time.Second)
	unrequire, _ := require(h, "d", pv(t, `{argv: "echo $$; exec sleep 100", restartDelay: 0.01}`), pv(t, `"exec sleep 101"`))
	first := printedPid(t, h.waitOutput("d", 1)[0])
	var ps []procStatus
	eventually(t, func() bool { ps = h.processStatuses(t, "d"); return len(ps) == 2 }, "two process-status")
	found := false
	for _, p := range ps {
		if p.restarts != 0 || p.since.Before(before.Truncate(time.Second)) || p.since.After(time.Now()) {
			t.Errorf("process-status %+v", p)
		}
		found = found || p.pid == first
	}
	if !found {
		t.Fatalf("no process-status with pid %d: %+v", first, ps)
	}
	old := ProcessStatus(dname("d"), first, 0, ps[0].since)
	for _, p := range ps {
		if p.pid == first {
			old = ProcessStatus(dname("d"), first, 0, p.since)
		}
	}

	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := printedPid(t, h.waitOutput("d", 2)[1])
	eventually(t, func() bool {
		for _, p := range h.processStatuses(t, "d") {
			if p.pid == second && p.restarts == 1 {
				return true
			}
		}
		return false
	}, "process-status of the restarted process")
	if h.has(old) {
		t.Error("the old process-status is still asserted")
	}
	if n := len(h.processStatuses(t, "d")); n != 2 {
		t.Errorf("%d process-status assertions, want 2", n)
	}

	unrequire()
	eventually(t, func() bool { return len(h.processStatuses(t, "d")) == 0 }, "process-status withdrawn")
}

// A completed process leaves no process-status behind.
func TestProcessStatusWithdrawnOnCompletion(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `<one-shot "true">`))
	h.waitHas(state("d", services.StateComplete), true)
	if ps := h.processStatuses(t, "d"); len(ps) != 0 {
		t.Errorf("process-status after completion: %+v", ps)
	}
	plus := 0
	for _, e := range h.rec.History() {
		if strings.HasPrefix(e, "+<process-status <daemon d>") {
			plus++
		}
	}
	if plus != 1 {
		t.Errorf("process-status asserted %d times, want 1", plus)
	}
}

// ---- restart limits ----

func TestParseSpecRestartKeys(t *testing.T) {
	parallel(t)
	s, err := ParseSpec(pv(t, `{argv: "x", restartDelay: 0.5, restartMaxDelay: 4, restartLimit: 3, restartWindow: 60}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Delay: 500 * time.Millisecond, MaxDelay: 4 * time.Second, Limit: 3, Window: time.Minute,
		HasDelay: true, HasMaxDelay: true, HasLimit: true}
	if s.Limits != want {
		t.Errorf("limits %+v, want %+v", s.Limits, want)
	}
	s, err = ParseSpec(pv(t, `{argv: "x"}`))
	if err != nil || !s.Limits.IsZero() {
		t.Errorf("no keys: %+v, %v", s.Limits, err)
	}
	for _, bad := range []string{
		`{argv: "x", restartDelay: -1}`,
		`{argv: "x", restartMaxDelay: "5"}`,
		`{argv: "x", restartLimit: 1.5}`,
		`{argv: "x", restartLimit: -2}`,
		`{argv: "x", restartWindow: #t}`,
	} {
		_, err := ParseSpec(pv(t, bad))
		if !errors.Is(err, ErrInvalidField) {
			t.Errorf("%s: error %v, want ErrInvalidField", bad, err)
		}
	}
}

func TestLimiterBackoffAndReset(t *testing.T) {
	parallel(t)
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	m := limiter{l: Limits{Delay: 10 * ms, MaxDelay: 80 * ms, HasDelay: true, HasMaxDelay: true}}
	restart := Next{Action: ActRestart, Delay: DelayAfterError}
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, m.next(restart, t0, t0.Add(ms)).Delay)
	}
	want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 80 * ms, 80 * ms}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	// A run at least restartMaxDelay long was healthy: back to the base.
	if d := m.next(restart, t0, t0.Add(80*ms)).Delay; d != 10*ms {
		t.Errorf("after a healthy run: %v, want 10ms", d)
	}
	// Without restartDelay the base is the reference's delay for the exit.
	m = limiter{l: Limits{MaxDelay: 3 * time.Second, HasMaxDelay: true}}
	for _, w := range []time.Duration{DelayAfterSuccess, 2 * DelayAfterSuccess} {
		if d := m.next(Next{Action: ActRestart, Delay: DelayAfterSuccess}, t0, t0).Delay; d != w {
			t.Errorf("delay %v, want %v", d, w)
		}
	}
	// Decisions other than restart are untouched.
	if n := m.next(Next{Action: ActComplete}, t0, t0); n.Action != ActComplete {
		t.Errorf("complete became %v", n.Action)
	}
}

func TestLimiterLimitWithinWindow(t *testing.T) {
	parallel(t)
	t0 := time.Unix(1000, 0)
	restart := Next{Action: ActRestart, Delay: DelayAfterError}
	m := limiter{l: Limits{Limit: 2, Window: 10 * time.Second, HasLimit: true}}
	at := func(s int) Action { return m.next(restart, t0, t0.Add(time.Duration(s)*time.Second)).Action }
	if at(0) != ActRestart || at(1) != ActRestart {
		t.Fatal("first two restarts refused")
	}
	if a := at(2); a != ActGiveUp {
		t.Fatalf("third restart within the window: %v, want give up", a)
	}
	// Restarts older than the window no longer count.
	m = limiter{l: Limits{Limit: 2, Window: 10 * time.Second, HasLimit: true}}
	if at(0) != ActRestart || at(5) != ActRestart || at(11) != ActRestart || at(16) != ActRestart {
		t.Error("restarts spread beyond the window were refused")
	}
	// No window: the limit counts every restart; a delay key alone keeps
	// the policy's decision but replaces its delay.
	m = limiter{l: Limits{Limit: 1, HasLimit: true}}
	if at(0) != ActRestart || at(1000) != ActGiveUp {
		t.Error("unbounded window")
	}
	m = limiter{l: Limits{Limit: 0, HasLimit: true}}
	if at(0) != ActGiveUp {
		t.Error("restartLimit 0 restarted")
	}
	m = limiter{l: Limits{Delay: 0, HasDelay: true}}
	if n := m.next(restart, t0, t0); n.Action != ActRestart || n.Delay != 0 {
		t.Errorf("restartDelay 0: %+v", n)
	}
}

func TestRunnerGivesUpAtLimit(t *testing.T) {
	parallel(t)
	clock := newFakeClock()
	r, runs := scriptedRunner(clock, Exit{Code: 1})
	var nexts []Next
	done := make(chan Outcome, 1)
	s := &Spec{Restart: RestartAlways, Limits: Limits{Delay: time.Millisecond, Limit: 2, HasDelay: true, HasLimit: true}}
	go func() {
		done <- r.Run(context.Background(), s, Events{Exited: func(_ Exit, n Next) { nexts = append(nexts, n) }})
	}()
	for i := 0; i < 2; i++ {
		ft := clock.next(t)
		if ft.d != time.Millisecond {
			t.Fatalf("delay %v", ft.d)
		}
		ft.c <- time.Time{}
	}
	if o := <-done; o != GaveUp {
		t.Fatalf("outcome %v, want GaveUp", o)
	}
	if *runs != 3 || len(nexts) != 3 || nexts[2].Action != ActGiveUp {
		t.Errorf("runs %d, decisions %+v", *runs, nexts)
	}
}

// With the dataspace: the daemon gives up after restartLimit restarts,
// reports failed (never ready again), and says so exactly once.
func TestRestartLimitFailsDaemon(t *testing.T) {
	parallel(t)
	h, clock := bootDaemons(t, Options{})
	unrequire, unspec := require(h, "d", pv(t, `{argv: "echo run; exit 3", restartDelay: 0.01, restartLimit: 2, restartWindow: 60}`))
	h.waitHas(state("d", services.StateFailed), true)
	h.settle()
	if n := len(h.output("d")); n != 3 {
		t.Errorf("%d runs, want 3", n)
	}
	if got := clock.got(); len(got) != 2 || got[0] != 10*time.Millisecond || got[1] != 10*time.Millisecond {
		t.Errorf("restart delays %v, want [10ms 10ms]", got)
	}
	if n := h.warns.Count("restart limit reached"); n != 1 {
		t.Errorf("give-up logged %d times: %q", n, h.warns.Lines())
	}
	// The last run's started state is withdrawn in a turn of its own,
	// which may come after the failure is seen.
	h.waitHas(state("d", services.StateReady), false)
	h.waitHas(state("d", services.StateStarted), false)
	// Retracting the spec clears the failure (no spec left, but one
	// was: started, not ready).
	unspec[0]()
	h.waitHas(state("d", services.StateStarted), true)
	h.waitHas(state("d", services.StateFailed), false)
	unrequire()
	h.waitHas(state("d", services.StateStarted), false)
}

// Without the extra keys the reference's delays apply exactly.
func TestNoRestartKeysReferenceDelays(t *testing.T) {
	parallel(t)
	h, clock := bootDaemonsQuick(t, Options{})
	require(h, "d", pv(t, `"exit 0"`))
	eventually(t, func() bool { return len(clock.got()) >= 2 }, "two restarts")
	for _, d := range clock.got()[:2] {
		if d != DelayAfterSuccess {
			t.Errorf("delay %v, want %v", d, DelayAfterSuccess)
		}
	}
}

// ---- dry run ----

func TestDryRunStartsNothing(t *testing.T) {
	h, _ := bootDaemons(t, Options{DryRun: true})
	dir := t.TempDir()
	marker := dir + "/ran"
	require(h, "svc", pv(t, `{argv: ["touch", "`+marker+`"], dir: "/tmp", env: {FOO: "bar", GONE: #f}}`))
	require(h, "lazy", pv(t, `{argv: "touch `+marker+`", readyOnStart: #f}`))
	require(h, "setup", pv(t, `<one-shot "touch `+marker+`">`))
	// A dependant proceeds once the dry-run daemon is ready.
	h.assert(services.DependsOn(dname("app"), state("svc", services.StateReady)))
	require(h, "app", pv(t, `"touch `+marker+`"`))

	h.waitHas(state("svc", services.StateReady), true)
	h.waitHas(state("app", services.StateReady), true)
	h.waitHas(state("setup", services.StateComplete), true)
	h.waitHas(state("lazy", services.StateStarted), true)
	h.settle()
	if h.has(state("lazy", services.StateReady)) {
		t.Error("readyOnStart #f daemon ready in a dry run")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a process ran in a dry run")
	}
	if Len() != 0 {
		t.Errorf("%d children in a dry run", Len())
	}
	if !h.warns.Has("dry run: would start process", `"argv":["touch","`+marker+`"]`, `"env":["FOO=bar","-GONE"]`, `"dir":"/tmp"`) {
		t.Errorf("no dry-run log with argv, env and dir: %q", h.warns.Lines())
	}
	if len(h.find(func(v preserves.Value) bool {
		r, ok := preserves.Unwrap(v).(*preserves.Record)
		return ok && r.Label == syndicatego.LabelProcessStatus
	})) != 0 {
		t.Error("process-status in a dry run")
	}
}

// restart-service replaces the whole daemon; the restart count carries on.
func TestProcessStatusCountsRestartService(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `"echo $$; exec sleep 100"`))
	first := printedPid(t, h.waitOutput("d", 1)[0])
	eventually(t, func() bool {
		ps := h.processStatuses(t, "d")
		return len(ps) == 1 && ps[0].pid == first && ps[0].restarts == 0
	}, "first process-status")
	h.send(h.env.Config, services.RestartService(dname("d")))
	second := printedPid(t, h.waitOutput("d", 2)[1])
	eventually(t, func() bool {
		ps := h.processStatuses(t, "d")
		return len(ps) == 1 && ps[0].pid == second && ps[0].restarts == 1
	}, "process-status after restart-service: %+v", h.processStatuses(t, "d"))
}
