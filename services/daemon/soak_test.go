package daemon

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var soak = flag.Duration("soak", 0, "run TestSoak with 200 daemons for this long (default: 100 daemons for 2 s)")

// TestSoak runs 100 daemons (200 with -soak) with mixed restart policies that keep crashing
// and restarting, while some are un-required, re-required and restarted.
// Afterwards no process of any daemon's group may remain, and no goroutine
// or file descriptor may leak (checked by the harness cleanup). Every
// restart delay must be one of the spec's: a crash loop never spins.
func TestSoak(t *testing.T) {
	// Beside the other tests, whose children Len counts too: TestMain
	// checks that none is left once all have ended (checkNoLeaks).
	parallel(t)
	// Every test run soaks briefly: the whole suite has to stay fast on
	// CI's two cores, where starting and stopping 200 shells costs the
	// most. -soak runs the full size for as long as asked.
	d, n := *soak, 200
	if d == 0 {
		d, n = 2*time.Second, 100
	}
	if testing.Short() {
		d = time.Second
	}
	fd0, g0 := countFDs(), runtime.NumGoroutine()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	h, clock := bootDaemons(t, Options{})
	specs := []string{
		`"echo $$; sleep 0.05; exit 0"`, // always: 200 ms
		`"echo $$; sleep 0.05; exit 3"`, // always: 1 s
		`{argv: "echo $$; sleep 0.1; exit 1", restart: on-error}`,
		`{argv: "echo $$; sleep 0.1; echo bye; exit 1", restart: all}`,
		`{argv: "echo $$; exit 1", restart: never}`,
		`<one-shot "echo $$; exit 1">`,
		`["/nonexistent/binary"]`,
		`"echo $$; sleep 0.2 & exec sleep 100"`,
		`{argv: "echo $$; trap '' TERM; sleep 0.3; exit 1", stopTimeout: 0.2}`,
	}
	unrequire := make([]func(), n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%d", i)
		unrequire[i], _ = require(h, id, pv(t, specs[i%len(specs)]))
	}
	deadline := time.Now().Add(d)
	// Churn at a fixed pace (a load generator, not synchronisation):
	// re-require one daemon, or restart one, every 50 ms.
	pace := time.NewTicker(50 * time.Millisecond)
	defer pace.Stop()
	for round := 0; time.Now().Before(deadline); round++ {
		<-pace.C
		i := round % n
		switch round % 3 {
		case 0:
			unrequire[i]()
			unrequire[i] = h.assert(services.RequireService(dname(fmt.Sprintf("s%d", i))))
		case 1:
			h.send(h.env.Config, services.RestartService(dname(fmt.Sprintf("s%d", (i*7)%n))))
		}
	}
	h.settle()
	for _, d := range clock.got() {
		if d != DelayAfterSuccess && d != DelayAfterError && !isSpawnDelay(d) {
			t.Fatalf("restart delay %v is not one of the spec's", d)
		}
	}
	// Bound on restarts: no spec restarts sooner than 200 ms after an exit.
	perDaemon := int(d/DelayAfterSuccess) + 2
	if got := len(clock.got()); got > n*perDaemon {
		t.Errorf("%d restarts in %v for %d daemons: crash loop spinning", got, d, n)
	}
	// Collect every pid (= process group) the daemons ever reported.
	pgids := map[int]bool{}
	for _, m := range h.rec.Messages() {
		if r, ok := m.(*preserves.Record); ok && len(r.Fields) == 2 {
			if dd, ok := r.Fields[1].(*preserves.Dictionary); ok {
				if p, ok := dd.Get(preserves.Symbol("pid")); ok {
					if pi, ok := p.(preserves.Int); ok {
						pgids[int(pi)] = true
					}
				}
			}
		}
	}
	for i := 0; i < n; i++ {
		unrequire[i]()
	}
	for i := 0; i < n; i++ {
		h.waitHas(state(fmt.Sprintf("s%d", i), services.StateStarted), false)
	}
	eventually(t, func() bool {
		live := liveGroups()
		for g := range pgids {
			if live[g] {
				return false
			}
		}
		return isParallel(t) || Len() == 0
	}, "process groups or children left")
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	t.Logf("soak %v: %d daemons, %d restarts, %d process groups seen, supervisor CPU %v, fds %d→%d, goroutines %d→%d",
		d, n, len(clock.got()), len(pgids), cpu, fd0, countFDs(), g0, runtime.NumGoroutine())
}

// BenchmarkRequireToStarted measures the time from asserting
// `<require-service <daemon x>>` to seeing `<service-state <daemon x>
// started>` (dependency tracker round trip, run-service, supervisor).
func BenchmarkRequireToStarted(b *testing.B) {
	benchRequire(b, services.StateStarted, false)
}

// BenchmarkRequireToReady is the same up to `ready` with one process spec
// (`exec sleep 100`): it includes fork/exec of the child.
func BenchmarkRequireToReady(b *testing.B) {
	benchRequire(b, services.StateReady, true)
}

func benchRequire(b *testing.B, want preserves.Symbol, withSpec bool) {
	seen := make(chan preserves.Value, 1)
	h := newHarness(b, services.Boot, Boot, func(t *dataspace.Turn, env services.Env) error {
		p := pattern.Rec(service.LabelServiceState, pattern.Rec(externalservices.LabelDaemon, pattern.Capture()), pattern.Lit{Value: want})
		t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			seen <- caps[0]
			return nil
		})
		return nil
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := preserves.Int(i)
		name := preserves.Rec("daemon", id)
		var unspec func()
		if withSpec {
			b.StopTimer()
			unspec = h.assert(preserves.Rec("daemon", id, preserves.String("exec sleep 100")))
			h.settle()
			b.StartTimer()
		}
		un := h.assert(services.RequireService(name))
		if got := <-seen; !preserves.Equal(got, id) {
			b.Fatalf("saw %v, want %v", got, id)
		}
		b.StopTimer()
		un()
		if unspec != nil {
			unspec()
		}
		b.StartTimer()
	}
	b.StopTimer()
	eventually(b, func() bool { return Len() == 0 }, "children left")
}

// BenchmarkMemoryPerDaemon supervises 1,000 daemons each running a
// sleeping child and reports the Go heap and goroutines per daemon once all
// are ready.
func BenchmarkMemoryPerDaemon(b *testing.B) {
	const n = 1000
	for i := 0; i < b.N; i++ {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()
		h := newQuietHarness(b, services.Boot, Boot)
		for j := 0; j < n; j++ {
			id := fmt.Sprintf("m%d", j)
			require(h, id, preserves.String("exec sleep 1000"))
		}
		eventually(b, func() bool { return h.readyCount.Load() == n }, "all ready (%d)", h.readyCount.Load())
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapInuse-m0.HeapInuse)/n, "heap-B/daemon")
		b.ReportMetric(float64(m1.StackInuse-m0.StackInuse)/n, "stack-B/daemon")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/daemon")
		b.ReportMetric(float64(Len()), "children")
		// The harness cleanup (end of benchmark) stops them all; do it
		// now so each iteration starts clean.
		ctxShutdown(b, h)
	}
}

// liveGroups returns the process groups having a live (non-zombie) member.
func liveGroups() map[int]bool {
	out := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		_, st, _, ok := readStat("/proc/" + e.Name() + "/stat")
		if !ok || st == 'Z' {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil {
			out[g] = true
		}
	}
	return out
}

// isSpawnDelay reports whether d is one of the growing spawn retry delays.
func isSpawnDelay(d time.Duration) bool {
	for n := 1; n < 10; n++ {
		if spawnDelay(n, 0) == d {
			return true
		}
	}
	return false
}
