package relay

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// framerOverPipe returns a fresh framer and the two ends of a pipe, a
// pollable stream like a socket; the pipe is closed when the test ends.
func framerOverPipe(t *testing.T) (*framer, *os.File, *os.File) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	return newFramer(0, 0, 0), pr, pw
}

// TestIdleConnectionBorrowsItsReadBuffer: a framer reading from a pollable
// stream with nothing pending gives its buffer back before it waits, and
// a packet split across reads still arrives whole (the second read
// appends to the borrowed buffer rather than replacing it).
func TestIdleConnectionBorrowsItsReadBuffer(t *testing.T) {
	f, pr, pw := framerOverPipe(t)
	ctx := context.Background()
	whole, err := preserves.EncodeBinary(preserves.NewRecord(preserves.Symbol("x"), preserves.String("hello")), preserves.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for round := range 3 {
		if _, err := pw.Write(whole[:3]); err != nil {
			t.Fatal(err)
		}
		n, err := f.readFrom(ctx, pr)
		if err != nil || n != 3 {
			t.Fatalf("round %d: first read: %d, %v", round, n, err)
		}
		if cap(f.buf) != minRead {
			t.Fatalf("round %d: an idle framer read into a buffer of %d bytes, want one of %d", round, cap(f.buf), minRead)
		}
		if raw, _, _, err := f.next(); raw != nil || err != nil {
			t.Fatalf("round %d: half a packet framed: %q, %v", round, raw, err)
		}
		if _, err := pw.Write(whole[3:]); err != nil {
			t.Fatal(err)
		}
		if _, err := f.readFrom(ctx, pr); err != nil {
			t.Fatal(err)
		}
		raw, syn, _, err := f.next()
		if err != nil || syn != Binary || !bytes.Equal(raw, whole) {
			t.Fatalf("round %d: framed %q (%v, %v), want %q", round, raw, syn, err, whole)
		}
		if raw, _, _, _ := f.next(); raw != nil {
			t.Fatalf("round %d: a second packet framed: %q", round, raw)
		}
	}
	pw.Close()
	if _, err := f.readFrom(ctx, pr); err == nil {
		t.Fatal("no error at the end of the stream")
	}
	if f.buf != nil {
		t.Fatalf("the framer holds %d bytes after the stream ended with nothing pending", cap(f.buf))
	}
}

// TestBusyConnectionKeepsItsReadSize: borrowing buffers does not cap how
// much a busy connection reads per call; the read size still doubles
// while reads fill the buffer, up to maxRead.
func TestBusyConnectionKeepsItsReadSize(t *testing.T) {
	f, pr, pw := framerOverPipe(t)
	// Whitespace between packets: every read is handled whole.
	chunk := bytes.Repeat([]byte{' '}, maxRead)
	for size := minRead; ; size *= 2 {
		// Written whole before the read: a pipe holds 64 KiB.
		if _, err := pw.Write(chunk[:size]); err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < size {
			n, err := f.readFrom(context.Background(), pr)
			if err != nil {
				t.Fatal(err)
			}
			got += n
			if raw, _, _, err := f.next(); raw != nil || err != nil {
				t.Fatalf("whitespace framed as %q, %v", raw, err)
			}
		}
		if cap(f.buf) != size {
			t.Fatalf("read %d bytes with a buffer of %d, want %d", size, cap(f.buf), size)
		}
		if size == maxRead {
			break
		}
	}
}

// TestPacketTimeoutCountsOnlyWaitsForInput: the packet timeout counts the
// time the reader waits for a partial packet's bytes and nothing else.
// Time spent handling earlier packets or held back by flow control (far
// longer than the timeout here) does not cut the peer off; the waits of a
// peer trickling its packet add up until it is.
func TestPacketTimeoutCountsOnlyWaitsForInput(t *testing.T) {
	s := newFlowServer(t)
	c, _ := s.connect(t, Options{})
	const d = 200 * time.Millisecond
	p := &packetTimer{c: c, d: d}
	f := newFramer(0, 0, 0)
	whole := binPacket(t, `[[0 <M <m "hello">>]]`)
	f.feed(whole[:len(whole)/2])
	if raw, _, _, err := f.next(); raw != nil || err != nil || !f.pending() {
		t.Fatalf("half a packet framed: %q, %v", raw, err)
	}
	p.track(f)
	p.arm()           // waiting for input...
	p.hold()          // ...which arrived; handling it and earlier packets:
	time.Sleep(3 * d) // time passing outside any wait for input, not synchronisation
	select {
	case <-c.Done():
		t.Fatalf("cut off for time the relay spent on its own: %v", c.Err())
	default:
	}
	p.track(f) // the same packet: its time goes on
	p.arm()
	testutil.WaitFor(t, "the timeout to end the connection", func() bool {
		select {
		case <-c.Done():
			return true
		default:
			return false
		}
	})
	if !errors.Is(c.Err(), ErrLimit) {
		t.Fatalf("ended with %v, want ErrLimit", c.Err())
	}
	p.stop()
}
