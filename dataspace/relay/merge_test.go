package relay

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// oneWrite writes packets (text in text syntax, each on its line; a
// leading '#' marks one to send in binary) in one system call, so that
// the relay reads them together.
func (h *wireHarness) oneWrite(packets ...string) {
	h.tb.Helper()
	var buf []byte
	for _, p := range packets {
		syn := Text
		if rest, ok := strings.CutPrefix(p, "#bin "); ok {
			p, syn = rest, Binary
		}
		v, err := preserves.ParseText(p)
		if err != nil {
			buf = append(buf, p...) // deliberately undecodable
			continue
		}
		if buf, err = AppendPacket(buf, v, syn); err != nil {
			h.tb.Fatal(err)
		}
	}
	if _, err := h.net.Write(buf); err != nil {
		h.tb.Fatalf("write: %v", err)
	}
}

func (r *recorder) turnSizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.perTurn)
}

// TestMessagesOfOneReadShareATurn: consecutive packets of messages that
// one read brings, in either syntax, are handled in one turn of the relay
// (and so reach the next actor as one batch), in their order; a packet
// that asserts, retracts or syncs is a turn of its own (runtime spec
// §15.7), and so is the rest of a packet mixing messages with them.
func TestMessagesOfOneReadShareATurn(t *testing.T) {
	h := newWire(t, Options{})
	h.oneWrite(`#bin [[0 <M <a>>]]`, `[[0 <M <b>>]]`, `#f`, `[[0 <A <c> 1>]]`,
		`#bin [[0 <M <d>>] [0 <R 1>]]`, `#bin [[0 <M <e>>]]`, `[[0 <M <f>>]]`)
	want := []string{"!<a>", "!<b>", "+<c>", "!<d>", "-<c>", "!<e>", "!<f>"}
	waitFor(t, "every event", func() bool { return len(h.rec.logged()) == len(want) })
	if got := h.rec.logged(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if got := h.rec.turnSizes(); !slices.Equal(got, []int{2, 1, 2, 2}) {
		t.Fatalf("the packets of one read arrived in turns of %v events, want [2 1 2 2]", got)
	}
}

// TestLargePacketTakesATurnOfItsOwn: a packet charged more than one unit
// per event (a KiB or more) is not merged with small ones, so that every
// event is charged what its own packet costs.
func TestLargePacketTakesATurnOfItsOwn(t *testing.T) {
	h := newWire(t, Options{})
	big := `<M <big "` + strings.Repeat("x", 3000) + `">>`
	h.oneWrite(`#bin [[0 <M <a>>]]`, `#bin [[0 <M <b>>]]`, `#bin [[0 `+big+`]]`, `#bin [[0 <M <c>>]]`)
	waitFor(t, "four messages", func() bool { return len(h.rec.logged()) == 4 })
	if got := h.rec.turnSizes(); !slices.Equal(got, []int{2, 1, 1}) {
		t.Fatalf("turns of %v events, want [2 1 1]", got)
	}
	if got := h.rec.logged(); got[0] != "!<a>" || got[1] != "!<b>" || !strings.HasPrefix(got[2], "!<big") || got[3] != "!<c>" {
		t.Fatalf("order %v", got)
	}
}

// TestGoodPacketsBeforeABadOneAreHandled: when a read brings good packets
// and then an undecodable one, the good ones take effect before the
// connection ends with a protocol error (nothing the peer sent in order
// is lost to a later mistake).
func TestGoodPacketsBeforeABadOneAreHandled(t *testing.T) {
	h := newWire(t, Options{})
	h.oneWrite(`#bin [[0 <M <a>>]]`, `[[0 <M <b>>]]`, "[[0 <M <c>>]]]\n")
	h.expectEOF()
	err := h.closed()
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want a protocol error", err)
	}
	if got := h.rec.logged(); !slices.Contains(got, "!<a>") || !slices.Contains(got, "!<b>") {
		t.Fatalf("the good packets before the bad one were lost: %v", got)
	}
}

// A read holding more messages than one turn takes (mergeEvents, or
// mergeBytes of packets) is cut into several turns, none past either
// limit, that take every packet once and in order.
func TestALargeReadIsCutIntoBoundedTurns(t *testing.T) {
	for _, c := range []struct {
		name string
		body string // payload of each message
		n    int
	}{
		{"events", "", 2000},                      // 2,000 small packets, under 64 KiB: the event limit binds
		{"bytes", strings.Repeat("z", 200), 1000}, // 1,000 of about 220 bytes: the byte limit binds
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf []byte
			for i := range c.n {
				ev := Event{Kind: EvMessage, Value: rec("m", preserves.Int(i), preserves.String(c.body))}
				var err error
				if buf, err = AppendPacket(buf, Packet{Kind: TurnPacket, Events: []Event{ev}}.ToValue(), Binary); err != nil {
					t.Fatal(err)
				}
			}
			r := &reader{c: &Conn{opts: Options{MaxDepth: DefaultMaxDepth, MaxPacketSize: DefaultMaxPacketSize}}, f: newFramer(0, 0, 0)}
			if c.name == "events" && len(buf) >= 64<<10 || c.name == "bytes" && len(buf) <= 64<<10 {
				t.Fatalf("%d bytes of packets do not test the %s limit", len(buf), c.name)
			}
			r.f.feed(buf)
			next, turns := 0, 0
			for more := true; more; {
				var err error
				if more, err = r.gather(); err != nil {
					t.Fatal(err)
				}
				if len(r.pend) == 0 {
					continue
				}
				turns++
				if len(r.pend) > 1024 { // the documented limits, not the constants
					t.Fatalf("a turn of %d packets", len(r.pend))
				}
				bytes := 0
				for _, p := range r.pend {
					evs := r.evBuf[p.from:p.to]
					if !p.fast || len(evs) != 1 {
						t.Fatalf("packet %d: fast %v, %d events", next, p.fast, len(evs))
					}
					if got := evs[0].Value.(*preserves.Record).Fields[0]; !preserves.Equal(got, preserves.Int(next)) {
						t.Fatalf("packet %d carries %v", next, got)
					}
					next++
					bytes += len(buf) / c.n
				}
				if bytes > 64<<10+len(buf)/c.n {
					t.Fatalf("a turn of about %d bytes", bytes)
				}
				r.forget()
			}
			if next != c.n || turns < 2 {
				t.Fatalf("%d of %d packets in %d turns", next, c.n, turns)
			}
		})
	}
}
