package idleread

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// socketPair returns both ends of a loopback TCP connection.
func socketPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// parkedStream parks one end of a fresh socket pair, returning both ends,
// its Waiter, the resume function given to Park and the channel that
// function signals.
func parkedStream(t *testing.T) (a, b *net.TCPConn, w *Waiter, resume func(), ch chan struct{}) {
	t.Helper()
	a, b = socketPair(t)
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	w = NewWaiter(rc)
	resume, ch = resumed()
	if err := w.Park(resume); err != nil {
		t.Fatal(err)
	}
	return a, b, w, resume, ch
}

// idledStream registers an Idler for one end of a fresh socket pair,
// returning the other end, the first's RawConn, the Idler and a pool.
func idledStream(t *testing.T) (b *net.TCPConn, rc syscall.RawConn, i *Idler, pool *sync.Pool) {
	t.Helper()
	a, b := socketPair(t)
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	i = NewIdler(a)
	t.Cleanup(i.Close)
	return b, rc, i, newPool()
}

// resumed returns a resume function and the channel it signals.
func resumed() (func(), chan struct{}) {
	ch := make(chan struct{}, 4)
	return func() { ch <- struct{}{} }, ch
}

func waitResumed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("not resumed: %s", what)
	}
}

func notResumed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("resumed: %s", what)
	default:
	}
}

// A parked stream is resumed by input, by its peer's close, and (after a
// local close) by Unpark, once each park; while parked it is counted.
func TestParkResumesOnInputEndAndUnpark(t *testing.T) {
	a, b, w, resume, ch := parkedStream(t)
	if Parked() < 1 {
		t.Fatal("a parked stream is not counted")
	}
	notResumed(t, ch, "with no input")
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitResumed(t, ch, "by input")
	if w.Unpark() {
		t.Fatal("Unpark resumed a stream input had resumed already")
	}
	var buf [1]byte
	if _, err := a.Read(buf[:]); err != nil {
		t.Fatal(err)
	}

	// Parked again (the registration is re-armed), the peer's close
	// resumes it.
	if err := w.Park(resume); err != nil {
		t.Fatal(err)
	}
	b.Close()
	waitResumed(t, ch, "by the peer's close")

	// A local close removes the stream from the set silently: Unpark
	// resumes it, and a later Park fails.
	a2, _, w2, resume2, ch2 := parkedStream(t)
	a2.Close()
	if !w2.Unpark() {
		t.Fatal("Unpark of a parked stream reported nothing to do")
	}
	waitResumed(t, ch2, "by Unpark")
	if err := w2.Park(resume2); err == nil {
		t.Fatal("a closed stream parked")
	}
	notResumed(t, ch2, "after a failed Park")
}

// With nothing parked, the poller's goroutine ends.
func TestPollerGoroutineEndsWhenNothingIsParked(t *testing.T) {
	_, _, w, _, ch := parkedStream(t)
	w.Unpark()
	waitResumed(t, ch, "by Unpark")
	deadline := time.Now().Add(20 * time.Second)
	for {
		thePoller.mu.Lock()
		running := thePoller.running
		thePoller.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the poller's goroutine still runs with nothing parked")
		}
		time.Sleep(time.Millisecond)
	}
}

func newPool() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, 64); return &b }}
}

// A wait for input longer than two LingerTicks is interrupted, and Leave
// reports it; the deadline is cleared, so the next read waits again.
func TestIdlerInterruptsALongWait(t *testing.T) {
	b, rc, i, pool := idledStream(t)
	start := time.Now()
	i.Enter()
	_, _, err := Read(rc, pool)
	if !Lingered(i.Leave(), err) {
		t.Fatalf("read ended with %v and no interruption", err)
	}
	if d := time.Since(start); d < LingerTick {
		t.Fatalf("interrupted after %v, before one LingerTick", d)
	}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	i.Enter()
	bp, n, err := Read(rc, pool)
	if Lingered(i.Leave(), err) || err != nil || n != 1 {
		t.Fatalf("read after the interruption = %d, %v; want the input", n, err)
	}
	pool.Put(bp)
}

// Cut's deadline stays: a Leave after a wait the sweeper interrupted
// reports no linger and leaves the deadline, so every later read fails.
func TestIdlerCutIsNotClearedByLeave(t *testing.T) {
	_, rc, i, pool := idledStream(t)
	i.Enter()
	_, _, err := Read(rc, pool) // the sweeper interrupts it
	if err := i.Cut(); err != nil {
		t.Fatal(err)
	}
	if Lingered(i.Leave(), err) {
		t.Fatal("Leave after Cut reported a linger")
	}
	if !i.WasCut() {
		t.Fatal("WasCut after Cut is false")
	}
	for range 2 {
		i.Enter()
		_, _, err = Read(rc, pool)
		if Lingered(i.Leave(), err) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after Cut = %v, want the deadline's error", err)
		}
	}
}

// A parked pipe is resumed when its write end closes (EPOLLHUP, as when
// a daemon exits), and then reads the end of input.
func TestParkedPipeResumesOnWriterClose(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rc, _ := r.SyscallConn()
	wt := NewWaiter(rc)
	resume, ch := resumed()
	if err := wt.Park(resume); err != nil {
		t.Fatal(err)
	}
	notResumed(t, ch, "with the writer open")
	w.Close()
	waitResumed(t, ch, "by the writer's close")
	if _, _, err := Read(rc, newPool()); err != io.EOF {
		t.Fatalf("read after the writer's close = %v, want EOF", err)
	}
}
