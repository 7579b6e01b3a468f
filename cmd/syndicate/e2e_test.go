package main

// End-to-end tests: the CLI (runCtx, in-process) against a real server
// built from the dataspace and services packages with the admin endpoint.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/status"
)

var waitFor = testutil.WaitFor

// testServer is a small server: config dataspace, the service framework
// (dependency tracker, milestones), the admin socket, and a record of the
// messages sent to the config dataspace.
type testServer struct {
	sys  *dataspace.System
	fr   dataspace.FacetRef
	cfg  *dataspace.Ref
	path string

	mu   sync.Mutex
	msgs []string
}

func newTestServer(tb testing.TB, opts admin.Options) *testServer {
	s := &testServer{sys: dataspace.NewSystem(dataspace.Options{}), path: filepath.Join(tb.TempDir(), "admin.sock")}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(tb, s.sys.Shutdown(ctx))
	})
	booted := make(chan error, 1)
	s.sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		s.cfg = t.Create(dataspace.NewDataspace())
		s.fr = t.FacetRef()
		env := services.Env{Config: s.cfg}
		if err := services.Boot(t, env); err != nil {
			return err
		}
		t.OnMessage(s.cfg, pattern.Bind{Pattern: pattern.Discard{}}, func(_ *dataspace.Turn, c []preserves.Value) error {
			s.mu.Lock()
			s.msgs = append(s.msgs, preserves.FormatText(c[0]))
			s.mu.Unlock()
			return nil
		})
		booted <- admin.ListenWith(t, env, s.path, opts)
		return nil
	})
	require.NoError(tb, <-booted)
	return s
}

// assert makes v in the config dataspace from the server side; the returned
// function retracts it.
func (s *testServer) assert(tb testing.TB, text string) (retract func()) {
	v, err := preserves.ParseText(text)
	require.NoError(tb, err)
	var h dataspace.Handle
	done := make(chan struct{})
	s.fr.Activate(func(t *dataspace.Turn) error {
		h = t.Assert(s.cfg, v)
		close(done)
		return nil
	})
	<-done
	return func() {
		s.fr.Activate(func(t *dataspace.Turn) error { t.Retract(h); return nil })
	}
}

// messages are the messages the server received, but the admin
// endpoint's `<request-origin …>` companions (origins).
func (s *testServer) messages() []string { return s.messagesIf(false) }

// origins are the `<request-origin …>` messages the server received.
func (s *testServer) origins() []string { return s.messagesIf(true) }

func (s *testServer) messagesIf(origin bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		if strings.HasPrefix(m, "<request-origin ") == origin {
			out = append(out, m)
		}
	}
	return out
}

// cliRun runs the CLI to completion.
func cliRun(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errb testutil.Buffer
	code = runCtx(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// background runs a long-lived CLI command until stop is called; stop
// returns its exit status.
type background struct {
	out, err testutil.Buffer
	cancel   context.CancelFunc
	done     chan int
	once     sync.Once
	code     int
}

func startCLI(args ...string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1)}
	go func() { b.done <- runCtx(ctx, args, strings.NewReader(""), &b.out, &b.err) }()
	return b
}

func (b *background) stop(tb testing.TB) int {
	b.once.Do(func() {
		b.cancel()
		select {
		case b.code = <-b.done:
		case <-time.After(10 * time.Second):
			tb.Fatal("command did not stop when interrupted")
		}
	})
	return b.code
}

