package relay

// Framing. Packets on a byte stream are concatenated Preserves values, each
// in binary or text syntax, chosen per packet by its first byte (≥ 0x80:
// binary). The framer finds where each packet ends with preserves.Scanner,
// resumable, so that
//
//   - bytes arriving in any chunking cost linear time in total (the scanner
//     resumes where it stopped instead of re-parsing the pending packet);
//   - a packet beyond the size limit, nested beyond the depth limit or
//     holding too many values is refused as soon as the limit is passed,
//     without buffering the rest;
//   - the authoritative decoders (preserves.DecodeBinary and
//     preserves.ParseTextOptions) then run exactly once per packet over its
//     exact bytes, so syntax switches between packets need no decoder state.

import (
	"context"
	"errors"
	"io"
	"math/bits"
	"sync"
	"syscall"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/idleread"
	"github.com/syndicate-go/syndicate/preserves"
)

// Default limits.
const (
	DefaultMaxPacketSize = 16 << 20
	DefaultMaxDepth      = 128
	// DefaultMaxPacketValues bounds the values (atoms and compounds, at
	// every depth) in one packet. Decoding costs about 16–50 bytes per
	// value whatever its encoded size, so without it 15 MiB of one-byte
	// #f items became about 1 GB of server memory; with it one packet
	// decodes into at most its size plus about 13 MB.
	DefaultMaxPacketValues = 1 << 18
)

// framer splits an inbound byte stream into packets.
type framer struct {
	buf   []byte
	start int   // start of the pending packet (or of skipped whitespace)
	last  int   // start of the packet next returned last
	base  int64 // stream offset of buf[0]

	maxSize int

	active bool              // a packet has begun at start
	syn    Syntax            // its syntax
	scan   int               // next byte to scan
	sc     preserves.Scanner // where the pending packet ends

	readSize int // current read size (readFrom)
	// idle: with nothing pending, readFrom waits for input for a while
	// (idleread.Idler: one to two LingerTicks), then returns errWouldBlock
	// with the stream's RawConn in idleRC, so that the reader can park it
	// (idleread.Waiter) and give up its goroutine.
	idle   bool
	idler  *idleread.Idler
	idleRC syscall.RawConn

	budget   *BufferBudget // shared by the connections of a process
	onWait   func()        // called before waiting for the budget
	onResume func()        // called after that wait
	reserved int64         // bytes of budget held for buf beyond budget.free

	err error // sticky
}

