package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Options configures one relay connection.
type Options struct {
	// InitialRef, if set, is exported as oid 0, pinned forever.
	InitialRef *dataspace.Ref
	// ImportInitial makes the peer's oid 0 available as a local proxy
	// (pinned forever), returned by Run and Spawn.
	ImportInitial bool
	// TextOutput selects the output syntax before any packet is received;
	// afterwards replies use the syntax of the most recent inbound packet.
	TextOutput bool
	// MaxPacketSize bounds one inbound packet (bytes); 0 means 16 MiB.
	MaxPacketSize int
	// MaxDepth bounds inbound nesting; 0 means DefaultMaxDepth.
	MaxDepth int
	// MaxPacketValues bounds the values (atoms and compounds at every
	// depth) in one inbound packet, and so the memory it decodes into;
	// 0 means DefaultMaxPacketValues.
	MaxPacketValues int
	// MaxOutbound bounds the bytes queued for the peer; past it the
	// connection is closed with ErrOutboundFull. Flow control keeps the
	// queue far below it whenever its producers are accounted (other
	// relays, ActivatePaced); it is the backstop against local producers
	// that are not. 0 means 4× MaxPacketSize.
	MaxOutbound int
	// Credit is the debt (runtime spec §9) the peer's input may run up
	// before the relay stops reading from it: every inbound packet is
	// handled in a turn on the connection's account, the batches it causes
	// and their fan-out borrow against that account until handled, and the
	// bytes other relays queue because of it are debt until written. 0
	// means DefaultCredit.
	Credit int64
	// WriteTimeout: a peer that has read nothing for this long while output
	// waits for it is disconnected with ErrSlowPeer. 0 means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// PacketTimeout bounds the time from an inbound packet's first byte
	// to its last, so a peer cannot pin a partial packet's buffer (up to
	// MaxPacketSize) forever; past it the connection is closed with
	// ErrLimit. 0 means DefaultPacketTimeout; negative, no limit.
	PacketTimeout time.Duration

	// BufferBudget bounds the memory spent on packets still arriving,
	// shared with other connections; nil means DefaultBufferBudget.
	BufferBudget *BufferBudget

	// Limits for connections from peers not yet trusted (the relay
	// listeners set them; zero means no limit). Each ends the connection
	// with ErrLimit.

	// FirstEventTimeout closes a connection whose peer has sent no event
	// this long after connecting: for a gatekeeper at oid 0, no resolve.
	FirstEventTimeout time.Duration
	// MaxInitialAssertions bounds the assertions the peer holds at
	// InitialRef at once: for a gatekeeper, its resolves, pending or
	// granted, and so its noise handshakes.
	MaxInitialAssertions int
	// InitialQuota, shared by several connections (a listener's), bounds
	// the assertions they hold at InitialRef together, so that many
	// connections cannot multiply MaxInitialAssertions without bound.
	InitialQuota *Quota
	// Logger receives connection diagnostics; the zero Logger discards.
	Logger zerolog.Logger
}

// Flow-control defaults (Options.Credit, Options.WriteTimeout).
const (
	// DefaultCredit lets about a thousand small messages, or 4 MiB of
	// output, be in flight per connection: enough to keep every stage of
	// a pipeline busy, little enough that a flood costs the server a few
	// MiB per producer.
	DefaultCredit = 4096
	// DefaultWriteTimeout is how long a peer may read nothing while
	// output waits before it is disconnected.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultPacketTimeout lets a 16 MiB packet arrive at 300 KB/s.
	DefaultPacketTimeout = time.Minute
)

// outputCost is what queued output costs its account until written: one
// unit per event plus one per KiB, so that credit bounds both the number
// of events in flight and the memory they hold.
func outputCost(events, bytes int) int64 { return int64(events) + int64(bytes>>10) }

// loan is debt charged to an account for bytes waiting in the outbound
// queue; the writer repays it once they are written (or dropped).
type loan struct {
	acct *dataspace.Account
	n    int64
}

// Quota is a count shared by connections (Options.InitialQuota).
type Quota struct {
	limit int64
	used  atomic.Int64
}

// NewQuota returns a quota of n.
func NewQuota(n int64) *Quota { return &Quota{limit: n} }

// Used returns how much of the quota is taken.
func (q *Quota) Used() int64 { return q.used.Load() }

func (q *Quota) take() bool {
	if q.used.Add(1) > q.limit {
		q.used.Add(-1)
		return false
	}
	return true
}

func (q *Quota) give(n int) { q.used.Add(-int64(n)) }