func TestObserveSeesAssertionAppearAndVanish(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	obs := startCLI("--admin", s.path, "observe", "<probe ?>")
	defer obs.stop(t)

	// assert holds the value until interrupted.
	as := startCLI("--admin", s.path, "assert", `<probe "held">`)
	waitFor(t, "+ line", func() bool { return strings.Contains(obs.out.String(), `+ <probe "held">`) })
	// The observer can see the assertion before assert's own sync round
	// trip returns, so its confirmation is awaited, not assumed.
	waitFor(t, "asserted confirmation", func() bool { return strings.Contains(as.err.String(), "asserted") })
	code, out, _ := cliRun(t, "--admin", s.path, "dump", "<probe _>")
	require.Equal(t, 0, code)
	require.Equal(t, "<probe \"held\">\n", out, "the assertion is held while assert runs")

	require.Equal(t, 0, as.stop(t))
	waitFor(t, "- line", func() bool { return strings.Contains(obs.out.String(), `- <probe "held">`) })

	// Messages show as ! lines.
	code, _, errs := cliRun(t, "--admin", s.path, "send", "<probe 7>")
	require.Equal(t, 0, code, errs)
	waitFor(t, "! line", func() bool { return strings.Contains(obs.out.String(), "! <probe 7>") })

	require.Equal(t, 0, obs.stop(t))
	require.Equal(t, "+ <probe \"held\">\n- <probe \"held\">\n! <probe 7>\n", obs.out.String())
}

func TestDumpShowsCurrentAssertions(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, `<zeta {b: [1 2] a: "x"}>`)
	retract := s.assert(t, `<alpha 1>`)

	code, out, errs := cliRun(t, "--admin", s.path, "dump")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "<alpha 1>\n")
	require.Contains(t, out, `<zeta {a: "x", b: [1 2]}>`)
	require.Less(t, strings.Index(out, "<alpha 1>"), strings.Index(out, "<zeta"), "sorted in Preserves order")
	require.NotContains(t, out, "Observe", "subscriptions are hidden without --all")

	code, out, _ = cliRun(t, "--admin", s.path, "dump", "--all")
	require.Equal(t, 0, code)
	require.Contains(t, out, "<Observe", "--all shows subscriptions (the framework's, at least)")
	require.NotContains(t, out, "ref<dump", "but not dump's own")

	code, out, _ = cliRun(t, "--admin", s.path, "dump", "<zeta {a: ?}>")
	require.Equal(t, 0, code)
	require.Equal(t, "<zeta {a: \"x\", b: [1 2]}>\n", out)

	retract()
	waitFor(t, "retraction", func() bool {
		_, out, _ := cliRun(t, "--admin", s.path, "dump", "<alpha _>")
		return out == ""
	})
}

func TestSendAndRestartDeliver(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon web>>")
	code, _, errs := cliRun(t, "--admin", s.path, "send", `<ping "x">`)
	require.Equal(t, 0, code, errs)
	// --admin-socket is the flag's name; --admin stays as an alias.
	code, _, errs = cliRun(t, "--admin-socket", s.path, "restart", "<daemon web>")
	require.Equal(t, 0, code, errs)
	code, _, errs = cliRun(t, "--admin", s.path, "send", "<daemon x {argv: []}>")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "syndicate: warning: 1:18: argv: the command line is empty: it needs at least a program\n", errs,
		"an invalid declaration is sent, with a warning")
	waitFor(t, "messages", func() bool { return len(s.messages()) >= 3 })
	require.Equal(t, []string{`<ping "x">`, "<restart-service <daemon web>>", `<daemon x {argv: []}>`}, s.messages())
}

// TestRestartIsNeverLost: `restart` returns once its message has reached
// the server, so closing the connection right after never loses it. (Its
// final round trip once went through a fresh actor, which could overtake
// the message still being committed by the actor that sent it.)
func TestRestartIsNeverLost(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon web>>")
	const n = 30
	for i := range n {
		code, _, errs := cliRun(t, "--admin", s.path, "restart", "<daemon web>")
		require.Equal(t, 0, code, "restart %d: %s", i, errs)
	}
	waitFor(t, "every restart message", func() bool { return len(s.messages()) >= n })
	require.Len(t, s.messages(), n)
}

