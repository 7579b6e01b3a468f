package daemon

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/idleread"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services/daemon/exechelper"
)

// The test binary doubles as the supervised child: when
// GO_WANT_HELPER_PROCESS is set, TestMain runs helperMain instead of the
// tests (the immortal/os/exec pattern).
func TestMain(m *testing.M) {
	// Daemons with exec controls start this binary as their helper.
	exechelper.MaybeRun()
	if mode := os.Getenv("GO_WANT_HELPER_PROCESS"); mode != "" {
		os.Exit(helperMain(mode))
	}
	flag.Parse()
	// The parallel tests mostly wait for children, sockets and timers.
	testutil.WaitingParallelism(8)
	g0, fd0 := ownGoroutines(), countFDs()
	code := m.Run()
	if code == 0 {
		code = checkNoLeaks(g0, fd0)
	}
	os.Exit(code)
}

// ownGoroutines counts the goroutines but the signal loop, which the
// testing package starts for itself (fuzzing) and never ends.
func ownGoroutines() int {
	buf := make([]byte, 1<<20)
	return runtime.NumGoroutine() - strings.Count(string(buf[:runtime.Stack(buf, true)]), "os/signal.loop()")
}

// checkNoLeaks is the leak check of the parallel tests, which cannot
// count for themselves (see parallel): once every test has ended, the
// goroutines and descriptors must come back to what they were before the
// first, and every child must have been reaped.
func checkNoLeaks(g0, fd0 int) int {
	deadline := time.Now().Add(testutil.WaitPatience)
	for ownGoroutines() > g0 || countFDs() > fd0 || Len() != 0 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "leak after all tests: goroutines %d (was %d), fds %d (was %d), children %d\n%s",
				ownGoroutines(), g0, countFDs(), fd0, Len(), buf[:runtime.Stack(buf, true)])
			return 1
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline: no tb here
	}
	return 0
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
	case "greet":
		return greetChild()
	}
	return 2
}

// greetChild is a socket-activated daemon: it answers every connection on
// its listener (fd 3) with "hello PID\n".
func greetChild() int {
	ln, err := net.FileListener(os.NewFile(3, "listen"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 2
		}
		fmt.Fprintf(c, "hello %d\n", os.Getpid())
		c.Close()
	}
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

// eventually is testutil.WaitFor with a formatted description.
func eventually(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf(format, args...), cond)
}

// parallelNames are the tests marked by parallel.
var parallelNames sync.Map

// parallel runs t beside the package's other parallel tests. The testing
// package runs them after every sequential test, so the checks that count
// the whole process's goroutines, descriptors and children (leakCheck,
// the harness's cleanup, TestSoak) hold only in sequential tests;
// isParallel tells them to skip, and TestMain checks the parallel tests
// together once all have ended (checkNoLeaks).
func parallel(t *testing.T) {
	t.Parallel()
	parallelNames.Store(t.Name(), true)
}

// isParallel reports whether tb is, or is a subtest of, a parallel test.
func isParallel(tb testing.TB) bool {
	for name := tb.Name(); ; {
		if _, ok := parallelNames.Load(name); ok {
			return true
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return false
		}
		name = name[:i]
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
		_ = idleread.OpenPoller() // the relays' poller: its descriptors stay open too
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
	if isParallel(t) {
		return // TestMain checks once all tests have ended (checkNoLeaks)
	}
	g0, fd0 := runtime.NumGoroutine(), countFDs()
	t.Cleanup(func() {
		eventually(t, func() bool {
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

// fastClock is the wall clock running k times faster: its timers fire
// and its time passes k times sooner, so a test of a bound made of
// timeouts checks it, on the clock, without waiting it out.
type fastClock struct {
	start time.Time
	k     time.Duration
}

func newFastClock(k int) fastClock { return fastClock{start: time.Now(), k: time.Duration(k)} }

func (c fastClock) Now() time.Time { return c.start.Add(time.Since(c.start) * c.k) }
func (c fastClock) After(d time.Duration) (<-chan time.Time, func()) {
	return RealClock.After(d / c.k)
}
func (c fastClock) AfterFunc(d time.Duration, f func()) func() bool {
	return RealClock.AfterFunc(d/c.k, f)
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