// Conn is one relay connection: a facet of its host actor holding the
// membrane, the proxies for imported objects, and the assertions made on
// the peer's behalf, plus a reader and a writer goroutine (linked tasks of
// that facet).
//
// Everything but the outbound byte queue is owned by the host actor and
// touched only in its turns.
type Conn struct {
	opts Options
	log  zerolog.Logger
	r    io.Reader
	w    io.Writer
	cl   io.Closer

	fr    dataspace.FacetRef
	facet dataspace.FacetID
	peer  *dataspace.Ref

	// Owned by the host actor's turns.
	exported, imported table
	nextOid            int64
	inbound            map[int64]inRec
	outbound           map[dataspace.Handle]outRec
	nextWireHandle     int64
	initialAsserts     int    // live inbound assertions at oid 0 (MaxInitialAssertions)
	pending            []byte // the Turn packet being built this turn
	pendingN           int    // events in it
	flushQueued        bool
	flushFn            func(*dataspace.Turn) error // c.flush, bound once: a method value allocates
	syntax             Syntax
	stopped            bool

	// acct is charged for everything the peer's packets cause (§9).
	acct *dataspace.Account

	// Owned by the writer goroutine.
	probed      bool
	setDeadline func(time.Time) error // nil: the stream has no write deadlines
	deadlineSet time.Time

	// Outbound bytes, shared with the writer goroutine.
	mu                            sync.Mutex
	out                           []byte
	loans                         []loan // debt for the bytes in out
	closing                       bool   // no more output will be queued: write what is left, then close
	writing                       bool   // a writer goroutine runs (see kick)
	retire                        bool   // the running writer has been idle for writerLinger: it ends
	writes, seenWrites, writerGen uint64
	lingerT                       *time.Timer
	wake                          chan struct{}
	spare                         []byte // the last written buffer, reused for the next output
	spareL                        []loan
	final                         bool          // the final write has begun: no writer starts again
	wdone                         chan struct{} // closed once the final write has closed the stream

	quotaHeld atomic.Int64 // of Options.InitialQuota, returned when the tasks end

	errv   atomic.Pointer[error]
	done   chan struct{}
	nTasks atomic.Int32
	closed sync.Once
}

// outRec is one assertion sent to the peer: its wire handle and pins.
type outRec struct {
	wire int64
	pins []*symbol
}

type inRec struct {
	local   dataspace.Handle
	pins    []*symbol
	initial bool // made at oid 0: counts against MaxInitialAssertions
}

// Run starts a relay over rw in a new child facet of the active facet and
// returns the connection and, with ImportInitial, the proxy for the peer's
// oid 0 (else nil). rw's Close must unblock its Read and Write: the relay
// closes rw when the facet stops. The facet stops when the peer
// disconnects or misbehaves; the host actor never crashes because of the
// peer.
func Run(t *dataspace.Turn, rw io.ReadWriteCloser, opts Options) (*Conn, *dataspace.Ref) {
	return RunSplit(t, rw, rw, rw, opts)
}