func TestStatus(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<require-service <milestone boot>>")
	s.assert(t, "<require-service <daemon web>>")
	s.assert(t, "<depends-on <daemon web> <service-state <daemon never> ready>>")
	s.assert(t, "<run-service <daemon db>>")
	s.assert(t, "<service-state <daemon db> started>")
	s.assert(t, "<service-state <daemon db> ready>")
	since := time.Now().Add(-90 * time.Second).UTC().Format(time.RFC3339)
	s.assert(t, `<process-status <daemon db> {pid: 4242, restarts: 3, since: "`+since+`"}>`)

	var svcs []status.Service
	waitFor(t, "milestone ready", func() bool {
		code, out, errs := cliRun(t, "--admin", s.path, "status", "--json")
		require.Equal(t, 0, code, errs)
		require.NoError(t, json.Unmarshal([]byte(out), &svcs), out)
		for _, sv := range svcs {
			if sv.Name == "<milestone boot>" && strings.Join(sv.States, ",") == "started,ready" {
				return true
			}
		}
		return false
	})
	byName := map[string]status.Service{}
	for _, sv := range svcs {
		byName[sv.Name] = sv
	}
	db := byName["<daemon db>"]
	require.True(t, db.Running)
	require.False(t, db.Required)
	require.Equal(t, []string{"started", "ready"}, db.States)
	require.Len(t, db.Processes, 1)
	require.Equal(t, int64(4242), db.Processes[0].PID)
	require.Equal(t, int64(3), db.Processes[0].Restarts)
	web := byName["<daemon web>"]
	require.True(t, web.Required)
	require.False(t, web.Running, "held back by its dependency")
	require.True(t, byName["<daemon never>"].Required, "dependees are required by the tracker")

	code, out, _ := cliRun(t, "--admin", s.path, "status", "<daemon _>")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `^SERVICE\s+WANTED\s+STATE\s+FOR\s+PID\s+RESTARTS\s+LAST EXIT\s+REASON$`, lines[0])
	require.Regexp(t, `^<daemon db>\s+run\s+started,ready\s+1m3\ds\s+4242\s+3\s+-\s+-$`, lines[1])
	// The reason is empty until the condition has lasted services.DiagnosisGrace,
	// which a loaded machine may take to reach this line.
	require.Regexp(t, `^<daemon never>\s+required\s+starting\s+-\s+-\s+-\s+-\s+(-|no built-in service and no script provides <daemon never> \(nothing reports its state\))$`, lines[2], "running, no state reported yet")
	require.Regexp(t, `^<daemon web>\s+required\s+waiting\s+-\s+-\s+-\s+-\s+waiting for <daemon never> ready$`, lines[3], "required, held back")
}

