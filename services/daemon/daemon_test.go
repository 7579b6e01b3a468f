package daemon

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// recClock uses real timers but records every restart delay requested, so
// tests check the delays exactly without timing anything. A quick one
// lets every restart delay pass after a millisecond: for tests that check
// the delays requested or count restarts, never how long they took.
type recClock struct {
	mu     sync.Mutex
	delays []time.Duration
	quick  bool
}

func (c *recClock) Now() time.Time { return time.Now() }
func (c *recClock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	c.delays = append(c.delays, d)
	c.mu.Unlock()
	if c.quick {
		d = time.Millisecond
	}
	return RealClock.After(d)
}
func (c *recClock) AfterFunc(d time.Duration, f func()) func() bool {
	return RealClock.AfterFunc(d, f)
}
func (c *recClock) got() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.delays)
}

func bootDaemons(t testing.TB, opts Options) (*harness, *recClock) {
	t.Helper()
	return bootDaemonsClock(t, opts, &recClock{})
}

// bootDaemonsQuick is bootDaemons with a quick recClock: restarts follow
// at once, and the delays they asked for are recorded.
func bootDaemonsQuick(t testing.TB, opts Options) (*harness, *recClock) {
	t.Helper()
	return bootDaemonsClock(t, opts, &recClock{quick: true})
}

func bootDaemonsClock(t testing.TB, opts Options, clock *recClock) (*harness, *recClock) {
	t.Helper()
	opts.Clock = clock
	var svc *Service
	// Registered first, so it runs after the harness has shut the system
	// down: by then every Run call must have returned.
	t.Cleanup(func() {
		if svc != nil {
			svc.Wait()
		}
	})
	h := newHarness(t, services.Boot, func(tt *dataspace.Turn, env services.Env) error {
		var err error
		svc, err = BootWith(tt, env, opts)
		return err
	})
	return h, clock
}

func pv(t testing.TB, src string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return v
}

func dname(id string) preserves.Value { return preserves.Rec("daemon", preserves.Symbol(id)) }

func state(id string, s preserves.Value) preserves.Value {
	return services.ServiceState(dname(id), s)
}

// require asserts `<require-service <daemon id>>` and the given specs.
func require(h *harness, id string, specs ...preserves.Value) (unrequire func(), unspec []func()) {
	for _, s := range specs {
		unspec = append(unspec, h.assert(preserves.Rec("daemon", preserves.Symbol(id), s)))
	}
	return h.assert(services.RequireService(dname(id))), unspec
}

type outLine struct {
	pid    preserves.Value
	stream preserves.Value
	line   preserves.Value
	ts     preserves.Value
}

// output returns the log records of daemon id, in arrival order.
func (h *harness) output(id string) []outLine {
	return h.logLines(id, services.SourceDaemon)
}

// logLines is the `<log …>` messages about daemon id from source.
func (h *harness) logLines(id string, source preserves.Value) []outLine {
	var out []outLine
	for _, m := range h.rec.Messages() {
		r, ok := m.(*preserves.Record)
		if !ok || r.Label != preserves.Symbol("log") || len(r.Fields) != 2 {
			continue
		}
		d, ok := r.Fields[1].(*preserves.Dictionary)
		if !ok {
			continue
		}
		svc, _ := d.Get(preserves.Symbol("service"))
		src, _ := d.Get(services.LogKeySource)
		if !preserves.Equal(svc, dname(id)) || src != source {
			continue
		}
		pid, _ := d.Get(preserves.Symbol("pid"))
		st, _ := d.Get(preserves.Symbol("stream"))
		line, _ := d.Get(preserves.Symbol("line"))
		out = append(out, outLine{pid: pid, stream: st, line: line, ts: r.Fields[0]})
	}
	return out
}

func (h *harness) waitOutput(id string, n int) []outLine {
	h.tb.Helper()
	eventually(h.tb, func() bool { return len(h.output(id)) >= n }, "%d output lines of %s (have %d)", n, id, len(h.output(id)))
	return h.output(id)
}

