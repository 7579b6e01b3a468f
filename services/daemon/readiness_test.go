package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// readinessRun records what a Runner reports for one readiness spec run
// by the helper daemon (readinessChild).
type readinessRun struct {
	mu       sync.Mutex
	readies  int
	notes    []string
	warns    []string
	exits    []Exit
	nexts    []Next
	lines    []string
	outcome  chan Outcome
	cancel   context.CancelFunc
	pidReady int
}

func (r *readinessRun) get() (readies int, notes, warns, lines []string, exits []Exit, nexts []Next) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readies, append([]string(nil), r.notes...), append([]string(nil), r.warns...),
		append([]string(nil), r.lines...), append([]Exit(nil), r.exits...), append([]Next(nil), r.nexts...)
}

func (n Notification) String() string {
	var parts []string
	if n.Ready {
		parts = append(parts, "READY")
	}
	if n.Reloading {
		parts = append(parts, "RELOADING")
	}
	if n.Stopping {
		parts = append(parts, "STOPPING")
	}
	if n.HasStatus {
		parts = append(parts, "STATUS="+n.Status)
	}
	if n.MainPID != 0 {
		parts = append(parts, "MAINPID")
	}
	return strings.Join(parts, ",")
}

// runReadiness runs the helper with steps under r (restart never unless
// the spec says otherwise) until the test ends.
func runReadiness(t *testing.T, r Readiness, restart RestartPolicy, steps ...string) *readinessRun {
	t.Helper()
	leakCheck(t)
	spec := helperSpec("readiness", steps...)
	spec.ReadyOnStart = false
	spec.Readiness = r
	spec.Restart = restart
	spec.StopTimeout = 2 * time.Second
	run := &readinessRun{outcome: make(chan Outcome, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	runner := NewRunner(nil)
	go func() {
		run.outcome <- runner.Run(ctx, spec, Events{
			Ready: func(pid int) { run.mu.Lock(); run.readies++; run.pidReady = pid; run.mu.Unlock() },
			Notify: func(_ int, n Notification) {
				run.mu.Lock()
				run.notes = append(run.notes, n.String())
				run.mu.Unlock()
			},
			Warn: func(_ int, msg string) { run.mu.Lock(); run.warns = append(run.warns, msg); run.mu.Unlock() },
			Line: func(l Line) {
				run.mu.Lock()
				run.lines = append(run.lines, strings.TrimSpace(string(l.Text)))
				run.mu.Unlock()
			},
			Exited: func(e Exit, n Next) {
				run.mu.Lock()
				run.exits = append(run.exits, e)
				run.nexts = append(run.nexts, n)
				run.mu.Unlock()
			},
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-run.outcome:
		case <-time.After(testutil.WaitPatience):
			t.Error("runner did not stop")
		}
	})
	return run
}

func (r *readinessRun) waitReady(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, "ready", func() bool { n, _, _, _, _, _ := r.get(); return n == 1 })
}

// waitFailure waits for the one exit of a failed readiness and checks its
// reason.
func (r *readinessRun) waitFailure(t *testing.T, want error, text string) Exit {
	t.Helper()
	select {
	case o := <-r.outcome:
		r.outcome <- o
		if o != GaveUp {
			t.Fatalf("outcome %v, want GaveUp", o)
		}
	case <-time.After(testutil.WaitPatience):
		t.Fatal("the process was never failed")
	}
	_, _, _, _, exits, nexts := r.get()
	if len(exits) != 1 || nexts[0].Action != ActGiveUp {
		t.Fatalf("exits %v nexts %v", exits, nexts)
	}
	e := exits[0]
	if !errors.Is(e.Failure, want) || !strings.Contains(e.String(), text) || e.Success() {
		t.Fatalf("exit %q (failure %v), want %v mentioning %q", e, e.Failure, want, text)
	}
	return e
}

func TestReadinessNotificationFD(t *testing.T) {
	parallel(t)
	run := runReadiness(t, Readiness{Kind: ReadyFD, FD: 5, Timeout: time.Minute}, RestartNever,
		"say:before", "fd:5", "say:after")
	run.waitReady(t)
	// Ready came from the write, not from the start.
	testutil.WaitFor(t, "output", func() bool { _, _, _, l, _, _ := run.get(); return len(l) == 2 })
	if n, _, w, _, _, _ := run.get(); n != 1 || len(w) != 0 {
		t.Errorf("readies %d warnings %q", n, w)
	}
}

// The s6 convention: a daemon that closes its notification fd without a
// newline never becomes ready; past readyTimeout it is stopped and failed.
func TestReadinessNotificationFDNeverReady(t *testing.T) {
	parallel(t)
	// The child must close the fd before the deadline, however loaded
	// the machine: the deadline is generous, and the test runs in parallel.
	run := runReadiness(t, Readiness{Kind: ReadyFD, FD: 4, Timeout: 2 * time.Second}, RestartNever, "close:4")
	e := run.waitFailure(t, ErrNotReady, "no readiness (a newline on fd 4) within 2s")
	if e.Signal == 0 {
		t.Errorf("the process was not stopped by a signal: %v", e)
	}
	if n, _, w, _, _, _ := run.get(); n != 0 || len(w) != 1 || !strings.Contains(w[0], "without a newline") {
		t.Errorf("readies %d warnings %q", n, w)
	}
}

// Every sd_notify message the issue names, in order, from a real daemon.
func TestReadinessSDNotify(t *testing.T) {
	parallel(t)
	run := runReadiness(t, Readiness{Kind: ReadySDNotify, Timeout: time.Minute}, RestartNever,
		"notify:STATUS=starting up", "notify:READY=1", "notify:RELOADING=1\nSTATUS=reloading",
		`notify:READY=1\nSTATUS=serving`, "notify:STOPPING=1", "notify:X_UNKNOWN=1", "say:done")
	// Datagrams and output travel separately: wait for both.
	testutil.WaitFor(t, "done", func() bool { _, n, _, l, _, _ := run.get(); return len(l) == 1 && len(n) >= 5 })
	n, notes, warns, lines, _, _ := run.get()
	want := []string{"STATUS=starting up", "READY", "RELOADING,STATUS=reloading", "READY,STATUS=serving", "STOPPING"}
	if n != 1 || strings.Join(notes, "|") != strings.Join(want, "|") || len(warns) != 0 || lines[0] != "done" {
		t.Errorf("readies %d\nnotes %q\nwant  %q\nwarns %q lines %q", n, notes, want, warns, lines)
	}
}

// STATUS= text is made safe to display and bounded.
func TestReadinessStatusCleaned(t *testing.T) {
	parallel(t)
	long := strings.Repeat("é", statusMax)
	got := cleanStatus([]byte("a\tb\x1b[31m" + long + "\xff"))
	if !strings.HasPrefix(got, "a b [31m") || len(got) > statusMax+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("cleanStatus = %q", got)
	}
}

