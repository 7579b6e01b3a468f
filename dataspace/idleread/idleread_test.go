package idleread

import (
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

func TestReadTakesABufferOnlyForInput(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	pool := &sync.Pool{New: func() any { taken++; b := make([]byte, 8); return &b }}

	// Nothing pending: a deadline ends the wait, no buffer comes back.
	if err := r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if bp, n, err := Read(rc, pool); bp != nil || n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle read = %v, %d, %v; want nil, 0, a deadline error", bp, n, err)
	}
	if err := r.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	bp, n, err := Read(rc, pool)
	if err != nil || string((*bp)[:n]) != "hello" {
		t.Fatalf("read = %q, %v; want hello", (*bp)[:n], err)
	}
	pool.Put(bp)

	w.Close()
	if _, n, err := Read(rc, pool); n != 0 || err != io.EOF {
		t.Fatalf("read at the end = %d, %v; want 0, EOF", n, err)
	}
	if taken == 0 {
		t.Fatal("no buffer taken from the pool")
	}
}