func newFramer(maxSize, maxDepth, maxValues int) *framer {
	if maxSize <= 0 {
		maxSize = DefaultMaxPacketSize
	}
	if maxValues <= 0 {
		maxValues = DefaultMaxPacketValues
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	f := &framer{maxSize: maxSize}
	f.sc = preserves.Scanner{MaxDepth: maxDepth, MaxLength: maxSize, MaxValues: maxValues}
	return f
}

// compact drops consumed bytes once they make up much of the buffer.
func (f *framer) compact() {
	if f.start > 0 && (f.start >= len(f.buf)/2 || f.start > 64<<10) {
		n := copy(f.buf, f.buf[f.start:])
		f.buf = f.buf[:n]
		f.base += int64(f.start)
		f.scan -= f.start
		f.start = 0
	}
}

// Read sizes: an idle connection holds minRead bytes; a busy one reads up
// to maxRead at a time (the read size doubles whenever a read fills it).
const (
	minRead = 2 << 10
	maxRead = 64 << 10
)

// BufferBudget bounds the memory the connections sharing it spend on
// buffering packets that have not fully arrived. Each connection may hold
// Free bytes of its own; beyond that its buffer grows only by reserving
// from the shared Limit, and its reader waits (reading nothing more) until
// enough is free. Without it, 20 connections each sending 10 MiB of a 16
// MiB packet held 550 MB; with it they hold at most Limit beyond their
// free allowance, and each is cut off by the packet timeout, returning its
// reservation.
type BufferBudget struct {
	Free, Limit int64
	used        *dataspace.Account // bytes reserved; Wait is the queue
}

// NewBufferBudget returns a budget of limit bytes shared beyond free bytes
// per connection. limit must be at least MaxPacketSize plus 64 KiB for
// the largest packets to get through.
func NewBufferBudget(free, limit int64) *BufferBudget {
	return &BufferBudget{Free: free, Limit: limit, used: dataspace.NewAccount()}
}

// DefaultBufferBudget is the budget of connections whose Options name
// none: 1 MiB per connection, 32 MiB shared (two packets of the maximum
// size arriving at once).
var DefaultBufferBudget = NewBufferBudget(1<<20, 32<<20)

// Used returns the bytes reserved from the shared part.
func (b *BufferBudget) Used() int64 { return b.used.Debt() }

// reserve makes room for a buffer of capacity nc, waiting for the shared
// budget if needed.
func (f *framer) reserve(ctx context.Context, nc int) error {
	if f.budget == nil {
		return nil
	}
	need := max(int64(nc)-f.budget.Free, 0) - f.reserved
	if need <= 0 {
		return nil
	}
	limit := max(f.budget.Limit-need, 0)
	waits := f.budget.used.Debt() > limit
	if waits && f.onWait != nil {
		f.onWait()
	}
	if err := f.budget.used.Wait(ctx, limit); err != nil {
		return err
	}
	if waits && f.onResume != nil {
		f.onResume()
	}
	f.budget.used.Borrow(need)
	f.reserved += need
	return nil
}

// release returns what the buffer no longer needs of its reservation.
func (f *framer) release() {
	if f.budget == nil {
		return
	}
	keep := max(int64(cap(f.buf))-f.budget.Free, 0)
	if f.reserved > keep {
		f.budget.used.Repay(f.reserved - keep)
		f.reserved = keep
	}
}

// close returns the whole reservation (the connection has ended).
func (f *framer) close() {
	if f.idler != nil {
		f.idler.Close()
	}
	f.buf = nil
	f.release()
}

// readFrom reads once from r straight into the buffer (no intermediate
// copy), growing it as traffic demands within the budget.
func (f *framer) readFrom(ctx context.Context, r io.Reader) (int, error) {
	f.compact()
	if f.readSize == 0 {
		f.readSize = minRead
	}
	if len(f.buf) == 0 && f.reserved == 0 && cap(f.buf) <= maxRead && (f.budget == nil || f.budget.Free >= maxRead) {
		if sc, ok := r.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				return f.readIdle(rc, r)
			}
		}
	}
	switch {
	case (cap(f.buf) > 1<<20 || f.reserved > 0) && len(f.buf) <= maxRead:
		// A large packet has been handled: do not keep its buffer, nor
		// its share of the budget.
		nb := make([]byte, len(f.buf), len(f.buf)+f.readSize)
		copy(nb, f.buf)
		f.buf = nb
		f.release()
	case cap(f.buf)-len(f.buf) < f.readSize:
		// Grow geometrically: a large packet arriving in reads of 64 KiB
		// would otherwise be copied once per read (quadratic in its size,
		// and a heap full of discarded copies).
		nc := max(len(f.buf)+f.readSize, min(2*cap(f.buf), f.maxSize+maxRead))
		if err := f.reserve(ctx, nc); err != nil {
			return 0, err
		}
		nb := make([]byte, len(f.buf), nc)
		copy(nb, f.buf)
		f.buf = nb
	}
	free := cap(f.buf) - len(f.buf)
	n, err := r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf = f.buf[:len(f.buf)+n]
	if n == free && f.readSize < maxRead {
		f.readSize *= 2
	}
	return n, err
}

// readBufs are the pools of read buffers, one per read size (minRead,
// 2×minRead, … maxRead), borrowed by connections with nothing pending.
var readBufs [6]sync.Pool

func init() {
	for i := range readBufs {
		size := minRead << i
		readBufs[i].New = func() any { b := make([]byte, size); return &b }
	}
}

// readPool returns the pool of buffers of size (a power of two from
// minRead to maxRead).
func readPool(size int) *sync.Pool {
	return &readBufs[bits.Len(uint(size/minRead))-1]
}