func (h *harness) everHad(v preserves.Value) bool {
	return h.countHistory("+"+preserves.FormatText(v)) > 0
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, st, _, ok := readStat("/proc/" + itoa(pid) + "/stat")
	return ok && st != 'Z'
}

func itoa(n int) string { return preserves.FormatText(preserves.Int(n)) }

func pidOf(t testing.TB, l outLine) int {
	t.Helper()
	p, ok := l.pid.(preserves.Int)
	if !ok {
		t.Fatalf("pid %v is not an integer", l.pid)
	}
	return int(p)
}

// printedPid reads the pid a `echo $$; exec …` daemon printed.
func printedPid(t testing.TB, l outLine) int {
	t.Helper()
	s, _ := l.line.(preserves.String)
	var n int
	for _, c := range strings.TrimSpace(string(s)) {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestScenario39EchoHelloLogRecordAndRerun(t *testing.T) {
	parallel(t)
	h, clock := bootDaemons(t, Options{})
	require(h, "d", pv(t, `"echo hello"`))
	lines := h.waitOutput("d", 3)
	l := lines[0]
	if !preserves.Equal(l.stream, preserves.Symbol("stdout")) || !preserves.Equal(l.line, preserves.String("hello\n")) {
		t.Errorf("record %+v", l)
	}
	if pidOf(t, l) <= 0 {
		t.Errorf("pid %v", l.pid)
	}
	ts, ok := l.ts.(preserves.String)
	if !ok || !strings.HasSuffix(string(ts), "+00:00") {
		t.Errorf("timestamp %v", l.ts)
	}
	if _, err := time.Parse(time.RFC3339Nano, string(ts)); err != nil {
		t.Errorf("timestamp %v: %v", ts, err)
	}
	// Each run is a new process; restarts are 200 ms after exit 0.
	if pidOf(t, lines[1]) == pidOf(t, lines[0]) {
		t.Error("second run has the same pid")
	}
	for _, d := range clock.got() {
		if d != DelayAfterSuccess {
			t.Errorf("restart delay %v, want %v", d, DelayAfterSuccess)
		}
	}
	// Never complete: policy always.
	if h.everHad(state("d", services.StateComplete)) {
		t.Error("complete under policy always")
	}
}

func TestScenario40OnErrorExit0Completes(t *testing.T) {
	parallel(t)
	h, clock := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "echo done", restart: on-error}`))
	h.waitHas(state("d", services.StateComplete), true)
	h.settle()
	if n := len(h.output("d")); n != 1 || len(clock.got()) != 0 {
		t.Errorf("%d runs, delays %v: restarted", n, clock.got())
	}
	if h.has(state("d", services.StateStarted)) {
		t.Error("started still asserted next to complete")
	}
}

func TestScenario41OnErrorExit1Restarts(t *testing.T) {
	parallel(t)
	h, clock := bootDaemonsQuick(t, Options{})
	require(h, "d", pv(t, `{argv: "echo x; exit 1", restart: on-error}`))
	h.waitOutput("d", 2)
	for _, d := range clock.got() {
		if d != DelayAfterError {
			t.Errorf("restart delay %v, want 1s", d)
		}
	}
	if h.everHad(state("d", services.StateComplete)) {
		t.Error("complete after failures under on-error")
	}
}

func TestScenario42OneShotCompletesNeverReady(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `<one-shot "true">`))
	h.waitHas(state("d", services.StateComplete), true)
	if !h.everHad(state("d", services.StateStarted)) {
		t.Error("never started")
	}
	if h.everHad(state("d", services.StateReady)) {
		t.Error("one-shot became ready")
	}
}

func TestScenario43RestartNeverExit1Completes(t *testing.T) {
	parallel(t)
	h, clock := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "exit 1", restart: never}`))
	h.waitHas(state("d", services.StateComplete), true)
	if len(clock.got()) != 0 {
		t.Errorf("restarted: %v", clock.got())
	}
}