// MAINPID= is accepted for a member of the daemon's process group and
// refused for anything else.
func TestReadinessSDNotifyMainPID(t *testing.T) {
	parallel(t)
	run := runReadiness(t, Readiness{Kind: ReadySDNotify}, RestartNever,
		"mainpid-child", "notify:MAINPID=1", "notify:READY=1")
	run.waitReady(t)
	_, notes, warns, _, _, _ := run.get()
	if strings.Join(notes, "|") != "MAINPID|READY" || len(warns) != 1 || !strings.Contains(warns[0], "MAINPID=1 is not in the daemon's process group") {
		t.Errorf("notes %q warns %q", notes, warns)
	}
}

// A daemon flooding its notify socket with rejected messages gets a
// bounded number of warnings in the log.
func TestReadinessWarningsBounded(t *testing.T) {
	parallel(t)
	steps := []string{}
	for range 3 * maxWarnings {
		steps = append(steps, "notify:MAINPID=1")
	}
	run := runReadiness(t, Readiness{Kind: ReadySDNotify}, RestartNever, append(steps, "notify:READY=1")...)
	run.waitReady(t)
	_, _, warns, _, _, _ := run.get()
	if len(warns) != maxWarnings+1 || !strings.Contains(warns[maxWarnings], "suppressed") {
		t.Errorf("%d warnings: %q", len(warns), warns)
	}
}