// TestStatusFailureReasonsAndExitCode plays the daemon service's part with
// <service-info …>: the table shows the phase, restarts, last exit and
// reason with its position, status exits 1 while a required service has
// failed, a dependency cycle is named, and --json carries every field.
func TestStatusFailureReasonsAndExitCode(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	exitAt := time.Now().Add(-5 * time.Second).UTC().Format(time.RFC3339Nano)
	since := time.Now().Add(-7 * time.Second).UTC().Format(time.RFC3339Nano)
	s.assert(t, "<require-service <daemon web>>")
	s.assert(t, "<run-service <daemon web>>")
	s.assert(t, "<service-state <daemon web> failed>")
	s.assert(t, `<service-info <daemon web> {since: "`+since+`", restarts: 1}>`)
	s.assert(t, `<service-info <daemon web> {restarts: 4, recent: 2, exit: "program not found: /usr/bin/web", exit-at: "`+exitAt+`", phase: cannot-start, reason: ["cannot start: program not found: /usr/bin/web"], pos: "etc/web.pr:3:1"}>`)
	s.assert(t, "<require-service <daemon a>>")
	s.assert(t, "<depends-on <daemon a> <service-state <daemon b> ready>>")
	s.assert(t, "<depends-on <daemon b> <service-state <daemon a> ready>>")

	var code int
	var out string
	waitFor(t, "web failed with its info", func() bool {
		code, out, _ = cliRun(t, "--admin", s.path, "status")
		return strings.Contains(out, "cannot-start") && strings.Contains(out, "dependency cycle")
	})
	require.Equal(t, 1, code, "a required service has failed")
	require.Regexp(t, `<daemon web>\s+required\s+failed \(cannot-start\)\s+5s\s+-\s+5 \(2 recent\)\s+program not found: /usr/bin/web, 5s ago\s+cannot start \(etc/web.pr:3:1\)\n`, out)
	require.Regexp(t, `<daemon a>\s+required\s+waiting\s+.*dependency cycle: <daemon a> → <daemon b> → <daemon a>; waiting for <daemon b> ready`, out)

	code, out, _ = cliRun(t, "--admin", s.path, "status", "--json", "<daemon web>")
	require.Equal(t, 1, code)
	var arr []status.Service
	require.NoError(t, json.Unmarshal([]byte(out), &arr), out)
	require.Len(t, arr, 1)
	one := arr[0]
	require.Equal(t, 5, one.Restarts)
	require.Equal(t, 2, one.Recent)
	require.Equal(t, "cannot-start", one.Phase)
	require.Equal(t, "etc/web.pr:3:1", one.Pos)
	require.Equal(t, []string{"cannot start: program not found: /usr/bin/web"}, one.Reasons)
	require.NotNil(t, one.ExitAt)
	require.NotNil(t, one.Since)

	// A silent built-in (http-static-files) shows that it runs.
	s.assert(t, `<run-service <http-static-files "/www" 1>>`)
	s.assert(t, `<service-info <http-static-files "/www" 1> {phase: running}>`)
	waitFor(t, "static files running", func() bool {
		_, out, _ = cliRun(t, "--admin", s.path, "status", "<http-static-files _ _>")
		return strings.Contains(out, "running")
	})
	require.Regexp(t, `<http-static-files "/www" 1>\s+run\s+running\s`, out)

	// Nothing failed among the matches: exit 0.
	code, _, _ = cliRun(t, "--admin", s.path, "status", "<daemon a>")
	require.Equal(t, 0, code)

	// A misspelt name matches nothing: that is an error, not a healthy
	// empty table.
	code, _, errs := cliRun(t, "--admin", s.path, "status", "<daemon nosuch>")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "no service matches <daemon nosuch>")
}

// TestStatusName: the NAME view shows the dependency chain and the last
// output lines the daemon service answers an output request with.
func TestStatusName(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<require-service <daemon app>>")
	s.assert(t, "<run-service <daemon app>>")
	s.assert(t, "<service-state <daemon app> started>")
	s.assert(t, "<depends-on <daemon app> <service-state <daemon db> ready>>")
	s.assert(t, "<depends-on <daemon db> <service-state <milestone net> ready>>")
	s.assert(t, "<service-state <daemon db> started>")
	s.assert(t, "<service-state <daemon db> ready>")
	s.assert(t, `<service-output <daemon app> [{at: "2026-01-01T10:00:00Z", stream: stdout, line: "hello"} {at: "2026-01-01T10:00:01Z", stream: stderr, line: "oops"}]>`)
	var out string
	waitFor(t, "detail view", func() bool {
		_, out, _ = cliRun(t, "--admin", s.path, "status", "<daemon app>")
		return strings.Contains(out, "oops")
	})
	require.Contains(t, out, "<daemon app>\n  wanted:")
	require.Regexp(t, `(?m)^    <daemon db> ready: ok \(now started,ready\)$`, out)
	require.Regexp(t, `(?m)^      <milestone net> ready: (waiting|ok) \(now `, out)
	require.Regexp(t, `(?m)^  last 2 output lines:$`, out)
	require.Regexp(t, `(?m)^    \d\d:\d\d:\d\d\.000 stdout hello$`, out)

	code, out, _ := cliRun(t, "--admin", s.path, "status", "--json", "<daemon app>")
	require.Equal(t, 0, code)
	var arr []status.Service
	require.NoError(t, json.Unmarshal([]byte(out), &arr), out)
	require.Len(t, arr, 1)
	one := arr[0]
	require.Len(t, one.Output, 2)
	require.Len(t, one.DependsOn, 1)
	require.Equal(t, "<daemon db>", one.DependsOn[0].Name)
	require.True(t, one.DependsOn[0].Met)
	require.Equal(t, "<milestone net>", one.DependsOn[0].DependsOn[0].Name)
}