// RunSplit is Run over separate input and output streams (e.g. a child
// process's stdout and stdin, or the server's own stdin and stdout for
// --inferior). closer is called once when the connection ends; it must
// unblock pending reads and writes.
func RunSplit(t *dataspace.Turn, r io.Reader, w io.Writer, closer io.Closer, opts Options) (*Conn, *dataspace.Ref) {
	if opts.MaxPacketSize <= 0 {
		opts.MaxPacketSize = DefaultMaxPacketSize
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxOutbound <= 0 {
		opts.MaxOutbound = 4 * opts.MaxPacketSize
	}
	if opts.Credit <= 0 {
		opts.Credit = DefaultCredit
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.BufferBudget == nil {
		opts.BufferBudget = DefaultBufferBudget
	}
	if opts.PacketTimeout == 0 {
		opts.PacketTimeout = DefaultPacketTimeout
	}
	c := &Conn{
		opts:     opts,
		log:      opts.Logger,
		r:        r,
		w:        w,
		cl:       closer,
		exported: newTable(),
		imported: newTable(),
		inbound:  make(map[int64]inRec),
		outbound: make(map[dataspace.Handle]outRec),
		wdone:    make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		acct:     dataspace.NewAccount(),
	}
	c.flushFn = c.flush
	if opts.TextOutput {
		c.syntax = Text
	}
	_, _ = t.Facet(func(t *dataspace.Turn) error {
		c.fr = t.FacetRef()
		c.facet = t.ActiveFacet()
		if opts.InitialRef != nil {
			c.export(opts.InitialRef).count = 1 // pinned forever
		}
		if opts.ImportInitial {
			s := c.importOid(t, 0)
			s.count = 1 // pinned forever
			c.peer = s.ref
		}
		t.OnStop(func(t *dataspace.Turn) error {
			c.shutdown()
			return nil
		})
		c.nTasks.Store(2)
		t.LinkedTask("relay-reader", c.readLoop)
		return nil
	})
	return c, c.peer
}

// Spawn runs a relay over rw in a new top-level actor of sys and waits for
// it to boot. It returns ErrClosed if the actor could not start.
func Spawn(sys *dataspace.System, name string, rw io.ReadWriteCloser, opts Options) (*Conn, *dataspace.Ref, error) {
	return spawn(sys, name, rw, func(t *dataspace.Turn) (*Conn, *dataspace.Ref) { return Run(t, rw, opts) })
}

// spawn runs a relay, started by run, in a new top-level actor of sys and
// waits for it to boot; if the actor stops first, it closes closer and
// returns ErrClosed.
func spawn(sys *dataspace.System, name string, closer io.Closer, run func(*dataspace.Turn) (*Conn, *dataspace.Ref)) (*Conn, *dataspace.Ref, error) {
	ch := make(chan *Conn, 1)
	a := sys.Spawn(name, func(t *dataspace.Turn) error {
		c, _ := run(t) // the peer is c.peer
		ch <- c
		return nil
	})
	select {
	case c := <-ch:
		return c, c.peer, nil
	case <-a.Done():
		select {
		case c := <-ch:
			return c, c.peer, nil
		default:
		}
		_ = closer.Close()
		return nil, nil, ErrClosed
	}
}

// Account returns the connection's account: the debt its peer's input has
// caused and that is not yet settled (runtime spec §9).
func (c *Conn) Account() *dataspace.Account { return c.acct }

// Peer returns the proxy for the peer's oid 0 (nil without ImportInitial).
func (c *Conn) Peer() *dataspace.Ref { return c.peer }

// Facet returns the relay facet.
func (c *Conn) Facet() dataspace.FacetRef { return c.fr }

// Done is closed once the connection has ended and both of its goroutines
// have returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended: nil for a clean end (EOF, or the
// facet stopped locally), a *ProtocolError, a *PeerError, ErrSlowPeer, an
// I/O error.
func (c *Conn) Err() error {
	if p := c.errv.Load(); p != nil {
		return *p
	}
	return nil
}

// Close ends the connection from any goroutine (not from inside a turn of
// the host actor: use StopIn there): the relay facet stops, every assertion
// made on the peer's behalf is retracted.
func (c *Conn) Close() {
	c.fr.Activate(func(t *dataspace.Turn) error {
		c.stopIn(t, nil, false)
		return nil
	})
}

// StopIn ends the connection from inside a turn of the host actor.
func (c *Conn) StopIn(t *dataspace.Turn) { c.stopIn(t, nil, false) }

func (c *Conn) setErr(err error) {
	if err != nil {
		c.errv.CompareAndSwap(nil, &err)
	}
}

// stopIn stops the relay facet; with err and sendErr, an Error packet is
// queued first (best effort).
func (c *Conn) stopIn(t *dataspace.Turn, err error, sendErr bool) {
	if c.stopped {
		return
	}
	if err != nil {
		c.setErr(err)
		c.log.Warn().Err(c.Err()).Msg("relay connection error") // the first error is the cause
	}
	if c.pendingN > 0 {
		_ = c.flush(t)
	}
	if err != nil && sendErr {
		pkt := Packet{Kind: ErrorPacket, Msg: err.Error(), Detail: preserves.Bool(false)}
		c.enqueueBytes(pkt.ToValue(), true)
	}
	c.stopped = true
	t.StopFacet(c.facet)
}

// shutdown runs as the relay facet's stop action: no more output will be
// queued, so the writer writes what is left and closes the stream.
func (c *Conn) shutdown() {
	c.stopped = true
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.kick()
}

// kick starts a writer goroutine if there is something to write (or the
// stream to close) and none runs. The writer runs only while it has
// bytes to write: an idle connection holds no writer goroutine and no
// stack (issue 16: memory per idle session).
func (c *Conn) kick() {
	c.mu.Lock()
	start, wake := c.kickLocked()
	c.mu.Unlock()
	c.kicked(start, wake)
}

// kickLocked is kick's decision, taken under c.mu (so that enqueueRaw
// takes the lock once per packet): start a writer, or wake the running one.
func (c *Conn) kickLocked() (start, wake bool) {
	if c.writing {
		return false, true
	}
	start = !c.final && (len(c.out) > 0 || c.closing)
	c.writing = start
	return start, false
}

// kicked carries out kickLocked's decision, after c.mu is released.
func (c *Conn) kicked(start, wake bool) {
	switch {
	case start:
		go c.writeRun()
	case wake:
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// writerLinger is how long an idle writer waits for more output before
// its goroutine ends: long enough that a busy connection does not start
// one per packet (a fresh goroutine also regrows its stack), short enough
// that idle sessions soon hold none.
const writerLinger = 250 * time.Millisecond

func (c *Conn) closeStream() {
	c.closed.Do(func() {
		if c.cl != nil {
			_ = c.cl.Close()
		}
	})
}

func (c *Conn) taskDone() {
	if c.nTasks.Add(-1) == 0 {
		// The facet has stopped (or its actor ended), retracting what the
		// peer asserted: its share of the quota goes back.
		if q := c.opts.InitialQuota; q != nil {
			q.give(int(c.quotaHeld.Swap(0)))
		}
		close(c.done)
	}
}

// ---- outbound ----

// proxy is the local stand-in for one of the peer's exported objects. It
// lives in the relay facet; events to it become TurnEvents.
type proxy struct {
	c   *Conn
	oid int64
	sym *symbol
}

func (p *proxy) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	c := p.c
	if c.stopped {
		return nil
	}
	wv, pins, err := c.encodeValue(v, nil)
	if err != nil {
		c.release(pins)
		c.log.Warn().Err(err).Msg("relay: assertion not sent")
		return nil
	}
	if c.live(p.sym) {
		p.sym.count++
		pins = append(pins, p.sym)
	} else {
		// The peer has released this oid and will ignore the event: it
		// takes no pins there, so none are kept here (§15.6).
		c.release(pins)
		pins = nil
	}
	// Wire handles are allocated per connection rather than reusing the
	// process-wide local handle (the peer treats them as opaque): the
	// byte stream of a session is then deterministic, and the numbers
	// stay small.
	wh := c.nextWireHandle
	c.nextWireHandle++
	c.outbound[h] = outRec{wire: wh, pins: pins}
	c.queue(t, Event{Oid: p.oid, Kind: EvAssert, Value: wv, Handle: wh})
	return nil
}

func (p *proxy) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	c := p.c
	if c.stopped {
		return nil
	}
	o, ok := c.outbound[h]
	if !ok {
		return nil
	}
	delete(c.outbound, h)
	c.queue(t, Event{Oid: p.oid, Kind: EvRetract, Handle: o.wire})
	c.release(o.pins)
	return nil
}

func (p *proxy) Message(t *dataspace.Turn, v preserves.Value) error {
	c := p.c
	if c.stopped {
		return nil
	}
	if c.queuePlainMessage(t, p.oid, v) {
		return nil
	}
	wv, pins, err := c.encodeValue(v, nil)
	if err != nil {
		c.release(pins)
		c.log.Warn().Err(err).Msg("relay: message not sent")
		return nil
	}
	c.queue(t, Event{Oid: p.oid, Kind: EvMessage, Value: wv})
	if c.release(pins) {
		// Transient-reference rule, sender side (§15.5).
		c.stopIn(t, ErrTransient, true)
	}
	return nil
}

// Sync across the wire, outbound (§15.8): a one-shot local entity K is
// exported fresh and sent as the peer; the target proxy is pinned until K
// fires.
func (p *proxy) Sync(t *dataspace.Turn, peer *dataspace.Ref) error {
	c := p.c
	if c.stopped {
		return nil
	}
	k := &syncOut{c: c, peer: peer}
	kref := t.Create(k)
	w, ks := c.encodeRef(kref)
	k.pins = []*symbol{ks}
	if c.live(p.sym) {
		p.sym.count++
		k.pins = append(k.pins, p.sym)
	}
	c.queue(t, Event{Oid: p.oid, Kind: EvSync, Value: w})
	return nil
}

type syncOut struct {
	dataspace.BaseEntity
	c    *Conn
	peer *dataspace.Ref
	pins []*symbol
}

func (k *syncOut) Message(t *dataspace.Turn, _ preserves.Value) error {
	if k.pins == nil {
		return nil
	}
	k.c.release(k.pins)
	k.pins = nil
	t.Message(k.peer, preserves.Bool(true))
	return nil
}

// queue adds a TurnEvent to the packet this turn will send, scheduling the
// flush once per turn (§15.6: one Turn packet per relay turn).
func (c *Conn) queue(t *dataspace.Turn, ev Event) {
	n := len(c.pending)
	if c.pendingN == 0 {
		if c.syntax == Text {
			c.pending = append(c.pending[:0], '[')
		} else {
			c.pending = append(c.pending[:0], 0xB5)
		}
		n = len(c.pending)
	} else if c.syntax == Text {
		c.pending = append(c.pending, ' ')
	}
	out, err := appendEvent(c.pending, &ev, c.syntax)
	if err != nil {
		c.pending = c.pending[:n]
		c.log.Error().Err(err).Msg("relay: cannot encode event")
		return
	}
	c.pending = out
	c.queued(t)
}

// queued counts an event appended to the pending packet and schedules the
// flush once per turn.
func (c *Conn) queued(t *dataspace.Turn) {
	c.pendingN++
	if !c.flushQueued {
		c.flushQueued = true
		t.PreCommit(c.flushFn)
	}
}

// queuePlainMessage is proxy.Message's fast path on a binary connection
// for a message without embedded references (so without membrane work):
// one walk encodes it straight into the pending packet, where the general
// path walks it once to look for references and again to encode it. The
// bytes are the same. It reports false, having queued nothing, for any
// other message.
func (c *Conn) queuePlainMessage(t *dataspace.Turn, oid int64, v preserves.Value) bool {
	if c.syntax != Binary {
		return false
	}
	buf := c.pending
	if c.pendingN == 0 {
		buf = append(buf[:0], 0xB5)
	}
	buf = append(buf, 0xB5)
	buf = appendBinInt(buf, oid)
	buf = append(buf, binLabel[EvMessage]...)
	buf, ok := appendSimple(buf, v, 0, true)
	if !ok {
		return false // nothing queued: c.pending keeps its length and events
	}
	c.pending = append(buf, 0x84, 0x84)
	c.queued(t)
	return true
}

func (c *Conn) flush(t *dataspace.Turn) error {
	c.flushQueued = false
	if c.pendingN == 0 {
		return nil
	}
	if c.syntax == Text {
		c.pending = append(c.pending, ']', '\n')
	} else {
		c.pending = append(c.pending, 0x84)
	}
	ok := c.enqueueRaw(c.pending, false, t.Account(), outputCost(c.pendingN, len(c.pending)))
	c.pendingN = 0
	c.pending = c.pending[:0]
	if cap(c.pending) > 1<<20 {
		c.pending = nil
	}
	if !ok && !c.stopped {
		c.stopIn(t, fmt.Errorf("%w (%d bytes)", ErrOutboundFull, c.opts.MaxOutbound), false)
	}
	return nil
}

// enqueueRaw hands encoded packet bytes to the writer, as enqueueBytes,
// charging cost to acct (if not nil) until they are written.
func (c *Conn) enqueueRaw(b []byte, force bool, acct *dataspace.Account, cost int64) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return true
	}
	if !force && len(c.out) > 0 && len(c.out)+len(b) > c.opts.MaxOutbound {
		c.mu.Unlock()
		return false
	}
	c.out = append(c.out, b...)
	if acct != nil {
		acct.Borrow(cost)
		if n := len(c.loans); n > 0 && c.loans[n-1].acct == acct {
			c.loans[n-1].n += cost
		} else {
			c.loans = append(c.loans, loan{acct, cost})
		}
	}
	start, wake := c.kickLocked()
	c.mu.Unlock()
	c.kicked(start, wake)
	return true
}

