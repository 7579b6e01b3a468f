package relay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// chunks splits data into pieces whose sizes cycle through a pattern
// derived from seed (sizes 1..16 and a large one).
func chunks(data []byte, seed uint8) [][]byte {
	var out [][]byte
	s := int(seed)
	for len(data) > 0 {
		n := 1 + (s % 17)
		if n == 17 {
			n = 4096
		}
		s = (s*31 + 7) % 1009
		n = min(n, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

type framed struct {
	raw []byte
	syn Syntax
}

func frameAll(pieces [][]byte) ([]framed, bool) {
	f := newFramer(1<<16, 64, 0)
	var out []framed
	for _, p := range pieces {
		f.feed(p)
		for {
			raw, syn, off, err := f.next()
			if err != nil {
				return out, false
			}
			if raw == nil {
				break
			}
			// Decoding must never panic, whatever the scanner let through,
			// and the fast Turn parser must agree with the general one.
			v, derr := decodePacket(raw, syn, off, 64, 1<<16)
			if evs, ok := fastTurn(nil, raw, 64, 1<<16); ok && syn == Binary {
				if derr != nil {
					panic(fmt.Sprintf("fast path accepted undecodable %q: %v", raw, derr))
				}
				p, perr := ParsePacket(v)
				if perr != nil || p.Kind != TurnPacket || len(p.Events) != len(evs) {
					panic(fmt.Sprintf("fast path disagrees on %q: %v %v", raw, p, perr))
				}
				for i, ev := range evs {
					g := p.Events[i]
					if g.Oid != ev.Oid || g.Kind != ev.Kind || g.Handle != ev.Handle || (g.Value == nil) != (ev.Value == nil) || (g.Value != nil && !preserves.Equal(g.Value, ev.Value)) {
						panic(fmt.Sprintf("fast path event %d differs on %q: %+v vs %+v", i, raw, ev, g))
					}
				}
			}
			out = append(out, framed{append([]byte(nil), raw...), syn})
		}
	}
	return out, true
}

// FuzzRelayReader feeds arbitrary bytes, in arbitrary chunkings, to the
// relay's reader: framing must not depend on the chunking, nothing may
// panic, and a relay reading the bytes must end cleanly with all its
// goroutines gone.
func FuzzRelayReader(f *testing.F) {
	seeds := []string{
		"[[0 <A <hello> 1>]]\n",
		"[[0 <A <x #:[0 3]> 1>] [0 <S #:[0 4]>]]\n[[0 <R 1>]]\n",
		"<error \"boom\" 1>\n#f\n<do <credit-flow-control 202506>>\n",
		"[[0 <M \"str\\\"ing\" |sym bol| #\"bytes\" #x\"0102\" #[AQI=] 1.5 @ann x ; comment\n>]]\n",
		"\xb5\xb5\xb0\x00\xb4\xb3\x01A\xb4\xb3\x05hello\x84\xb0\x01\x03\x84\x84\x84",
		"\x85\xb1\x01a\x80",
		"[[0 <M #:[1 0 <reject <_>>]>]]",
		"\xb5\xb5\xb0\x01\x07\xb4\xb3\x01M\xb4\xb3\x01x\x84\x84\x84\xb5\xb0\x00\xb4\xb3\x01R\xb0\x02\x01\x00\x84\x84\x84",
		"\xb5\xb5\xb0\x00\xb4\xb3\x01S\x86\xb5\xb0\x00\xb0\x01\x04\x84\x84\x84\x84",
	}
	for _, name := range []string{"testdata/session.bin", "testdata/session.txt"} {
		if b, err := os.ReadFile(name); err == nil {
			seeds = append(seeds, string(b))
		}
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i*37))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint8) {
		whole, okWhole := frameAll([][]byte{data})
		pieces, okPieces := frameAll(chunks(data, seed))
		if okWhole != okPieces || len(whole) != len(pieces) {
			t.Fatalf("chunking changed framing: %d/%v vs %d/%v", len(whole), okWhole, len(pieces), okPieces)
		}
		for i := range whole {
			if whole[i].syn != pieces[i].syn || !bytes.Equal(whole[i].raw, pieces[i].raw) {
				t.Fatalf("packet %d differs: %q vs %q", i, whole[i].raw, pieces[i].raw)
			}
		}
		runRelayOn(t, chunks(data, seed))
	})
}

// runRelayOn runs a relay exporting a dataspace over one end of a pipe,
// writes pieces to the other end, closes it and checks that the relay and
// its system wind down completely.
func runRelayOn(t *testing.T, pieces [][]byte) {
	sys := dataspace.NewSystem(dataspace.Options{})
	a, b := net.Pipe()
	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, b); close(drained) }()
	ch := make(chan *Conn, 1)
	sys.Spawn("fuzz", func(t *dataspace.Turn) error {
		ds := t.Create(dataspace.NewDataspace())
		c, _ := Run(t, a, Options{InitialRef: ds, MaxPacketSize: 1 << 16, MaxDepth: 64})
		ch <- c
		return nil
	})
	c := <-ch
	for _, p := range pieces {
		if _, err := b.Write(p); err != nil {
			break // the relay closed its end after an error
		}
	}
	b.Close()
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("relay did not end")
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	<-drained
}

// The fuzz seeds and corpus also run as an ordinary test, with a goroutine
// leak check over all of them.
func TestRelayReaderNoLeaks(t *testing.T) {
	checkGoroutines(t)
	for i, s := range []string{"[[0 <A <x> 1>]]\n", "\xb5\xb5", "[[0 <M <m #:[0 5]>>]]\n", "]]]", "[[5 <M 1>]]"} {
		runRelayOn(t, chunks([]byte(s), uint8(i)))
	}
}
