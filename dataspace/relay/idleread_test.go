package relay

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// TestIdleConnectionBorrowsItsReadBuffer: a framer reading from a pollable
// stream with nothing pending gives its buffer back before it waits, and
// a packet split across reads still arrives whole (the second read
// appends to the borrowed buffer rather than replacing it).
func TestIdleConnectionBorrowsItsReadBuffer(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	f := newFramer(0, 0, 0)
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
		if cap(f.buf) != idleRead {
			t.Fatalf("round %d: an idle framer read into a buffer of %d bytes, want a borrowed one of %d", round, cap(f.buf), idleRead)
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
