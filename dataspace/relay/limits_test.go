package relay

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

func TestLimitOversizePacketRefusedEarly(t *testing.T) {
	h := newWire(t, Options{MaxPacketSize: 1024})
	// A binary string claiming 1 MiB: refused from its header alone.
	h.net.Write([]byte{0xB5, 0xB1, 0x80, 0x80, 0x40})
	pkts := h.expectEOF()
	if len(pkts) != 1 || !strings.Contains(pkts[0], "longer than") {
		t.Fatalf("got %v", pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v", err)
	}
}

func TestLimitOversizeTextPacket(t *testing.T) {
	h := newWire(t, Options{MaxPacketSize: 1024})
	h.net.Write([]byte(`[[0 <M "` + strings.Repeat("x", 2000)))
	h.expectEOF()
	if err := h.closed(); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v", err)
	}
}

func TestLimitDeepNesting(t *testing.T) {
	for _, syn := range []Syntax{Text, Binary} {
		t.Run(syn.String(), func(t *testing.T) {
			h := newWire(t, Options{MaxDepth: 16})
			open := bytes.Repeat([]byte{'['}, 100)
			if syn == Binary {
				open = bytes.Repeat([]byte{0xB5}, 100)
			}
			h.net.Write(open) // never closed: refused without waiting
			pkts := h.expectEOF()
			if len(pkts) != 1 || !strings.Contains(pkts[0], "deeper") {
				t.Fatalf("got %v", pkts)
			}
			if err := h.closed(); !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestLimitMalformedPackets(t *testing.T) {
	cases := map[string]string{
		"bad syntax":       "[[0 <A <x> 1>]}\n",
		"not a packet":     "42\n",
		"bad event":        "[[0 <Q 1>]]\n",
		"bad oid":          `[["zero" <M 1>]]` + "\n",
		"bad handle":       "[[0 <A 1 x>]]\n",
		"bad wireref":      "[[0 <A #:[2 0] 1>]]\n",
		"wireref yours ne": "[[0 <A #:[1 55] 1>]]\n",
		"bad caveat":       "[[0 <A #:[1 0 <rewrite <bind <_>> <ref 3>>] 1>]]\n",
		"bad binary tag":   "\xB5\x01",
		"negative oid":     "[[-1 <M 1>]]\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			h := newWire(t, Options{})
			h.net.Write([]byte(in))
			pkts := h.expectEOF()
			if len(pkts) != 1 || !strings.HasPrefix(pkts[0], "<error ") {
				t.Fatalf("got %v", pkts)
			}
			if err := h.closed(); !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// Output from producers outside flow control (here a driver's turns on no
// account) is bounded by MaxOutbound, and the error says what happened.
func TestLimitOutboundFullDisconnected(t *testing.T) {
	h := newWire(t, Options{MaxOutbound: 64 << 10})
	h.send(`[[0 <A <present> 1>]]`)
	waitFor(t, "assertion", func() bool { return h.rec.count() == 1 })
	big := preserves.String(strings.Repeat("x", 32<<10))
	// The test never reads: the kernel buffers fill, then the relay's
	// bounded queue.
	deadline := time.Now().Add(patience)
	for {
		select {
		case <-h.conn.Done():
		default:
			if time.Now().After(deadline) {
				t.Fatal("slow peer never disconnected")
			}
			h.drv.do(func(t *dataspace.Turn) {
				for range 8 {
					t.Message(h.peer, big)
				}
			})
			continue
		}
		break
	}
	if err := h.conn.Err(); !errors.Is(err, ErrOutboundFull) || errors.Is(err, ErrSlowPeer) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "teardown", func() bool { return h.rec.count() == 0 })
}

// Events from a driver to a proxy after the connection ended are ignored.
func TestEventsAfterCloseIgnored(t *testing.T) {
	h := newWire(t, Options{})
	h.net.Close()
	h.closed()
	h.drv.do(func(t *dataspace.Turn) {
		t.Assert(h.peer, rec("late"))
		t.Message(h.peer, rec("late"))
		t.Sync(h.peer, func(*dataspace.Turn) error { return nil })
	})
}

// Decoding budget (issue 12): a packet of many tiny values is refused by
// its value count before it is decoded, in either syntax, so 15 MiB of
// one-byte #f items cannot become a gigabyte of Values.
func TestLimitPacketValues(t *testing.T) {
	const limit = 1000
	items := func(n int, item string) string { return strings.Repeat(item, n) }
	for _, syn := range []Syntax{Text, Binary} {
		t.Run(syn.String(), func(t *testing.T) {
			h := newWire(t, Options{MaxPacketValues: limit})
			within := `[[0 <A [` + items(limit-10, "#f ") + `] 1>]]` // the rest: turn, event, record, label, handle
			over := `[[0 <M [` + items(limit, "#f ") + `]>]]`
			if syn == Text {
				h.send(within)
				waitFor(t, "the packet within the limit", func() bool { return h.rec.count() == 1 })
				h.send(over)
			} else {
				h.sendBinary(within)
				waitFor(t, "the packet within the limit", func() bool { return h.rec.count() == 1 })
				h.sendBinary(over)
			}
			pkts := h.expectEOF()
			if len(pkts) != 1 || !strings.Contains(pkts[0], "more than 1000 values") {
				t.Fatalf("got %v", pkts)
			}
			if err := h.closed(); !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// A malformed event carrying a huge integer is refused with an error
// message that does not spell the integer out (formatting 8 MB of integer
// in decimal took 15 s of server CPU).
func TestLimitHugeIntegerErrorAbbreviated(t *testing.T) {
	h := newWire(t, Options{})
	huge := preserves.NewBigInt(new(big.Int).Lsh(big.NewInt(1), 8<<23)) // 8 MB
	pkt := preserves.Sequence{preserves.Sequence{preserves.Int(0), preserves.NewRecord(preserves.Symbol("Q"), huge)}}
	b, err := AppendPacket(nil, pkt, Binary)
	if err != nil {
		t.Fatal(err)
	}
	go h.net.Write(b)
	pkts := h.expectEOF()
	if len(pkts) != 1 || len(pkts[0]) > 400 || !strings.Contains(pkts[0], "integer of 67108865 bits") {
		t.Fatalf("got %d packets, first %.400q", len(pkts), pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
}

// A partial packet may not pin its buffer forever: past PacketTimeout from
// its first byte the connection is closed. Time between complete packets
// does not count.
func TestLimitPacketTimeout(t *testing.T) {
	t.Parallel()
	h := newWire(t, Options{PacketTimeout: 300 * time.Millisecond})
	h.send(`[[0 <A <one> 1>]]`)
	waitFor(t, "the first assertion", func() bool { return h.rec.count() == 1 })
	time.Sleep(500 * time.Millisecond) // longer than the timeout: idle between packets is fine
	h.send(`[[0 <A <two> 2>]]`)
	waitFor(t, "the second assertion", func() bool { return h.rec.count() == 2 })
	begin := time.Now()
	h.net.Write([]byte(`[[0 <A <three> 3`)) // never finished
	err := h.closed()
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "packet incomplete after 300ms") {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(begin); el < 300*time.Millisecond {
		t.Fatalf("closed after %v, before the timeout", el)
	}
	waitFor(t, "teardown", func() bool { return h.rec.count() == 0 })
}

// A peer that sends no event after connecting (for a gatekeeper: no
// resolve) is disconnected after FirstEventTimeout; one that does is not.
func TestLimitFirstEventTimeout(t *testing.T) {
	t.Parallel()
	idle := newWire(t, Options{FirstEventTimeout: 200 * time.Millisecond})
	idle.send(`[]`) // an empty Turn is no event
	if err := idle.closed(); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "no event within 200ms") {
		t.Fatalf("err = %v", err)
	}
	busy := newWire(t, Options{FirstEventTimeout: 200 * time.Millisecond})
	busy.send(`[[0 <A <hello> 1>]]`)
	waitFor(t, "the assertion", func() bool { return busy.rec.count() == 1 })
	time.Sleep(400 * time.Millisecond) // past the timeout: nothing may happen
	select {
	case <-busy.conn.Done():
		t.Fatalf("active peer disconnected: %v", busy.conn.Err())
	default:
	}
}

// MaxInitialAssertions bounds the assertions a peer holds at oid 0 (a
// gatekeeper's pending resolves and noise handshakes); retracted ones stop
// counting.
func TestLimitInitialAssertions(t *testing.T) {
	h := newWire(t, Options{MaxInitialAssertions: 3})
	h.send(`[[0 <A <a> 1>] [0 <A <b> 2>] [0 <A <c> 3>]]`)
	h.send(`[[0 <R 2>] [0 <A <d> 4>]]`)
	waitFor(t, "three live assertions", func() bool { return h.rec.has("+<d>") && h.rec.count() == 3 })
	h.send(`[[0 <A <e> 5>]]`)
	pkts := h.expectEOF()
	if len(pkts) != 1 || !strings.Contains(pkts[0], "more than 3 assertions at the initial object") {
		t.Fatalf("got %v", pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "teardown", func() bool { return h.rec.count() == 0 })
}

func (r *recorder) messages() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

// Packets still arriving share one memory budget beyond a free allowance
// per connection: a connection that would exceed it waits, reading
// nothing, until another's packet completes, and every reservation is
// returned in the end.
func TestLimitBufferBudgetShared(t *testing.T) {
	t.Parallel()
	budget := NewBufferBudget(64<<10, 512<<10)
	a := newWire(t, Options{BufferBudget: budget})
	// b's packet waits for the budget longer than its packet timeout:
	// that delay is ours, not the peer's, and does not count.
	b := newWire(t, Options{BufferBudget: budget, PacketTimeout: 200 * time.Millisecond})
	bigA := `[[0 <M "` + strings.Repeat("a", 450<<10) + `">]]` + "\n"
	a.net.Write([]byte(bigA[:400<<10])) // partial: holds most of the budget
	waitFor(t, "the first connection's reservation", func() bool { return budget.Used() > 400<<10 })
	go b.net.Write([]byte(`[[0 <M "` + strings.Repeat("b", 200<<10) + `">]]` + "\n"))
	time.Sleep(500 * time.Millisecond) // past b's packet timeout; not synchronisation
	if b.rec.messages() != 0 {
		t.Fatal("the second packet got through a spent budget")
	}
	a.net.Write([]byte(bigA[400<<10:]))
	waitFor(t, "both packets", func() bool { return a.rec.messages() == 1 && b.rec.messages() == 1 })
	a.net.Close()
	b.net.Close()
	a.closed()
	b.closed()
	waitFor(t, "the budget to be returned", func() bool { return budget.Used() == 0 })
}

// A quota shared by connections bounds the assertions they hold at oid 0
// together; a connection's share returns when it ends.
func TestLimitInitialQuotaShared(t *testing.T) {
	q := NewQuota(3)
	a := newWire(t, Options{InitialQuota: q})
	b := newWire(t, Options{InitialQuota: q})
	a.send(`[[0 <A <a1> 1>] [0 <A <a2> 2>]]`)
	waitFor(t, "a's assertions", func() bool { return a.rec.count() == 2 && q.Used() == 2 })
	b.send(`[[0 <A <b1> 1>]]`)
	waitFor(t, "b's assertion", func() bool { return b.rec.count() == 1 && q.Used() == 3 })
	b.send(`[[0 <A <b2> 2>]]`)
	pkts := b.expectEOF()
	if len(pkts) != 1 || !strings.Contains(pkts[0], "from all connections") {
		t.Fatalf("got %v", pkts)
	}
	if err := b.closed(); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "b's share back", func() bool { return q.Used() == 2 })
	a.send(`[[0 <R 1>] [0 <A <a3> 3>]]`)
	waitFor(t, "a within the quota", func() bool { return a.rec.has("+<a3>") && q.Used() == 2 })
	a.net.Close()
	a.closed()
	waitFor(t, "a's share back", func() bool { return q.Used() == 0 })
}