func TestScenario44RestartAllFailsAndKillsSiblings(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{Supervise: services.SuperviseOptions{Backoff: 300 * time.Millisecond}})
	require(h, "d",
		pv(t, `"echo $$; exec sleep 100"`),
		pv(t, `{argv: "sleep 0.3; exit 1", restart: all}`))
	first := h.waitOutput("d", 1)
	sib := printedPid(t, first[0])
	if !alive(sib) {
		t.Fatalf("sibling %d not running", sib)
	}
	h.waitHas(state("d", services.StateFailed), true)
	eventually(t, func() bool { return !alive(sib) }, "sibling %d still alive", sib)
	// The supervisor restarts the whole daemon: started again, a new
	// sibling process.
	h.waitHas(state("d", services.StateStarted), true)
	lines := h.waitOutput("d", 2)
	if printedPid(t, lines[1]) == sib {
		t.Error("sibling not restarted with a new process")
	}
	eventually(t, func() bool { return h.countHistory("+"+preserves.FormatText(state("d", services.StateFailed))) >= 2 },
		"second failure")
}

func TestScenario45ReadyOnStart(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "a", pv(t, `"exec sleep 100"`))
	require(h, "b", pv(t, `{argv: "exec sleep 100", readyOnStart: #f}`))
	h.waitHas(state("a", services.StateReady), true)
	h.waitHas(state("b", services.StateStarted), true)
	h.settle()
	if h.everHad(state("b", services.StateReady)) {
		t.Error("readyOnStart #f became ready on its own")
	}
}

func TestScenario46TwoSpecsTwoProcesses(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	_, unspec := require(h, "d", pv(t, `"echo $$; exec sleep 100"`), pv(t, `"echo $$; exec sleep 200"`))
	lines := h.waitOutput("d", 2)
	h.waitHas(state("d", services.StateReady), true)
	p1, p2 := printedPid(t, lines[0]), printedPid(t, lines[1])
	if p1 == p2 || !alive(p1) || !alive(p2) {
		t.Fatalf("pids %d %d", p1, p2)
	}
	// Which line came from which spec: ask /proc.
	cmd := func(pid int) string {
		b, _ := readFile("/proc/" + itoa(pid) + "/cmdline")
		return b
	}
	eventually(t, func() bool { return strings.Contains(cmd(p1)+cmd(p2), "sleep\x00100") }, "exec")
	p100, p200 := p1, p2
	if !strings.Contains(cmd(p1), "100") {
		p100, p200 = p2, p1
	}
	unspec[0]() // retract the sleep 100 spec
	eventually(t, func() bool { return !alive(p100) }, "sleep 100 (%d) still alive", p100)
	h.settle()
	if !alive(p200) {
		t.Error("retracting one spec killed the other process")
	}
	if !h.has(state("d", services.StateReady)) {
		t.Error("no longer ready after retracting one of two running specs")
	}
	// A new spec makes it un-ready until its process has spawned; a spec
	// that cannot spawn keeps it un-ready.
	h.assert(preserves.Rec("daemon", preserves.Symbol("d"), pv(t, `["/nonexistent"]`)))
	h.waitHas(state("d", services.StateReady), false)
	h.settle()
	if h.has(state("d", services.StateReady)) {
		t.Error("ready although a spec cannot spawn")
	}
}

func TestScenario46ReadyOnlyWhenBothSpawned(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	// The second spec cannot spawn, so the daemon is never ready: it is
	// failed, in a state of its own (cannot-start), with the cause.
	require(h, "d", pv(t, `"exec sleep 100"`), pv(t, `["/nonexistent"]`))
	h.waitOutput("d", 0)
	h.waitHas(state("d", services.StateFailed), true)
	eventually(t, func() bool { return h.warns.Has("cannot start process", "/nonexistent") }, "spawn failure logged")
	h.settle()
	if h.everHad(state("d", services.StateReady)) {
		t.Error("ready with one of two processes unable to spawn")
	}
}

