package index

import (
	"flag"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/preserves"
)

var cpuTest = flag.Bool("index.cputime", false, "compare per-operation thread CPU time with and without unrelated load")

// threadCPU is the CPU time the calling OS thread has used. Wall-clock
// benchmarks are unreliable on a shared machine; thread CPU time is not
// inflated by other processes.
func threadCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoadedCPUTime measures Send and Insert+Remove of <item N> (one
// matching observer) on an empty index and on one holding 100,000 unrelated
// assertions and 10,000 unrelated observers, in thread CPU time. It checks
// that the loaded index costs at most a small constant factor more (hash
// tables that no longer fit in cache, nothing proportional to the load).
func TestLoadedCPUTime(t *testing.T) {
	if !*cpuTest {
		t.Skip("run with -index.cputime")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base, be := New(), &countEmitter{}
	base.AddObserver(itemCapture, -1, be)
	loadedIx, le := loaded(nil)
	v := item(preserves.Int(1000))
	vals := make([]preserves.Value, 4096)
	for i := range vals {
		vals[i] = item(preserves.Int(1_000_000+i), preserves.Int(0))
	}
	const sends, inserts = 2_000_000, 500_000
	best := map[string]time.Duration{}
	for round := 0; round < 3; round++ {
		for _, c := range []struct {
			name string
			ix   *Index
			e    *countEmitter
		}{{"empty", base, be}, {"loaded", loadedIx, le}} {
			t0 := threadCPU(t)
			for i := 0; i < sends; i++ {
				c.ix.Send(v, c.e)
			}
			t1 := threadCPU(t)
			for i := 0; i < inserts; i++ {
				w := vals[i%len(vals)]
				c.ix.Insert(w, c.e)
				c.ix.Remove(w, c.e)
			}
			t2 := threadCPU(t)
			for k, d := range map[string]time.Duration{c.name + " send": (t1 - t0) / sends, c.name + " insert+remove": (t2 - t1) / inserts} {
				if b, ok := best[k]; !ok || d < b {
					best[k] = d
				}
			}
		}
	}
	t.Logf("thread CPU per op (best of 3): send %v empty, %v loaded; insert+remove %v empty, %v loaded",
		best["empty send"], best["loaded send"], best["empty insert+remove"], best["loaded insert+remove"])
	for _, op := range []string{"send", "insert+remove"} {
		if best["loaded "+op] > 4*best["empty "+op]+200*time.Nanosecond {
			t.Errorf("%s costs %v loaded against %v empty", op, best["loaded "+op], best["empty "+op])
		}
	}
}
