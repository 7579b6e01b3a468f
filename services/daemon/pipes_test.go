package daemon

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace/idleread"
)

// These tests count parked streams and pipe reader goroutines of the
// whole process, so they do not run in parallel (parallel tests start
// only once every sequential one has ended).

// readersRunning counts the goroutines running a pipeReader.
func readersRunning() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "daemon.(*pipeReader).run(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// idleReaders reports whether n pipes are parked and no reader runs.
// waitIdleReaders waits until n pipes are parked and no reader
// goroutine runs.
func waitIdleReaders(t testing.TB, n int, what string) {
	t.Helper()
	eventually(t, func() bool { return idleread.Parked() == n && readersRunning() == 0 },
		"%s (%d parked, no reader running)", what, n)
}

type pipeRun struct {
	w    *os.File
	pr   *pipeReader
	log  lineLog
	done chan struct{}
}

// startPipeReader reads a new pipe with a pipeReader; the test holds the
// write end.
func startPipeReader(t *testing.T) *pipeRun {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	run := &pipeRun{w: w, done: make(chan struct{})}
	var once sync.Once
	emit := func(_ context.Context, batch []Line) {
		for _, l := range batch {
			l.Text = slices.Clone(l.Text)
			run.log.add(l)
		}
	}
	run.pr = newPipeReader(context.Background(), r, Stdout, 1, time.Now, emit, func() {
		once.Do(func() { close(run.done) })
	})
	run.pr.start()
	t.Cleanup(func() {
		w.Close()
		<-run.done
		r.Close()
	})
	return run
}

func (p *pipeRun) write(t *testing.T, s string) {
	t.Helper()
	if _, err := p.w.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func (p *pipeRun) waitLines(t *testing.T, want ...string) {
	t.Helper()
	eventually(t, func() bool { return slices.Equal(p.log.texts(Stdout), want) },
		"lines %q, want %q", p.log.texts(Stdout), want)
}

func (p *pipeRun) waitDone(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the reader did not end")
	}
}

// An idle pipe's reader parks and ends its goroutine; input resumes it,
// the lines arrive in order (an unfinished line assembled across the
// park), one read's lines as one batch, and the end of input ends it.
func TestPipeReaderParksWhenIdle(t *testing.T) {
	leakCheck(t)
	p := startPipeReader(t)
	p.write(t, "one\ntw")
	p.waitLines(t, "one\n")
	waitIdleReaders(t, 1, "the reader to park")

	p.write(t, "o\nthree\n")
	p.waitLines(t, "one\n", "two\n", "three\n")
	p.log.mu.Lock()
	same := p.log.lines[1].Time.Equal(p.log.lines[2].Time)
	p.log.mu.Unlock()
	if !same {
		t.Error("the lines of one read do not share a timestamp")
	}
	waitIdleReaders(t, 1, "the reader to park again")

	p.w.Close()
	p.waitDone(t)
	p.waitLines(t, "one\n", "two\n", "three\n")
	waitIdleReaders(t, 0, "no reader after the end")
}

// The writer's close (a daemon's exit) resumes a parked reader, which
// flushes its final partial line and ends.
func TestPipeReaderFlushesPartialLineAtEOFAfterParking(t *testing.T) {
	leakCheck(t)
	p := startPipeReader(t)
	p.write(t, "tail")
	waitIdleReaders(t, 1, "the reader to park")
	p.w.Close()
	p.waitDone(t)
	p.waitLines(t, "tail")
}

// The drain's cut reaches a parked reader whose pipe a straggler keeps
// open: it flushes its partial line and ends, and a later read does not
// park again.
func TestPipeReaderCutEndsAParkedReader(t *testing.T) {
	leakCheck(t)
	p := startPipeReader(t)
	p.write(t, "done\nheld")
	p.waitLines(t, "done\n")
	waitIdleReaders(t, 1, "the reader to park")
	p.pr.cut()
	p.waitDone(t)
	p.waitLines(t, "done\n", "held")
	if n := idleread.Parked(); n != 0 {
		t.Errorf("%d streams parked after the cut", n)
	}
}

// A quiet daemon's two readers park, holding no goroutine; output after
// the idle spell arrives in order on both streams, and the exit ends the
// parked readers with the final partial line.
func TestProcessIdleReadersParkAndResume(t *testing.T) {
	leakCheck(t)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var log lineLog
	exited := make(chan Exit, 1)
	var wg sync.WaitGroup
	go func() {
		exited <- runProcess(context.Background(),
			shSpec(`echo a; echo e >&2; read x < `+fifo+`; echo b; echo f >&2; printf tail`),
			procHooks{line: log.add}, RealClock, &wg)
	}()
	eventually(t, func() bool { return len(log.texts(Stdout)) == 1 && len(log.texts(Stderr)) == 1 },
		"first lines %q %q", log.texts(Stdout), log.texts(Stderr))
	waitIdleReaders(t, 2, "both readers to park")

	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
	var exit Exit
	select {
	case exit = <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit")
	}
	wg.Wait()
	if !exit.Success() {
		t.Fatal(exit)
	}
	if got, want := log.texts(Stdout), []string{"a\n", "b\n", "tail"}; !slices.Equal(got, want) {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := log.texts(Stderr), []string{"e\n", "f\n"}; !slices.Equal(got, want) {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if n := idleread.Parked(); n != 0 {
		t.Errorf("%d streams parked after the exit", n)
	}
}

// A cut at any moment after the reader took its input (while it waits in
// the poller, as it parks, while it is parked) ends it with its partial
// line flushed, whatever the sweeper was doing. (What is still in the
// pipe at the cut stays there, as it always did.)
func TestPipeReaderCutAtAnyMoment(t *testing.T) {
	leakCheck(t)
	const n = 40
	runs := make([]*pipeRun, n)
	for i := range runs {
		runs[i] = startPipeReader(t)
		runs[i].write(t, "part")
	}
	for _, p := range runs {
		eventually(t, func() bool { return unread(p.w) == 0 }, "%d bytes unread", unread(p.w))
	}
	start := time.Now()
	for i, p := range runs {
		// Spread the cuts over two LingerTicks, across the linger and
		// the park.
		at := start.Add(time.Duration(i) * 2 * idleread.LingerTick / n)
		time.Sleep(time.Until(at))
		p.pr.cut()
	}
	for _, p := range runs {
		p.waitDone(t)
		p.waitLines(t, "part")
	}
	waitIdleReaders(t, 0, "no reader after the cuts")
}

// unread returns how many bytes the pipe of w holds.
func unread(w *os.File) int {
	rc, err := w.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) // FIONREAD
	return n
}