// enqueueBytes encodes v in the current output syntax and hands it to the
// writer. It reports false when the bounded outbound buffer overflowed.
// force appends even past the bound (a final Error packet).
func (c *Conn) enqueueBytes(v preserves.Value, force bool) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return true
	}
	n := len(c.out)
	out, err := AppendPacket(c.out, v, c.syntax)
	if err != nil {
		c.mu.Unlock()
		c.log.Error().Err(err).Msg("relay: cannot encode packet")
		return true
	}
	if !force && len(out) > c.opts.MaxOutbound && n > 0 {
		c.out = out[:n]
		c.mu.Unlock()
		return false
	}
	c.out = out
	c.mu.Unlock()
	c.kick()
	return true
}

// writeRun is a writer goroutine, started by kick: it writes everything
// queued since its last write in one Write call (packets queued by several
// turns go out together, so a burst of turns costs one system call), and
// ends when nothing is left. Once the connection is closing it writes
// what is left, bounded in time, and closes the stream: that final run
// ends the writer's share of the connection (taskDone), and the reader
// waits for it (wdone) so that the actor outlives its last write.
func (c *Conn) writeRun() {
	// A timer, not one per wait: arming a timer on every idle moment
	// costs the hot path more than the whole write (measured).
	c.mu.Lock()
	c.writerGen++
	gen := c.writerGen
	linger := time.AfterFunc(writerLinger, func() { c.lingerCheck(gen) })
	c.lingerT = linger
	c.mu.Unlock()
	defer linger.Stop()
	var spare []byte // the last written buffer, reused for the next output
	var spareLoans []loan
	for {
		c.mu.Lock()
		buf, closing, loans := c.out, c.closing, c.loans
		if len(buf) == 0 && !closing {
			if c.retire {
				c.retire = false
				c.writing = false
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			<-c.wake
			continue
		}
		c.writes++
		c.out, c.loans = spare[:0], spareLoans[:0]
		spare, spareLoans = nil, nil // now owned by c; buf and loans become the next spares
		if closing {
			c.final = true
			c.out, c.loans = nil, nil
		}
		c.mu.Unlock()
		if closing {
			// Final flush, bounded: a peer that does not read cannot
			// hold the goroutine (and so the actor) forever.
			repay(loans)
			if len(buf) > 0 {
				tm := time.AfterFunc(time.Second, c.closeStream)
				_, _ = c.w.Write(buf)
				tm.Stop()
			}
			c.closeStream()
			close(c.wdone)
			c.taskDone()
			return
		}
		err := c.write(buf)
		repay(loans)
		if err != nil {
			c.setErr(err) // before closing: the reader then fails too
			c.closeStream()
			c.fr.Activate(func(t *dataspace.Turn) error {
				c.stopIn(t, err, false)
				return nil
			})
		}
		clear(loans)
		spareLoans = loans
		if cap(buf) <= 1<<20 {
			spare = buf
		}
	}
}

// lingerCheck runs every writerLinger while writer gen runs: if it wrote
// nothing since the last check, it is told to end.
func (c *Conn) lingerCheck(gen uint64) {
	c.mu.Lock()
	if c.writerGen != gen || !c.writing {
		c.mu.Unlock()
		return
	}
	idle := c.writes == c.seenWrites
	c.seenWrites = c.writes
	c.retire = idle
	c.mu.Unlock()
	if idle {
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	}
	c.mu.Lock()
	if c.writerGen == gen && c.writing {
		c.lingerT.Reset(writerLinger)
	}
	c.mu.Unlock()
}

// stopWriting makes the writer write what is left and close the stream
// when the relay's context ends without the facet's stop action having
// run (the actor crashed).
func (c *Conn) stopWriting() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.kick()
}

