package relay

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// flowServer is a dataspace served to raw TCP peers, each connection with
// its own relay options.
type flowServer struct {
	sys *dataspace.System
	ds  *dataspace.Ref
}

func newFlowServer(tb testing.TB) *flowServer {
	checkGoroutines(tb)
	s := &flowServer{sys: newSys(tb)}
	drv := newDriver(tb, s.sys, "server")
	drv.do(func(t *dataspace.Turn) { s.ds = t.Create(dataspace.NewDataspace()) })
	return s
}

// connect returns the server's relay and the raw peer end.
func (s *flowServer) connect(tb testing.TB, opts Options) (*Conn, net.Conn) {
	a, b := tcpPair(tb)
	tb.Cleanup(func() { b.Close() })
	opts.InitialRef = s.ds
	c, _, err := Spawn(s.sys, "conn", a, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return c, b
}

func binPacket(tb testing.TB, text string) []byte {
	v, err := preserves.ParseText(text)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := AppendPacket(nil, v, Binary)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// subscribe makes the raw peer nc observe every <m _> (delivered to its
// oid 0) and waits until the subscription is in place.
func subscribe(tb testing.TB, nc net.Conn) *framer {
	tb.Helper()
	if _, err := nc.Write(append(binPacket(tb, `[[0 <A <Observe <group <rec m> {0: <bind <_>>}> #:[0 0]> 0>]]`),
		binPacket(tb, `[[0 <S #:[0 1]>]]`)...)); err != nil {
		tb.Fatal(err)
	}
	f := newFramer(0, 0, 0)
	if n := countEvents(tb, nc, f, 1); n != 1 {
		tb.Fatalf("sync answer: %d events", n)
	}
	return f
}

// countEvents reads packets from nc until at least want events arrived,
// returning how many did.
func countEvents(tb testing.TB, nc net.Conn, f *framer, want int) int {
	tb.Helper()
	buf := make([]byte, 64<<10)
	got := 0
	_ = nc.SetReadDeadline(time.Now().Add(patience))
	for got < want {
		raw, syn, off, err := f.next()
		if err != nil {
			tb.Fatal(err)
		}
		if raw != nil {
			v, err := decodePacket(raw, syn, off, 0, 0)
			if err != nil {
				tb.Fatal(err)
			}
			pkt, err := ParsePacket(v)
			if err != nil || pkt.Kind != TurnPacket {
				tb.Fatalf("packet %s: %v", preserves.FormatText(v), err)
			}
			got += len(pkt.Events)
			continue
		}
		n, err := nc.Read(buf)
		f.feed(buf[:n])
		if err != nil && n == 0 {
			tb.Fatalf("after %d of %d events: %v", got, want, err)
		}
	}
	return got
}

func queued(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out)
}

// A producer that writes as fast as its socket takes bytes, to a consumer
// that reads nothing for a while, is slowed down instead of filling the
// consumer's queue: its relay stops reading once its account is in debt,
// the consumer's queue stays within the producer's credit, and once the
// consumer reads, every message arrives and nobody is disconnected.
func TestFlowProducerSlowedToConsumer(t *testing.T) {
	s := newFlowServer(t)
	const credit = 256
	cons, cnc := s.connect(t, Options{MaxOutbound: 1 << 20}) // no flow control would overflow it
	// A short packet timeout: packets the relay stops reading half-way for
	// flow control are not late by the peer's fault.
	prod, pnc := s.connect(t, Options{Credit: credit, PacketTimeout: 200 * time.Millisecond})
	f := subscribe(t, cnc)

	const total = 16 << 10 // 16 MiB of 1 KiB messages: more than the kernel buffers hold
	msg := binPacket(t, `[[0 <M <m #"`+strings.Repeat("x", 1000)+`">>]]`)
	var written atomic.Int64
	prodDone := make(chan error, 1)
	go func() {
		for range total {
			if _, err := pnc.Write(msg); err != nil {
				prodDone <- err
				return
			}
			written.Add(1)
		}
		prodDone <- nil
	}()
	waitFor(t, "the producer's relay to wait for its debt", func() bool { return prod.Account().Debt() > credit })
	maxQueued := 0
	for range 20 { // the queue stays bounded while the producer is held back
		maxQueued = max(maxQueued, queued(cons))
		if prod.Account().Debt() <= credit {
			break
		}
	}
	// Credit bounds the bytes (1 unit per KiB) and events (1 unit each)
	// charged to the producer: its share of the queue is below credit KiB.
	if maxQueued > credit<<10 {
		t.Fatalf("consumer queue %d bytes with credit %d", maxQueued, credit)
	}
	if written.Load() == total {
		t.Fatal("the producer was never slowed down")
	}
	time.Sleep(500 * time.Millisecond) // held back past the packet timeout; not synchronisation
	if got := countEvents(t, cnc, f, total); got != total {
		t.Fatalf("consumer got %d of %d", got, total)
	}
	if err := <-prodDone; err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Conn{cons, prod} {
		select {
		case <-c.Done():
			t.Fatalf("connection ended: %v", c.Err())
		default:
		}
	}
	waitFor(t, "the producer's debt to be settled", func() bool { return prod.Account().Debt() == 0 })
}

// The Go client side: a producer goroutine using ActivatePaced on its own
// account is held back when the server stops reading from it, instead of
// queueing without bound in its relay.
func TestFlowClientActivatePaced(t *testing.T) {
	s := newFlowServer(t)
	_, cnc := s.connect(t, Options{})
	f := subscribe(t, cnc)
	// The client: a relay of its own system importing the server's oid 0.
	a, b := tcpPair(t)
	t.Cleanup(func() { a.Close(); b.Close() })
	if _, _, err := Spawn(s.sys, "server-conn", b, Options{InitialRef: s.ds, Credit: 64}); err != nil {
		t.Fatal(err)
	}
	csys := newSys(t)
	_, peer, err := Spawn(csys, "client", a, Options{ImportInitial: true})
	if err != nil {
		t.Fatal(err)
	}
	drv := newDriver(t, csys, "producer")
	acct := dataspace.NewAccount()
	const limit, total = 64, 8 << 10
	payload := preserves.ByteString(strings.Repeat("y", 1000))
	var sent atomic.Int64
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for range total {
			if _, err := drv.fr.ActivatePaced(ctx, acct, limit, func(t *dataspace.Turn) error {
				t.Message(peer, preserves.Rec("m", payload))
				return nil
			}); err != nil {
				done <- err
				return
			}
			sent.Add(1)
		}
		done <- nil
	}()
	waitFor(t, "the producer to wait for its account", func() bool { return acct.Debt() > limit })
	if sent.Load() == total {
		t.Fatal("the producer was never held back")
	}
	if got := countEvents(t, cnc, f, total); got != total {
		t.Fatalf("consumer got %d of %d", got, total)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the producer's debt to be settled", func() bool { return acct.Debt() == 0 })
}

// "Peer is not reading" means exactly that: a peer that reads nothing for
// WriteTimeout while output waits is disconnected, and the error says so.
func TestFlowPeerReadingNothingDisconnected(t *testing.T) {
	t.Parallel()
	h := newWire(t, Options{WriteTimeout: 300 * time.Millisecond, MaxOutbound: 1 << 30})
	big := preserves.String(strings.Repeat("x", 256<<10))
	begin := time.Now()
	for {
		select {
		case <-h.conn.Done():
		default:
			if time.Since(begin) > patience {
				t.Fatal("never disconnected")
			}
			h.drv.do(func(t *dataspace.Turn) { t.Message(h.peer, big) })
			time.Sleep(10 * time.Millisecond) // pacing the producer, not synchronisation
			continue
		}
		break
	}
	err := h.conn.Err()
	if !errors.Is(err, ErrSlowPeer) || !strings.Contains(err.Error(), "read nothing for 300ms") {
		t.Fatalf("err = %v", err)
	}
}

// A peer that reads slowly but steadily is never called "not reading",
// however much is queued for it.
func TestFlowSlowReaderKeptConnected(t *testing.T) {
	t.Parallel()
	h := newWire(t, Options{WriteTimeout: 2 * time.Second, MaxOutbound: 1 << 30})
	const n = 32
	big := preserves.String(strings.Repeat("x", 64<<10))
	h.drv.do(func(t *dataspace.Turn) {
		for range n {
			t.Message(h.peer, big)
		}
	})
	// Read about 1 MB/s: the 2 MiB take two seconds, longer than the
	// write timeout, but every read makes progress.
	var total int
	buf := make([]byte, 8<<10)
	_ = h.net.SetReadDeadline(time.Now().Add(patience))
	for total < n*(64<<10) {
		k, err := h.net.Read(buf)
		if err != nil {
			t.Fatalf("after %d bytes: %v (relay: %v)", total, err, h.conn.Err())
		}
		total += k
		time.Sleep(8 * time.Millisecond) // a slow reader, not synchronisation
	}
	select {
	case <-h.conn.Done():
		t.Fatalf("slow reader disconnected: %v", h.conn.Err())
	default:
	}
}

// countingEntity counts the messages it receives.
type countingEntity struct {
	dataspace.BaseEntity
	n atomic.Int32
}

func (c *countingEntity) Message(*dataspace.Turn, preserves.Value) error {
	c.n.Add(1)
	return nil
}

// stall holds fr's actor in a turn on a goroutine of its own until the
// returned function is called, as a stuck local subscriber would be.
func stall(fr dataspace.FacetRef) (release func()) {
	entered, ch := make(chan struct{}), make(chan struct{})
	go fr.ActivateNow(func(*dataspace.Turn) error { close(entered); <-ch; return nil })
	<-entered
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// Large messages are charged by size all the way down: a producer whose
// messages wait in a stuck local subscriber's mailbox owes their size in
// KiB, not just their number, so credit bounds the memory they hold.
func TestFlowLargeMessagesChargedBySizeDownstream(t *testing.T) {
	s := newFlowServer(t)
	sub := &countingEntity{}
	drv := newDriver(t, s.sys, "subscriber")
	drv.do(func(t *dataspace.Turn) {
		t.Assert(s.ds, dataspace.Observe(pattern.Rec(preserves.Symbol("m"), pattern.Discard{}), t.Create(sub)))
	})
	prod, pnc := s.connect(t, Options{Credit: 1000})
	big := binPacket(t, `[[0 <M <m #"`+strings.Repeat("z", 64<<10)+`">>]]`)
	// The subscriber is stuck in a turn (on a goroutine of its own, so
	// the relay's reader, which runs the turns its input causes, hands
	// its turns on instead of waiting).
	release := stall(drv.fr)
	defer release()
	go pnc.Write(bytes.Repeat(big, 41))
	// Each 64 KiB message costs 65 units in the subscriber's mailbox: the
	// relay stops reading after about credit/65 of them.
	waitFor(t, "the producer to be held back", func() bool { return prod.Account().Debt() > 1000 })
	if d := prod.Account().Debt(); d > 1000+2*65 {
		t.Fatalf("debt %d: the relay read on past its credit", d)
	}
	release()
	waitFor(t, "every message", func() bool { return sub.n.Load() == 41 })
	waitFor(t, "the debt to be settled", func() bool { return prod.Account().Debt() == 0 })
}
