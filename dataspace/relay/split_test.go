package relay

import (
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// A turn too large for one packet of the peer's is sent as several, each
// within the peer's limits, its events in order.
func TestLargeTurnSplitWithinPeerLimits(t *testing.T) {
	for _, syn := range []Syntax{Binary, Text} {
		t.Run(syn.String(), func(t *testing.T) {
			const maxSize, maxValues = 8 << 10, 300
			h := newWire(t, Options{TextOutput: syn == Text, PeerMaxPacketSize: maxSize, PeerMaxPacketValues: maxValues})
			const n = 400
			body := preserves.String(strings.Repeat("y", 100))
			h.drv.do(func(t *dataspace.Turn) {
				for i := range n {
					t.Message(h.peer, preserves.Rec("m", preserves.Int(i), body))
				}
				for i := range n { // many small values: the value limit bites first
					t.Message(h.peer, preserves.Rec("s", preserves.Int(i)))
				}
			})
			next, packets := 0, 0
			for next < 2*n {
				v, gotSyn, raw := h.recv()
				if gotSyn != syn || len(raw) > maxSize {
					t.Fatalf("packet of %d bytes in %v", len(raw), gotSyn)
				}
				if count := countValues(t, raw); count > maxValues {
					t.Fatalf("packet of %d values", count)
				}
				pkt, err := ParsePacket(v)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range pkt.Events {
					want := next % n
					if got := ev.Value.(*preserves.Record).Fields[0]; !preserves.Equal(got, preserves.Int(want)) {
						t.Fatalf("event %d carries %s", next, preserves.Show(got))
					}
					next++
				}
				packets++
			}
			if packets < 3 {
				t.Fatalf("%d packets: the turn was not split", packets)
			}
		})
	}
}

// countValues counts the values in one packet's bytes.
func countValues(t *testing.T, raw []byte) int {
	t.Helper()
	s := preserves.Scanner{}
	s.Begin(raw[0])
	if _, done, err := s.Scan(raw, 0); err != nil || !done {
		t.Fatalf("unscannable packet: %v", err)
	}
	return s.Values()
}

// An event no packet of the peer's can hold is refused, never sent; the
// connection and the events around it go on.
func TestOversizeEventRefused(t *testing.T) {
	h := newWire(t, Options{PeerMaxPacketSize: 4 << 10})
	h.drv.do(func(t *dataspace.Turn) {
		t.Message(h.peer, preserves.Rec("before"))
		t.Message(h.peer, preserves.Rec("huge", preserves.String(strings.Repeat("z", 8<<10))))
		t.Assert(h.peer, preserves.Rec("huge", preserves.String(strings.Repeat("z", 8<<10))))
		t.Message(h.peer, preserves.Rec("after"))
	})
	if got := h.recvText(); got != "[[0 <M <before>>] [0 <M <after>>]]" {
		t.Fatalf("got %s", got)
	}
	if h.conn.Refused() != 2 || h.conn.Err() != nil {
		t.Fatalf("refused %d, error %v", h.conn.Refused(), h.conn.Err())
	}
}