// A daemon that is never ready is stopped after readyTimeout and, under
// policy never, the daemon gives up (failed) instead of completing.
func TestReadinessSDNotifyNeverReady(t *testing.T) {
	parallel(t)
	run := runReadiness(t, Readiness{Kind: ReadySDNotify, Timeout: 300 * time.Millisecond}, RestartNever, "notify:STATUS=stuck")
	run.waitFailure(t, ErrNotReady, "READY=1 on $NOTIFY_SOCKET")
}

// The watchdog: WATCHDOG_USEC reaches the daemon; pings keep it alive;
// when they stop, the process is stopped with the reason.
func TestReadinessWatchdogMissed(t *testing.T) {
	parallel(t)
	run := runReadiness(t, Readiness{Kind: ReadySDNotify, Timeout: time.Minute, Watchdog: time.Second}, RestartNever,
		"env:WATCHDOG_USEC", "notify:READY=1", "watchdog:100ms:15", "say:pings stopped")
	e := run.waitFailure(t, ErrWatchdog, "no WATCHDOG=1 within 1s")
	_, _, _, lines, _, _ := run.get()
	// 15 pings 100 ms apart span 1.5 s, longer than the interval: the
	// watchdog fired only after they stopped.
	if strings.Join(lines, "|") != "WATCHDOG_USEC=1000000|pings stopped" {
		t.Errorf("lines %q (exit %v)", lines, e)
	}
}

// EXTEND_TIMEOUT_USEC moves the ready deadline: a daemon that asks for
// more time survives its readyTimeout, and fails once the extension runs
// out, saying so.
func TestReadinessExtendTimeout(t *testing.T) {
	parallel(t)
	// The first extension must arrive within readyTimeout, however loaded
	// the machine: the times are generous, and the test runs in parallel.
	run := runReadiness(t, Readiness{Kind: ReadySDNotify, Timeout: 2 * time.Second}, RestartNever,
		"notify:EXTEND_TIMEOUT_USEC=4000000", "sleep:2500ms", "say:still alive", "notify:EXTEND_TIMEOUT_USEC=200000")
	run.waitFailure(t, ErrNotReady, "extended by EXTEND_TIMEOUT_USEC")
	if _, _, _, lines, _, _ := run.get(); len(lines) != 1 || lines[0] != "still alive" {
		t.Errorf("lines %q: the process was stopped before its extension ran out", lines)
	}
}

// WATCHDOG=trigger fails the daemon at once.
func TestReadinessWatchdogTrigger(t *testing.T) {
	parallel(t)
	run := runReadiness(t, Readiness{Kind: ReadySDNotify, Timeout: time.Minute, Watchdog: time.Hour}, RestartNever,
		"notify:READY=1", "notify:WATCHDOG=trigger")
	run.waitFailure(t, ErrWatchdog, "WATCHDOG=trigger")
}

// freePort returns a loopback port nobody listens on (just now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestReadinessListenTCP(t *testing.T) {
	parallel(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	run := runReadiness(t, Readiness{Kind: ReadyListen, Network: "tcp", Address: addr, Timeout: time.Minute}, RestartNever,
		"sleep:200ms", "listen:tcp:"+addr, "say:listening")
	run.waitReady(t)
	_, _, _, lines, _, _ := run.get()
	// The helper prints after listening; readiness may beat the line, but
	// never the listen: a ready before it would have failed to connect.
	if len(lines) > 1 {
		t.Errorf("lines %q", lines)
	}
}

func TestReadinessListenUnix(t *testing.T) {
	parallel(t)
	path := filepath.Join(t.TempDir(), "d.sock")
	run := runReadiness(t, Readiness{Kind: ReadyListen, Network: "unix", Address: path, Timeout: time.Minute}, RestartNever,
		"sleep:100ms", "listen:unix:"+path)
	run.waitReady(t)
}