func TestScenario47UnrequireKillsAndWithdrawsStates(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	unrequire, _ := require(h, "d", pv(t, `"echo $$; exec sleep 100"`))
	pid := printedPid(t, h.waitOutput("d", 1)[0])
	h.waitHas(state("d", services.StateReady), true)
	t0 := time.Now()
	unrequire()
	eventually(t, func() bool { return !alive(pid) }, "process %d alive", pid)
	// SIGTERM suffices for sleep; needing the SIGKILL escalation would
	// take the whole stop timeout.
	if d := time.Since(t0); d >= DefaultStopTimeout {
		t.Errorf("stop took %v", d)
	}
	h.waitHas(state("d", services.StateStarted), false)
	h.waitHas(state("d", services.StateReady), false)
	h.settle()
	for _, v := range h.rec.Present() {
		if r, ok := v.(*preserves.Record); ok && r.Label == service.LabelServiceState && preserves.Equal(r.Fields[0], dname("d")) {
			t.Errorf("left behind: %v", v)
		}
	}
}

// Go deviation (operator issue): a spawn failure is retried after 1 s,
// then 2 s, 4 s… up to MaxSpawnDelay, instead of every second.
func TestSpawnErrorBacksOff(t *testing.T) {
	parallel(t)
	h, clock := bootDaemonsQuick(t, Options{})
	require(h, "d", pv(t, `["/nonexistent"]`))
	eventually(t, func() bool { return len(clock.got()) >= 3 }, "three retries")
	want := []time.Duration{DelayAfterError, 2 * DelayAfterError, 4 * DelayAfterError}
	for i, d := range clock.got()[:3] {
		if d != want[i] {
			t.Errorf("retry %d after %v, want %v", i+1, d, want[i])
		}
	}
	if !h.warns.Has("cannot start process", "program not found: /nonexistent") {
		t.Errorf("spawn error not logged: %q", h.warns.Lines())
	}
	if spawnDelay(20, 0) != MaxSpawnDelay {
		t.Errorf("delay not capped: %v", spawnDelay(20, 0))
	}
}

func TestScenario49ClearEnv(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: ["/usr/bin/env"], clearEnv: #t, env: {FOO: "bar"}, restart: on-error}`))
	h.waitHas(state("d", services.StateComplete), true)
	out := h.output("d")
	if len(out) != 1 || !preserves.Equal(out[0].line, preserves.String("FOO=bar\n")) {
		t.Errorf("output %+v", out)
	}
}

func TestScenario50Dir(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "pwd", dir: "/tmp"}`))
	l := h.waitOutput("d", 1)[0]
	if !preserves.Equal(l.line, preserves.String("/tmp\n")) {
		t.Errorf("pwd printed %v", l.line)
	}
}

func TestScenario51InvalidRestartFailsWithBackoff(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{Supervise: services.SuperviseOptions{Backoff: 200 * time.Millisecond}})
	require(h, "d", pv(t, `{argv: "x", restart: sometimes}`))
	failed := "+" + preserves.FormatText(state("d", services.StateFailed))
	started := "+" + preserves.FormatText(state("d", services.StateStarted))
	eventually(t, func() bool { return h.countHistory(failed) >= 3 && h.countHistory(started) >= 3 },
		"failed/started cycles")
	if !h.warns.Has("invalid process configuration", "sometimes") {
		t.Errorf("no warning naming the spec: %q", h.warns.Lines())
	}
}

func TestScenario52UnparsableSpecFailedNeverReady(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	_, unspec := require(h, "d", pv(t, `42`))
	h.waitHas(state("d", services.StateFailed), true)
	if !h.warns.Has("invalid process specification", `"spec":"42"`) {
		t.Errorf("no warning naming the value: %q", h.warns.Lines())
	}
	h.settle()
	if h.everHad(state("d", services.StateReady)) || h.everHad(state("d", services.StateComplete)) {
		t.Error("ready or complete with an unparsable spec")
	}
	// Retracting it clears the failure. No spec is left, but one was:
	// not ready (Go deviation, tally).
	unspec[0]()
	h.waitHas(state("d", services.StateStarted), true)
	h.waitHas(state("d", services.StateFailed), false)
	h.settle()
	if h.has(state("d", services.StateReady)) {
		t.Error("ready once its only spec was retracted")
	}
}

func TestScenario54NonUTF8ByteString(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "printf '\\377ok\\n'", restart: never}`))
	l := h.waitOutput("d", 1)[0]
	if !preserves.Equal(l.line, preserves.ByteString("\xffok\n")) {
		t.Errorf("line %#v, want a byte string", l.line)
	}
}