// readIdle reads with a buffer borrowed from readBufs only while input is
// there: a connection with nothing pending waits in the runtime's poller
// holding no buffer of its own (issue 28, memory per idle session: a
// thousand idle peers held 3 MB of read buffers). A busy connection keeps
// its read size, so it reads as much per call as before; the buffer it
// borrowed goes back to the pool and, on the same processor, comes
// straight out again for the next read. The bytes read stay in the buffer
// while they are handled; the next readFrom finds it empty again. Handled
// packets are dead by then: compact overwrites them in place already, so
// nothing decoded aliases the buffer. Read deadlines apply as for a plain
// Read. A stream whose SyscallConn fails (one that still holds bytes of
// its own, say) is read the plain way.
func (f *framer) readIdle(rc syscall.RawConn, src io.Reader) (int, error) {
	if c := cap(f.buf); c > 0 {
		if c >= minRead && c <= maxRead && c&(c-1) == 0 {
			b := f.buf[:c]
			readPool(c).Put(&b)
		}
		f.buf = nil
	}
	pool := readPool(f.readSize)
	var bp *[]byte
	var n int
	var err error
	if f.idle && f.idler == nil {
		if d, ok := src.(idleread.Deadliner); ok {
			f.idler = idleread.NewIdler(d)
		} else {
			f.idle = false
		}
	}
	if f.idle {
		f.idler.Enter()
		bp, n, err = idleread.Read(rc, pool)
		if idleread.Lingered(f.idler.Leave(), err) {
			f.idleRC = rc
			return 0, errWouldBlock
		}
	} else {
		bp, n, err = idleread.Read(rc, pool)
	}
	if n > 0 {
		f.buf = (*bp)[:n]
		if n == f.readSize && f.readSize < maxRead {
			f.readSize *= 2
		}
		return n, nil
	}
	if bp != nil {
		pool.Put(bp)
	}
	return 0, err
}

// errWouldBlock: an idle framer's stream has nothing to read (framer.idle).
var errWouldBlock = errors.New("relay: nothing to read")

// pending reports whether a partial packet (not just whitespace) is buffered.
func (f *framer) pending() bool { return f.active }

// next returns the next complete packet's bytes, its syntax and its stream
// offset. raw == nil with err == nil means more input is needed. Errors are
// sticky *ProtocolError values.
func (f *framer) next() (raw []byte, syn Syntax, off int64, err error) {
	if f.err != nil {
		return nil, 0, 0, f.err
	}
	if !f.active {
		// Skip inter-packet whitespace (text packets end with a newline).
		for f.start < len(f.buf) {
			c := f.buf[f.start]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' {
				f.start++
				continue
			}
			break
		}
		if f.start == len(f.buf) {
			return nil, 0, 0, nil
		}
		f.active = true
		f.scan = f.start
		f.sc.Begin(f.buf[f.start])
		f.syn = Text
		if f.sc.Binary() {
			f.syn = Binary
		}
	}
	var done bool
	f.scan, done, err = f.sc.Scan(f.buf, f.scan)
	off = f.base + int64(f.start)
	if err != nil {
		f.err = f.scanErr(off, err)
		return nil, 0, off, f.err
	}
	if !done {
		if f.scan-f.start > f.maxSize {
			f.err = protoErr(off, ErrLimit, nil, "packet longer than %d bytes", f.maxSize)
			return nil, 0, off, f.err
		}
		return nil, 0, 0, nil
	}
	if f.scan-f.start > f.maxSize {
		f.err = protoErr(off, ErrLimit, nil, "packet longer than %d bytes", f.maxSize)
		return nil, 0, off, f.err
	}
	raw = f.buf[f.start:f.scan]
	syn = f.syn
	f.last = f.start
	f.start = f.scan
	f.active = false
	return raw, syn, off, nil
}

// unread gives back raw, the packet next just returned, so that the
// next call returns it again (scanned anew).
func (f *framer) unread(raw []byte) {
	f.start -= len(raw)
	f.scan = f.start
}

// scanErr makes a scanner's error a connection error: a limit at the
// packet's offset, a syntax error at the offending byte's.
func (f *framer) scanErr(off int64, err error) error {
	var pe *preserves.Error
	if !errors.As(err, &pe) {
		return protoErr(off, ErrProtocol, err, "unscannable packet")
	}
	if errors.Is(err, preserves.ErrLimit) {
		return protoErr(off, ErrLimit, nil, "packet %s", pe.Msg)
	}
	return protoErr(f.base+int64(pe.Pos.Offset), ErrProtocol, nil, "%s", pe.Msg)
}

// decodePacket decodes one framed packet's bytes. Embedded payloads stay
// plain Values (the WireRefs); the membrane interprets them later, in the
// relay's turn.
func decodePacket(raw []byte, syn Syntax, off int64, maxDepth, maxSize int) (preserves.Value, error) {
	var v preserves.Value
	var err error
	if syn == Binary {
		v, err = preserves.DecodeBinary(raw, preserves.DecodeOptions{MaxDepth: maxDepth, MaxLength: maxSize})
	} else {
		v, err = preserves.ParseTextOptions(raw, preserves.TextOptions{MaxDepth: maxDepth})
	}
	if err != nil {
		return nil, protoErr(off, ErrProtocol, err, "undecodable %s packet", syn)
	}
	return v, nil
}