func repay(loans []loan) {
	for _, l := range loans {
		l.acct.Repay(l.n)
	}
}

// writeChunk is the most the writer hands a stream without a write
// deadline in one call, so that its watchdog sees progress.
const writeChunk = 256 << 10

// write writes buf, disconnecting a peer that reads nothing for
// WriteTimeout: a slow reader is waited for as long as it makes progress.
// Streams with write deadlines (sockets, pipes) report partial progress;
// others are written in chunks, each under a watchdog that closes the
// stream.
func (c *Conn) write(buf []byte) error {
	if !c.probed { // the first write: find out what the stream supports
		c.probed = true
		if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Time{}) == nil {
			c.setDeadline = d.SetWriteDeadline
		}
	}
	if c.setDeadline != nil {
		return c.writeDeadlined(buf)
	}
	for len(buf) > 0 {
		n := min(len(buf), writeChunk)
		var fired atomic.Bool
		tm := time.AfterFunc(c.opts.WriteTimeout, func() { fired.Store(true); c.closeStream() })
		_, err := c.w.Write(buf[:n])
		tm.Stop()
		if fired.Load() {
			return c.slowPeer()
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

func (c *Conn) slowPeer() error {
	return fmt.Errorf("%w: it has read nothing for %v", ErrSlowPeer, c.opts.WriteTimeout)
}

// writeDeadlined is write for streams with write deadlines. Setting a
// deadline costs a runtime timer update, too much for every small write,
// so the deadline is moved only once a quarter of the timeout has passed
// since it was last set. A write that times out sooner than the full
// timeout after it began (its deadline was set earlier) is resumed with a
// fresh deadline, so the peer always gets the whole timeout.
func (c *Conn) writeDeadlined(buf []byte) error {
	timeout := c.opts.WriteTimeout
	begin := time.Now()
	for len(buf) > 0 {
		if now := time.Now(); now.Sub(c.deadlineSet) > timeout/4 {
			if err := c.setDeadline(now.Add(timeout)); err != nil {
				return err
			}
			c.deadlineSet = now
		}
		n, err := c.w.Write(buf)
		buf = buf[n:]
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return err
		case n > 0: // progress: the peer reads, however slowly
			begin, c.deadlineSet = time.Now(), time.Time{}
		case time.Since(begin) < timeout:
			c.deadlineSet = time.Time{}
		default:
			return c.slowPeer()
		}
	}
	return nil
}

// ---- inbound ----

// readLoop is the reader goroutine: it frames and decodes packets and
// handles each in one turn of the relay facet.
func (c *Conn) readLoop(ctx context.Context) error {
	defer c.taskDone()
	// The writer closes the stream when the facet ends, however it ends;
	// the reader, a linked task, ends after it.
	stop := context.AfterFunc(ctx, c.stopWriting)
	defer func() {
		if stop() { // not cancelled: this connection is over all the same
			c.stopWriting()
		}
		<-c.wdone
	}()
	f := newFramer(c.opts.MaxPacketSize, c.opts.MaxDepth, c.opts.MaxPacketValues)
	f.budget = c.opts.BufferBudget
	defer f.close()
	var evBuf []Event
	credit := c.opts.Credit
	pt := c.packetTimer()
	defer pt.stop()
	f.onWait = pt.hold
	// wait is flow control (§9): no reading while what the peer sent
	// earlier is still being handled downstream. A packet that arrives
	// late because we stopped reading is not the peer's fault: its timer
	// is held meanwhile.
	wait := func() error {
		if c.acct.Debt() <= credit {
			return nil
		}
		pt.hold()
		return c.acct.Wait(ctx, credit)
	}
	var first *time.Timer
	if d := c.opts.FirstEventTimeout; d > 0 {
		first = time.AfterFunc(d, func() {
			c.limitClose(protoErr(-1, ErrLimit, nil, "no event within %v of connecting", d))
		})
		defer first.Stop()
	}
	for {
		if wait() != nil {
			return ctx.Err()
		}
		n, rerr := f.readFrom(ctx, c.r)
		if n > 0 {
			for {
				raw, syn, off, err := f.next()
				if err == nil && raw == nil {
					break
				}
				var pkt Packet
				if evs, ok := fastTurnIf(evBuf[:0], raw, syn, c.opts.MaxDepth, c.opts.MaxPacketSize); ok && err == nil {
					pkt = Packet{Kind: TurnPacket, Events: evs}
					evBuf = evs
				} else if err == nil {
					var v preserves.Value
					v, err = decodePacket(raw, syn, off, c.opts.MaxDepth, c.opts.MaxPacketSize)
					if err == nil {
						pkt, err = ParsePacket(v)
						var pe *ProtocolError
						if errors.As(err, &pe) {
							pe.Offset = off
						}
					}
				}
				if err != nil {
					c.fr.Activate(func(t *dataspace.Turn) error {
						c.stopIn(t, err, true)
						return nil
					})
					return dataspace.ErrKeepFacet
				}
				if wait() != nil {
					return ctx.Err()
				}
				if first != nil && pkt.Kind == TurnPacket && len(pkt.Events) > 0 {
					first.Stop()
					first = nil
				}
				cost := eventCost(len(raw), pkt)
				alive := c.fr.ActivateAccount(c.acct, func(t *dataspace.Turn) error {
					t.SetEventCost(cost)
					c.handle(t, pkt, syn, off)
					return nil
				})
				// The events are not retained past their turn: reuse the
				// slice, without pinning the values.
				clear(evBuf)
				if cap(evBuf) > 4096 {
					evBuf = nil
				}
				if !alive || ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
		pt.track(f)
		if rerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var err error
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			} else if f.pending() {
				c.log.Debug().Msg("relay: input ended inside a packet")
			}
			c.fr.Activate(func(t *dataspace.Turn) error {
				c.stopIn(t, err, false)
				return nil
			})
			return dataspace.ErrKeepFacet
		}
	}
}

// eventCost is what each event a packet causes costs the connection's
// account: one unit, plus one per KiB of the packet per event, so that
// large messages are charged by size wherever they wait downstream.
func eventCost(size int, pkt Packet) int64 {
	return 1 + int64(size>>10)/int64(max(len(pkt.Events), 1))
}

// limitClose ends the connection from a timer: err becomes the
// connection's error, and closing the stream makes the reader stop the
// relay facet.
func (c *Conn) limitClose(err error) {
	c.setErr(err)
	c.closeStream()
}

// packetTimer enforces PacketTimeout: it runs from the first byte of a
// partial packet until the packet is complete. The reader re-arms it only
// when a different packet is pending, so a steady stream of complete
// packets costs no timer operations.
type packetTimer struct {
	c       *Conn
	d       time.Duration
	tm      *time.Timer
	pending atomic.Int64 // stream offset+1 of the partial packet timed, 0: none
}

func (c *Conn) packetTimer() *packetTimer {
	return &packetTimer{c: c, d: c.opts.PacketTimeout}
}

func (p *packetTimer) track(f *framer) {
	if p.d <= 0 {
		return
	}
	var off int64
	if f.pending() {
		off = f.base + int64(f.start) + 1
	}
	if p.pending.Load() == off {
		return
	}
	p.pending.Store(off)
	if off == 0 {
		p.tm.Stop()
		return
	}
	if p.tm == nil {
		p.tm = time.AfterFunc(p.d, p.fire)
	} else {
		p.tm.Reset(p.d)
	}
}

func (p *packetTimer) fire() {
	if off := p.pending.Load(); off != 0 {
		p.c.limitClose(protoErr(off-1, ErrLimit, nil, "packet incomplete after %v", p.d))
	}
}

// hold stops timing the pending packet: the relay is about to stop
// reading for its own reasons (flow control, the buffer budget). The next
// track after the wait times the packet afresh.
func (p *packetTimer) hold() {
	if p.pending.Swap(0) != 0 {
		p.tm.Stop()
	}
}

func (p *packetTimer) stop() {
	p.pending.Store(0)
	if p.tm != nil {
		p.tm.Stop()
	}
}

// handle processes one inbound packet in one turn (§15.7).
func (c *Conn) handle(t *dataspace.Turn, pkt Packet, syn Syntax, off int64) {
	if c.stopped {
		return
	}
	c.syntax = syn
	switch pkt.Kind {
	case TurnPacket:
		for i := range pkt.Events {
			if err := c.handleEvent(t, &pkt.Events[i]); err != nil {
				var pe *ProtocolError
				if errors.As(err, &pe) && pe.Offset < 0 {
					pe.Offset = off
				}
				c.stopIn(t, err, true)
				return
			}
		}
	case ErrorPacket:
		err := &PeerError{Message: pkt.Msg, Detail: preserves.Show(pkt.Detail)}
		c.stopIn(t, err, true)
	case ExtensionPacket:
		c.log.Debug().Str("packet", preserves.Show(pkt.Detail)).Msg("relay: ignoring extension packet")
	case NopPacket:
	}
}

func (c *Conn) handleEvent(t *dataspace.Turn, ev *Event) error {
	target := c.exported.byOid[ev.Oid]
	if target == nil {
		if ev.Oid >= c.nextOid || ev.Oid < 0 {
			return protoErr(-1, ErrProtocol, nil, "event for oid %d, never issued", ev.Oid)
		}
		c.log.Debug().Int64("oid", ev.Oid).Msg("relay: event for a released oid ignored")
		return nil
	}
	switch ev.Kind {
	case EvAssert:
		if _, dup := c.inbound[ev.Handle]; dup {
			return protoErr(-1, ErrProtocol, nil, "duplicate remote handle %d", ev.Handle)
		}
		v, pins, err := c.decodeValue(t, ev.Value, nil)
		if err != nil {
			return err
		}
		h := t.Assert(target.ref, v)
		if h == 0 {
			c.release(pins) // rejected by attenuation
			return nil
		}
		target.count++
		initial := ev.Oid == 0 && c.opts.InitialRef != nil
		if initial {
			if q := c.opts.InitialQuota; q != nil {
				if !q.take() {
					// Not counted: the connection ends, retracting it.
					c.inbound[ev.Handle] = inRec{local: h, pins: append(pins, target)}
					return protoErr(-1, ErrLimit, nil, "the server holds %d assertions at the initial object from all connections; no more", q.limit)
				}
				c.quotaHeld.Add(1)
			}
			c.initialAsserts++
		}
		c.inbound[ev.Handle] = inRec{local: h, pins: append(pins, target), initial: initial}
		if m := c.opts.MaxInitialAssertions; initial && m > 0 && c.initialAsserts > m {
			return protoErr(-1, ErrLimit, nil, "more than %d assertions at the initial object", m)
		}
	case EvRetract:
		rec, ok := c.inbound[ev.Handle]
		if !ok {
			return nil // e.g. after an attenuation rejection
		}
		delete(c.inbound, ev.Handle)
		if rec.initial {
			c.initialAsserts--
			if q := c.opts.InitialQuota; q != nil {
				c.quotaHeld.Add(-1)
				q.give(1)
			}
		}
		t.Retract(rec.local)
		c.release(rec.pins)
	case EvMessage:
		v, pins, err := c.decodeValue(t, ev.Value, nil)
		if err != nil {
			return err
		}
		for _, s := range pins {
			if s.count == 1 {
				c.release(pins)
				return protoErr(-1, ErrProtocol, nil, "cannot receive transient reference")
			}
		}
		t.Message(target.ref, v)
		c.release(pins)
	case EvSync:
		e, _ := preserves.Unwrap(ev.Value).(*preserves.Embedded)
		w, ok := e.Payload.(preserves.Value)
		if !ok {
			return protoErr(-1, ErrProtocol, nil, "sync peer is not a WireRef")
		}
		peer, ps, err := c.decodeRef(t, w)
		if err != nil {
			return err
		}
		target.count++
		k := t.Create(&syncIn{c: c, peer: peer, pins: []*symbol{target, ps}})
		t.SyncPeer(target.ref, k)
	}
	return nil
}

// syncIn answers an inbound Sync once the local target has synced: the
// reply goes to the peer's continuation, and the pins are dropped.
type syncIn struct {
	dataspace.BaseEntity
	c    *Conn
	peer *dataspace.Ref
	pins []*symbol
}

func (k *syncIn) Message(t *dataspace.Turn, _ preserves.Value) error {
	if k.pins == nil || k.c.stopped {
		return nil
	}
	t.Message(k.peer, preserves.Bool(true))
	k.c.release(k.pins)
	k.pins = nil
	return nil
}
