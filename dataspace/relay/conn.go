package relay

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/idleread"
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
	// PeerMaxPacketSize and PeerMaxPacketValues are the peer's inbound
	// limits (its MaxPacketSize and MaxPacketValues): a turn whose events
	// would exceed them is sent as several packets, and an event that
	// exceeds them alone is refused (Conn.Refused). 0 means this side's
	// defaults, DefaultMaxPacketSize and DefaultMaxPacketValues, which are
	// what every peer of ours applies.
	PeerMaxPacketSize, PeerMaxPacketValues int
	// MaxOutbound bounds the bytes queued for the peer; past it the
	// connection is closed with ErrOutboundFull. Flow control keeps the
	// queue far below it whenever its producers are accounted (other
	// relays, Activate, ActivatePaced); it is the backstop against local
	// producers that are not (ActivateNow). 0 means 4× MaxPacketSize.
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
	// CloseTimeout bounds how long the relay, once closing, starts writing
	// what is still queued; past it the rest is dropped between packets and
	// counted (Conn.Unsent). 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// PacketTimeout bounds the time from an inbound packet's first byte
	// to its last, so a peer cannot pin a partial packet's buffer (up to
	// MaxPacketSize) forever; past it the connection is closed with
	// ErrLimit. Only the time the relay spends waiting for the packet's
	// bytes counts, not the time it takes to handle earlier packets or
	// holds off reading (flow control). 0 means DefaultPacketTimeout;
	// negative, no limit.
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
	// LogWith, if set, adds fields (the peer, say) to Logger. It is
	// applied when the connection first logs: a zerolog context costs
	// 512 bytes, which a thousand idle connections that never log need
	// not hold (issue 28, memory per idle session).
	LogWith func(zerolog.Context) zerolog.Context
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
	// DefaultCloseTimeout is how long a closing relay keeps writing what
	// it had accepted.
	DefaultCloseTimeout = 5 * time.Second
	// DefaultPacketTimeout lets a 16 MiB packet arrive at 300 KB/s.
	DefaultPacketTimeout = time.Minute
)

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
// the peer's behalf, plus a reader task (a resumable linked task of that
// facet) and a writer goroutine. Neither holds a goroutine while the
// connection is idle: the writer ends after writerLinger, and the reader
// of a socket or pipe idle for 0.5–1 s parks its stream with the shared
// poller (idleread.Waiter). The relay owns its stream: close it with Close or by
// stopping the facet. A stream closed behind its back while parked is
// noticed by the poller's sweep, within seconds, not at once.
//
// Everything but the outbound byte queue is owned by the host actor and
// touched only in its turns.
type Conn struct {
	opts    Options
	log     zerolog.Logger // built by logger, from opts
	logOnce sync.Once
	r       io.Reader
	w       io.Writer
	cl      io.Closer

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
	ww                            writerWake // wakes the writer after a burst (enqueueRaw)
	wakeDeferred                  bool       // ww is due: no need to wake the writer now
	spare                         []byte     // the last written buffer, reused for the next output
	spareL                        []loan
	final                         bool          // the final write has begun: no writer starts again
	wdone                         chan struct{} // closed once the final write has closed the stream

	quotaHeld atomic.Int64 // of Options.InitialQuota, returned when the tasks end

	unsentPackets, unsentBytes atomic.Int64 // dropped at close (Unsent)
	refused                    atomic.Int64 // events too large for the peer (Refused)

	// Owned by the reader task.
	rd *reader
	// parker parks the idle stream (reader.park); closeStream unparks it.
	parker atomic.Pointer[idleread.Waiter]

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
	if opts.PeerMaxPacketSize <= 0 {
		opts.PeerMaxPacketSize = DefaultMaxPacketSize
	}
	if opts.PeerMaxPacketValues <= 0 {
		opts.PeerMaxPacketValues = DefaultMaxPacketValues
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = DefaultCloseTimeout
	}
	if opts.PacketTimeout == 0 {
		opts.PacketTimeout = DefaultPacketTimeout
	}
	c := &Conn{
		opts:     opts,
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
	c.ww.c = c
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
		t.ResumableTask("relay-reader", c.readLoop)
		return nil
	})
	return c, c.peer
}

// ErrClosed: the connection ended before the operation completed.
var ErrClosed = errors.New("relay: connection closed")

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

// logger returns the connection's logger (Options.Logger, with
// Options.LogWith's fields), built on first use.
func (c *Conn) logger() *zerolog.Logger {
	c.logOnce.Do(func() {
		c.log = c.opts.Logger
		if c.opts.LogWith != nil {
			c.log = c.opts.LogWith(c.log.With()).Logger()
		}
	})
	return &c.log
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
	c.fr.ActivateNow(func(t *dataspace.Turn) error {
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
		c.logger().Warn().Err(c.Err()).Msg("relay connection error") // the first error is the cause
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

// closeStream closes the stream once. A parked reader is resumed after
// the close (the close took the stream out of the poller's set): it
// finds the stream closed, and ends.
func (c *Conn) closeStream() {
	c.closed.Do(func() {
		if c.cl != nil {
			_ = c.cl.Close()
		}
		if w := c.parker.Load(); w != nil {
			w.Unpark()
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