func TestStderrAndPartialLastLine(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "echo oops >&2; printf tail", restart: never}`))
	h.waitHas(state("d", services.StateComplete), true)
	out := h.output("d")
	if len(out) != 2 {
		t.Fatalf("output %+v", out)
	}
	got := map[string]preserves.Value{}
	for _, l := range out {
		got[preserves.FormatText(l.stream)] = l.line
	}
	if !preserves.Equal(got["stderr"], preserves.String("oops\n")) || !preserves.Equal(got["stdout"], preserves.String("tail")) {
		t.Errorf("output %v", got)
	}
}

func TestRestartServiceRestartsDaemon(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `"echo $$; exec sleep 100"`))
	pid := printedPid(t, h.waitOutput("d", 1)[0])
	h.waitHas(state("d", services.StateReady), true)
	h.send(h.env.Config, services.RestartService(dname("d")))
	lines := h.waitOutput("d", 2)
	if printedPid(t, lines[1]) == pid {
		t.Error("same process after restart-service")
	}
	eventually(t, func() bool { return !alive(pid) }, "old process %d alive", pid)
	h.waitHas(state("d", services.StateReady), true)
}

func TestDependsOnDaemonReady(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	h.assert(preserves.Rec("daemon", preserves.Symbol("db"), pv(t, `"exec sleep 100"`)))
	h.assert(services.DependsOn(dname("app"), state("db", services.StateReady)))
	require(h, "app", pv(t, `"echo app; exec sleep 100"`))
	h.waitHas(state("db", services.StateReady), true)
	h.waitHas(state("app", services.StateReady), true)
	if l := h.waitOutput("app", 1)[0]; !preserves.Equal(l.line, preserves.String("app\n")) {
		t.Errorf("app output %v", l.line)
	}
}

func TestMalformedDaemonNameReportsFailed(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	h.assert(services.RequireService(preserves.Rec("daemon")))
	h.waitHas(services.ServiceState(preserves.Rec("daemon"), services.StateFailed), true)
	if !h.warns.Has("malformed daemon service name") {
		t.Errorf("no warning: %q", h.warns.Lines())
	}
}

func TestNoDaemonSpecsReadyAfterRoundTrip(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "empty")
	h.waitHas(state("empty", services.StateReady), true)
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func TestSystemShutdownStopsDaemonsFirst(t *testing.T) {
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `"echo $$; sleep 100 & exec sleep 100"`))
	require(h, "stubborn", pv(t, `{argv: "echo $$; trap '' TERM; sleep 100 & wait", stopTimeout: 0.3}`))
	p1 := printedPid(t, h.waitOutput("d", 1)[0])
	p2 := printedPid(t, h.waitOutput("stubborn", 1)[0])
	h.waitHas(state("d", services.StateReady), true)
	h.waitHas(state("stubborn", services.StateReady), true)
	ctxShutdown(t, h)
	// Shutdown returns only once every linked task has returned, and a
	// daemon's task returns only once its whole process group is gone.
	live := liveGroups()
	if live[p1] || live[p2] || Len() != 0 {
		t.Errorf("after shutdown: group %d live %v, group %d live %v, children %d", p1, live[p1], p2, live[p2], Len())
	}
}
