package relay

import (
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// patience bounds every wait that only ends early when something is wrong:
// generous, because CI runs the race detector on a small, loaded machine,
// and a passing test never waits for it.
const patience = 20 * time.Second

var waitFor = testutil.WaitFor

// checkGoroutines fails the test if goroutines started during it are still
// running at cleanup (after the other cleanups, registered later, ran).
func checkGoroutines(tb testing.TB) {
	base := runtime.NumGoroutine()
	tb.Cleanup(func() {
		deadline := time.Now().Add(patience)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				tb.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// newSys returns a system shut down at test end.
func newSys(tb testing.TB) *dataspace.System {
	tb.Helper()
	s := dataspacetest.NewSystem(tb, dataspace.Options{})
	return s
}

// recorder is an entity logging every event it receives, and counting the
// turns it received them in.
type recorder struct {
	dataspace.BaseEntity
	mu      sync.Mutex
	log     []string
	vals    map[dataspace.Handle]preserves.Value
	msgs    []preserves.Value
	turns   int
	inTurn  bool
	perTurn []int // events per turn
}

func newRecorder() *recorder { return &recorder{vals: make(map[dataspace.Handle]preserves.Value)} }

func (r *recorder) note(t *dataspace.Turn, s string) {
	if !r.inTurn {
		r.inTurn = true
		r.turns++
		r.perTurn = append(r.perTurn, 0)
		t.PreCommit(func(*dataspace.Turn) error {
			r.mu.Lock()
			r.inTurn = false
			r.mu.Unlock()
			return nil
		})
	}
	r.perTurn[len(r.perTurn)-1]++
	r.log = append(r.log, s)
}

func (r *recorder) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vals[h] = v
	r.note(t, "+"+preserves.FormatText(v))
	return nil
}

func (r *recorder) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.vals[h]
	delete(r.vals, h)
	r.note(t, "-"+preserves.FormatText(v))
	return nil
}

func (r *recorder) Message(t *dataspace.Turn, v preserves.Value) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, v)
	r.note(t, "!"+preserves.FormatText(v))
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.vals)
}

func (r *recorder) values() []preserves.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []preserves.Value
	for _, v := range r.vals {
		out = append(out, v)
	}
	return out
}

func (r *recorder) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) has(s string) bool {
	for _, l := range r.logged() {
		if l == s {
			return true
		}
	}
	return false
}

// driver is an actor the test runs turns in.
type driver struct {
	fr dataspace.FacetRef
}

func newDriver(tb testing.TB, sys *dataspace.System, name string) *driver {
	ch := make(chan dataspace.FacetRef, 1)
	sys.Spawn(name, func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		ch <- t.FacetRef()
		return nil
	})
	return &driver{fr: <-ch}
}

func (d *driver) do(fn func(t *dataspace.Turn)) {
	d.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

// wireHarness runs a relay under test over one end of a loopback TCP
// connection; the test plays the peer on the other end with raw packets.
// The relay exports a recorder as oid 0 and imports the test's oid 0.
type wireHarness struct {
	tb   testing.TB
	sys  *dataspace.System
	rec  *recorder
	recR *dataspace.Ref
	conn *Conn
	peer *dataspace.Ref
	net  net.Conn // the test's end
	fr   *framer
	drv  *driver
}

func tcpPair(tb testing.TB) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	b := <-ch
	if b == nil {
		tb.Fatal("accept failed")
	}
	return a, b
}

func newWire(tb testing.TB, opts Options) *wireHarness {
	checkGoroutines(tb)
	h := &wireHarness{tb: tb, sys: newSys(tb), rec: newRecorder(), fr: newFramer(0, 0, 0)}
	a, b := tcpPair(tb)
	h.net = b
	tb.Cleanup(func() { b.Close() })
	h.drv = newDriver(tb, h.sys, "driver")
	h.drv.do(func(t *dataspace.Turn) { h.recR = t.Create(h.rec) })
	opts.InitialRef = h.recR
	opts.ImportInitial = true
	c, peer, err := Spawn(h.sys, "relay", a, opts)
	if err != nil {
		tb.Fatal(err)
	}
	h.conn, h.peer = c, peer
	return h
}

// send writes raw bytes (a text packet if it does not end in a newline
// gets one).
func (h *wireHarness) send(text string) {
	h.tb.Helper()
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if _, err := h.net.Write([]byte(text)); err != nil {
		h.tb.Fatalf("write: %v", err)
	}
}

func (h *wireHarness) sendBinary(text string) {
	h.tb.Helper()
	v, err := preserves.ParseText(text)
	if err != nil {
		h.tb.Fatal(err)
	}
	b, err := AppendPacket(nil, v, Binary)
	if err != nil {
		h.tb.Fatal(err)
	}
	if _, err := h.net.Write(b); err != nil {
		h.tb.Fatalf("write: %v", err)
	}
}

// recv reads the next packet from the relay, with its syntax and raw bytes.
func (h *wireHarness) recv() (preserves.Value, Syntax, []byte) {
	h.tb.Helper()
	v, syn, raw, err := h.tryRecv(patience)
	if err != nil {
		h.tb.Fatalf("recv: %v", err)
	}
	return v, syn, raw
}

func (h *wireHarness) tryRecv(d time.Duration) (preserves.Value, Syntax, []byte, error) {
	deadline := time.Now().Add(d)
	buf := make([]byte, 4096)
	for {
		raw, syn, off, err := h.fr.next()
		if err != nil {
			return nil, 0, nil, err
		}
		if raw != nil {
			v, err := decodePacket(raw, syn, off, 0, 0)
			raw = append([]byte(nil), raw...)
			// include the newline terminator of text packets
			return v, syn, raw, err
		}
		_ = h.net.SetReadDeadline(deadline)
		n, err := h.net.Read(buf)
		h.fr.feed(buf[:n])
		if err != nil && n == 0 {
			return nil, 0, nil, err
		}
	}
}

// recvText is recv rendered as text.
func (h *wireHarness) recvText() string {
	h.tb.Helper()
	v, _, _ := h.recv()
	return preserves.FormatText(v)
}

// closed waits for the relay to end and returns its error.
func (h *wireHarness) closed() error {
	h.tb.Helper()
	select {
	case <-h.conn.Done():
	case <-time.After(patience):
		h.tb.Fatal("relay did not end")
	}
	return h.conn.Err()
}

// expectEOF reads until the relay closes its end, returning the packets
// seen on the way.
func (h *wireHarness) expectEOF() []string {
	h.tb.Helper()
	var out []string
	for {
		v, _, _, err := h.tryRecv(patience)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				h.tb.Fatalf("relay did not close the connection; saw %v", out)
			}
			return out
		}
		out = append(out, preserves.FormatText(v))
	}
}

// feed appends bytes to the pending input.
func (f *framer) feed(p []byte) {
	f.compact()
	f.buf = append(f.buf, p...)
}