// TestStatusWatchShowsRestartsRising plays the daemon service's part: the
// process-status of a crash-looping daemon is replaced with a rising restart
// count, and status --watch --json reports each value.
// TestRestartUnknownFails: restart of a service that is not running
// exits 1 with a message, and sends nothing.
func TestRestartUnknownFails(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	t.Setenv(adminSocketEnv, s.path) // the socket from the environment
	code, _, errs := cliRun(t, "restart", "<daemon nosuch>")
	require.Equal(t, 1, code)
	require.Equal(t, "syndicate: no service matches <daemon nosuch>\n", errs)
	code, _, errs = cliRun(t, "send", `<ping "after">`)
	require.Equal(t, 0, code, errs)
	waitFor(t, "ping", func() bool { return len(s.messages()) >= 1 })
	require.Equal(t, []string{`<ping "after">`}, s.messages())
}

func TestStatusWatchShowsRestartsRising(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<service-state <daemon crash> failed>")
	retract := s.assert(t, `<process-status <daemon crash> {pid: 100, restarts: 1, since: "2026-01-01T00:00:00Z"}>`)
	w := startCLI("--admin", s.path, "status", "--watch", "--json", "<daemon crash>")
	defer w.stop(t)
	restarts := func() []int64 {
		var out []int64
		for _, line := range strings.Split(strings.TrimSpace(w.out.String()), "\n") {
			var svcs []status.Service
			if json.Unmarshal([]byte(line), &svcs) == nil && len(svcs) == 1 && len(svcs[0].Processes) == 1 {
				out = append(out, svcs[0].Processes[0].Restarts)
			}
		}
		return out
	}
	waitFor(t, "first snapshot", func() bool { return len(restarts()) > 0 })
	for r := 2; r <= 3; r++ {
		next := s.assert(t, `<process-status <daemon crash> {pid: `+itoa(100+r)+`, restarts: `+itoa(r)+`, since: "2026-01-01T00:00:00Z"}>`)
		retract()
		retract = next
		waitFor(t, "restart count "+itoa(r), func() bool {
			rs := restarts()
			return len(rs) > 0 && rs[len(rs)-1] == int64(r)
		})
	}
	require.Equal(t, 0, w.stop(t))
	rs := restarts()
	for i := 1; i < len(rs); i++ {
		require.GreaterOrEqual(t, rs[i], rs[i-1], "the restart count never goes down: %v", rs)
	}
}

func itoa(i int) string { return preserves.Int(i).String() }

func TestErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := cliRun(t, "--admin", filepath.Join(dir, "none.sock"), "status")
	require.Equal(t, 1, code)
	require.Equal(t, "syndicate: server not running (no admin socket "+filepath.Join(dir, "none.sock")+")\n", errs)

	other := os.Getuid() + 1
	s := newTestServer(t, admin.Options{UID: &other})
	code, _, errs = cliRun(t, "--admin", s.path, "dump")
	require.Equal(t, 1, code)
	require.Regexp(t, `^syndicate: permission denied by admin socket .*: uid \d+ is not the server's user\n$`, errs)

	code, _, errs = cliRun(t, "--admin", s.path, "observe", "<a\n  #{1}>")
	require.Equal(t, 1, code)
	require.Equal(t, "syndicate: bad pattern at 2:3: sets are not allowed in a pattern\n", errs)

	code, _, errs = cliRun(t, "observe", "<a <b>")
	require.Equal(t, 1, code)
	require.Regexp(t, `^syndicate: bad pattern at 1:\d+: .+\n$`, errs)

	code, _, errs = cliRun(t, "frobnicate")
	require.Equal(t, 2, code)
	require.Equal(t, "syndicate: unknown command \"frobnicate\" (see syndicate help)\n", errs)
	code, _, errs = cliRun(t, "stauts")
	require.Equal(t, 2, code)
	require.Equal(t, "syndicate: unknown command \"stauts\": did you mean status?\n", errs)

	code, _, errs = cliRun(t, "--connect", `<tcp "127.0.0.1" 1>`, "status")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--connect needs --ref")
}
