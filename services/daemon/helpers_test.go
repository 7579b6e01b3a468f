package daemon

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the supervised child: when
// GO_WANT_HELPER_PROCESS is set, TestMain runs helperMain instead of the
// tests (the immortal/os/exec pattern).
func TestMain(m *testing.M) {
	if mode := os.Getenv("GO_WANT_HELPER_PROCESS"); mode != "" {
		os.Exit(helperMain(mode))
	}
	flag.Parse()
	os.Exit(m.Run())
}

func helperArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

func helperMain(mode string) int {
	args := helperArgs()
	switch mode {
	case "ignore-term":
		// Ignores SIGTERM so that only the SIGKILL escalation stops it.
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "reaper":
		return reaperChild(args)
	case "readiness":
		return readinessChild(args)
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	}
	return 2
}

// helperSpec runs the test binary in the given helper mode.
func helperSpec(mode string, args ...string) *Spec {
	argv := append([]string{os.Args[0], "-test.run=^$", "--"}, args...)
	return &Spec{
		Argv:         argv,
		Env:          []EnvChange{{Name: "GO_WANT_HELPER_PROCESS", Value: mode}},
		ReadyOnStart: true,
		StopTimeout:  DefaultStopTimeout,
	}
}

func shSpec(script string) *Spec {
	return &Spec{Argv: []string{"sh", "-c", script}, ReadyOnStart: true, StopTimeout: DefaultStopTimeout}
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: "+format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pollerOnce opens the runtime's network poller (an epoll fd and an
// eventfd, kept for the life of the process) before the first count: a
// baseline taken before the first pipe of the process would otherwise
// be two short, and the first leak check report a leak that is not one.
// Under `go test` the poller usually opens at start (stdout is a pipe);
// run directly with output to a file, it opens at the first spawn.
var pollerOnce sync.Once

// countFDs counts the process's open file descriptors.
func countFDs() int {
	pollerOnce.Do(func() {
		if r, w, err := os.Pipe(); err == nil {
			r.Close()
			w.Close()
		}
	})
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// leakCheck records goroutines and file descriptors now and, at cleanup,
// waits (bounded) for both to come back down and for every child to be
// reaped.
func leakCheck(t testing.TB) {
	t.Helper()
	g0, fd0 := runtime.NumGoroutine(), countFDs()
	t.Cleanup(func() {
		eventually(t, 10*time.Second, func() bool {
			return runtime.NumGoroutine() <= g0 && countFDs() <= fd0 && Len() == 0
		}, "leak: goroutines %d (was %d), fds %d (was %d), children %d",
			runtime.NumGoroutine(), g0, countFDs(), fd0, Len())
	})
}

// lineLog collects lines concurrently.
type lineLog struct {
	mu    sync.Mutex
	lines []Line
}

func (l *lineLog) add(x Line) {
	l.mu.Lock()
	l.lines = append(l.lines, x)
	l.mu.Unlock()
}

func (l *lineLog) texts(s Stream) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if x.Stream == s {
			out = append(out, string(x.Text))
		}
	}
	return out
}

// fakeClock hands every requested delay to the test, which fires it.
type fakeClock struct {
	reqs chan fakeTimer
}

type fakeTimer struct {
	d time.Duration
	c chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{reqs: make(chan fakeTimer, 16)} }

func (f *fakeClock) Now() time.Time { return time.Unix(0, 0) }

func (f *fakeClock) After(d time.Duration) (<-chan time.Time, func()) {
	ft := fakeTimer{d: d, c: make(chan time.Time, 1)}
	f.reqs <- ft
	return ft.c, func() {}
}

// AfterFunc runs on the wall clock: the fake clock drives only the
// restart loop's waits.
func (f *fakeClock) AfterFunc(d time.Duration, fn func()) func() bool {
	return RealClock.AfterFunc(d, fn)
}

// next waits for the next requested delay.
func (f *fakeClock) next(t testing.TB) fakeTimer {
	t.Helper()
	select {
	case ft := <-f.reqs:
		return ft
	case <-time.After(10 * time.Second):
		t.Fatal("no timer requested")
	}
	return fakeTimer{}
}

// Len reports how many children started by this package are not yet reaped.
func Len() int {
	children.mu.Lock()
	defer children.mu.Unlock()
	return len(children.pids)
}