// A socket that is never opened fails the service after readyTimeout.
func TestReadinessListenNeverOpened(t *testing.T) {
	parallel(t)
	path := filepath.Join(t.TempDir(), "never.sock")
	run := runReadiness(t, Readiness{Kind: ReadyListen, Network: "unix", Address: path, Timeout: 400 * time.Millisecond}, RestartNever)
	run.waitFailure(t, ErrNotReady, "unix "+path+" accepting connections")
}

// Under a restarting policy a readiness failure is an error exit: the
// process is restarted after the error delay.
func TestReadinessFailureRestarts(t *testing.T) {
	parallel(t)
	path := filepath.Join(t.TempDir(), "never.sock")
	run := runReadiness(t, Readiness{Kind: ReadyListen, Network: "unix", Address: path, Timeout: 200 * time.Millisecond}, RestartOnError)
	testutil.WaitFor(t, "two failed starts", func() bool { _, _, _, _, e, _ := run.get(); return len(e) >= 2 })
	_, _, _, _, exits, nexts := run.get()
	for i := range 2 {
		if !errors.Is(exits[i].Failure, ErrNotReady) || nexts[i].Action != ActRestart || nexts[i].Delay != DelayAfterError {
			t.Errorf("exit %d: %v next %+v", i, exits[i], nexts[i])
		}
	}
}

// The readiness keys parse, default and reject what they must.
func TestReadinessSpecKeys(t *testing.T) {
	parallel(t)
	ok := []struct {
		src  string
		want Readiness
	}{
		{`{argv: "x", readiness: <notification-fd 3>}`, Readiness{Kind: ReadyFD, FD: 3, Timeout: DefaultReadyTimeout}},
		{`{argv: "x", readiness: sd-notify, watchdog: 2.5, readyTimeout: 10}`, Readiness{Kind: ReadySDNotify, Timeout: 10 * time.Second, Watchdog: 2500 * time.Millisecond}},
		{`{argv: "x", readiness: <tcp 8080>, readyTimeout: 0}`, Readiness{Kind: ReadyListen, Network: "tcp", Address: "127.0.0.1:8080"}},
		{`{argv: "x", readiness: <tcp "::1" 80>}`, Readiness{Kind: ReadyListen, Network: "tcp", Address: "[::1]:80", Timeout: DefaultReadyTimeout}},
		{`{argv: "x", readiness: <unix "/run/d.sock">, readyOnStart: #f}`, Readiness{Kind: ReadyListen, Network: "unix", Address: "/run/d.sock", Timeout: DefaultReadyTimeout}},
	}
	for _, tc := range ok {
		s, err := ParseSpec(pv(t, tc.src))
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if s.Readiness != tc.want || s.ReadyOnStart {
			t.Errorf("%s: %+v readyOnStart %v, want %+v", tc.src, s.Readiness, s.ReadyOnStart, tc.want)
		}
	}
	bad := []struct{ src, msg string }{
		{`{argv: "x", readiness: <notification-fd 2>}`, "notification-fd (0-2 are stdio) must be an integer from 3"},
		{`{argv: "x", readiness: systemd}`, "readiness must be"},
		{`{argv: "x", readiness: <tcp 0>}`, "tcp port must be"},
		{`{argv: "x", readiness: <unix "">}`, "unix socket path"},
		{`{argv: "x", readiness: sd-notify, readyOnStart: #t}`, "contradicts"},
		{`{argv: "x", readiness: <tcp 1>, watchdog: 1}`, "watchdog needs readiness: sd-notify"},
		{`{argv: "x", readiness: sd-notify, watchdog: 0}`, "watchdog must be a positive"},
		{`{argv: "x", watchdog: 1}`, "needs a readiness protocol"},
		{`{argv: "x", readiness: sd-notify, readyTimeout: -1}`, "readyTimeout must be"},
	}
	for _, tc := range bad {
		_, err := ParseSpec(pv(t, tc.src))
		if !errors.Is(err, ErrInvalidField) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want invalid field %q", tc.src, err, tc.msg)
		}
	}
	_ = preserves.Symbol("")
}
