package relay

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// overflow runs a relay whose peer reads nothing, floods it with
// ActivateNow (outside flow control) until it stops with ErrOutboundFull,
// and returns the relay and the peer's end, not yet read from.
func overflow(t *testing.T, smallBuffers bool) (*Conn, net.Conn) {
	sys := newSys(t)
	a, b := tcpPair(t)
	t.Cleanup(func() { b.Close() })
	if smallBuffers {
		// The queue, not the kernel, then holds what the peer has not
		// read.
		_ = a.(*net.TCPConn).SetWriteBuffer(64 << 10)
		_ = b.(*net.TCPConn).SetReadBuffer(64 << 10)
	}
	opts := Options{ImportInitial: true, MaxOutbound: 4 << 20}
	if smallBuffers {
		opts.CloseTimeout = 200 * time.Millisecond
	}
	c, peer, err := Spawn(sys, "conn", a, opts)
	if err != nil {
		t.Fatal(err)
	}
	drv := newDriver(t, sys, "producer")
	body := preserves.String(strings.Repeat("x", 4<<10)) // 50 per turn fit one packet
	for turn := 0; c.Err() == nil; turn++ {
		if turn > 10_000 {
			t.Fatal("the relay never overflowed")
		}
		drv.fr.ActivateNow(func(t *dataspace.Turn) error {
			for i := range 50 {
				t.Message(peer, preserves.Rec("m", preserves.Int(turn), preserves.Int(i), body))
			}
			return nil
		})
	}
	if !errors.Is(c.Err(), ErrOutboundFull) {
		t.Fatalf("error %v, want ErrOutboundFull", c.Err())
	}
	return c, b
}

// readPackets reads nc to its end, pausing pause after every 4 KiB, and
// checks that it holds whole packets only: consecutive turns of 50
// messages from turn 0. It returns the number of packets.
func readPackets(t *testing.T, nc net.Conn, pause time.Duration) int {
	f := newFramer(0, 0, 0)
	buf := make([]byte, 4<<10)
	packets := 0
	_ = nc.SetReadDeadline(time.Now().Add(patience))
	for {
		n, err := nc.Read(buf)
		f.buf = append(f.buf, buf[:n]...)
		for {
			raw, syn, off, ferr := f.next()
			if ferr != nil {
				t.Fatal(ferr)
			}
			if raw == nil {
				break
			}
			v, derr := decodePacket(raw, syn, off, DefaultMaxDepth, DefaultMaxPacketSize)
			pkt, perr := ParsePacket(v)
			if derr != nil || perr != nil || len(pkt.Events) != 50 {
				t.Fatalf("packet %d: %v %v, %d events", packets, derr, perr, len(pkt.Events))
			}
			turn := pkt.Events[0].Value.(*preserves.Record).Fields[0]
			if !preserves.Equal(turn, preserves.Int(packets)) {
				t.Fatalf("packet %d holds turn %s", packets, preserves.Show(turn))
			}
			packets++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause) // a slow peer; synchronises nothing
	}
	if f.pending() {
		t.Fatal("the stream ends inside a packet")
	}
	return packets
}

// A relay that must stop with output queued (here: overflowed by a
// producer outside flow control) sends its queue to a reading peer whole.
func TestOverflowFlushesWholePackets(t *testing.T) {
	c, nc := overflow(t, false)
	if n := readPackets(t, nc, 0); n == 0 {
		t.Fatal("nothing arrived")
	}
	<-c.Done()
	if p, b := c.Unsent(); p != 0 || b != 0 {
		t.Fatalf("unsent %d packets, %d bytes to a reading peer", p, b)
	}
}

// A peer too slow for the final flush gets whole packets up to where the
// relay stopped, and the rest is counted as unsent.
func TestOverflowToSlowPeerStopsBetweenPackets(t *testing.T) {
	c, nc := overflow(t, true)
	readPackets(t, nc, 2*time.Millisecond)
	<-c.Done()
	if p, b := c.Unsent(); p == 0 || b == 0 {
		t.Fatalf("unsent %d packets, %d bytes: the slow peer got everything", p, b)
	}
}

// A peer that stops reading is the one cut off: plain Activate waits for
// it only until its WriteTimeout, then its debt is forgiven and the
// producer goes on.
func TestStuckPeerCutOffAndForgiven(t *testing.T) {
	sys := newSys(t)
	a, b := tcpPair(t)
	t.Cleanup(func() { b.Close() })
	_ = a.(*net.TCPConn).SetWriteBuffer(64 << 10)
	_ = b.(*net.TCPConn).SetReadBuffer(64 << 10)
	c, peer, err := Spawn(sys, "conn", a, Options{ImportInitial: true, WriteTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	drv := newDriver(t, sys, "producer")
	body := preserves.String(strings.Repeat("x", 10<<10))
	// 40 MiB: far past the high-water mark and the kernel buffers.
	for turn := range 80 {
		if !drv.fr.Activate(func(t *dataspace.Turn) error {
			for i := range 50 {
				t.Message(peer, preserves.Rec("m", preserves.Int(turn), preserves.Int(i), body))
			}
			return nil
		}) {
			t.Fatal("the producer died")
		}
	}
	<-c.Done()
	if !errors.Is(c.Err(), ErrSlowPeer) {
		t.Fatalf("error %v, want ErrSlowPeer", c.Err())
	}
	waitFor(t, "the debt to be forgiven", func() bool { return drv.fr.Actor().OutsideAccount().Debt() == 0 })
}
