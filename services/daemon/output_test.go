package daemon

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// slowLog is a `<log …>` observer in an actor that a turn holds up until
// released (stall): a log that has fallen behind. The stalled turn has a
// goroutine of its own, so the daemon's pipe reader, which runs the turns
// its output causes where it can (hand-off), hands the log's on instead.
type slowLog struct {
	dataspace.BaseEntity
	gate chan struct{}
}

// stall holds fr's actor in a turn until s.gate is closed.
func (s *slowLog) stall(fr dataspace.FacetRef) {
	entered := make(chan struct{})
	go fr.ActivateNow(func(*dataspace.Turn) error { close(entered); <-s.gate; return nil })
	<-entered
}

// blockedOnPipe reports whether pid sleeps writing to a pipe.
func blockedOnPipe(pid int) bool {
	w, err := os.ReadFile("/proc/" + itoa(pid) + "/wchan")
	if err != nil {
		return false
	}
	_, st, _, ok := readStat("/proc/" + itoa(pid) + "/stat")
	return ok && st == 'S' && strings.Contains(string(w), "pipe_write")
}

// Issue 12 §6: daemon output is read no faster than the log takes it. With
// a log observer stalled, `yes` ends up blocked on its pipe and the server
// holds at most a few reads of its output; released, it runs on.
func TestOutputBackPressure(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	slow := &slowLog{gate: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(slow.gate)
		}
	}
	defer release()
	// The observer is in place once the dataspace has answered its sync.
	subscribed := make(chan dataspace.FacetRef)
	h.sys.Spawn("slow log", func(t *dataspace.Turn) error {
		t.Assert(h.env.Log, dataspace.Observe(pattern.Rec(preserves.Symbol("log"), pattern.Discard{}, pattern.Discard{}), t.Create(slow)))
		fr := t.FacetRef()
		t.Sync(h.env.Log, func(*dataspace.Turn) error { subscribed <- fr; return nil })
		t.PreventInertCheck()
		return nil
	})
	slow.stall(<-subscribed)
	require(h, "chatty", pv(t, `["yes" "x"]`))
	pid := pidOf(t, h.waitOutput("chatty", 1)[0])
	// The reader waits for the log instead of reading on, and yes ends
	// up blocked on its pipe.
	testutil.WaitFor(t, "the reader to wait for the log, and yes to block on its pipe", func() bool {
		return outputWaiting.Load() > 0 && blockedOnPipe(pid)
	})
	// What the server read meanwhile: the stalled batch and the one read
	// ahead (lines are 2 bytes, so a read holds at most readBuf/2).
	n := len(h.output("chatty"))
	if limit := 2 * readBuf / 2; n > limit {
		t.Fatalf("%d lines delivered while the log was stalled, want at most %d", n, limit)
	}
	// What yes wrote: those, and what fits in the kernel's pipe.
	if written, limit := wchar(t, pid), int64(2*readBuf+1<<20); written > limit {
		t.Fatalf("yes wrote %d bytes while the log was stalled, want at most %d", written, limit)
	}
	release()
	testutil.WaitFor(t, "output to flow again", func() bool { return len(h.output("chatty")) > n+readBuf })
}

// wchar is the number of bytes pid has written (/proc/PID/io).
func wchar(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/io")
	if err != nil {
		t.Skipf("no /proc/PID/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no wchar in /proc/%d/io", pid)
	return 0
}
