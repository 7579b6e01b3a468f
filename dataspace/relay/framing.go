package relay

// Framing. Packets on a byte stream are concatenated Preserves values, each
// in binary or text syntax, chosen per packet by its first byte (≥ 0x80:
// binary). The framer finds where each packet ends with a small resumable
// scanner per syntax, so that
//
//   - bytes arriving in any chunking cost linear time in total (the scanner
//     resumes where it stopped instead of re-parsing the pending packet);
//   - a packet beyond the size limit, or nested beyond the depth limit, is
//     refused as soon as the limit is passed, without buffering the rest;
//   - the authoritative decoders (preserves.DecodeBinary and
//     preserves.ParseTextOptions) then run exactly once per packet over its
//     exact bytes, so syntax switches between packets need no decoder state.
//
// The scanners only need to find the end of a well-formed value; anything
// they let through that is malformed is rejected by the decoder.

import (
	"context"
	"io"

	"github.com/syndicate-go/syndicate/dataspace"
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
	base  int64 // stream offset of buf[0]

	maxSize, maxDepth, maxValues int
	values                       int // values begun in the pending packet

	active bool   // a packet has begun at start
	syn    Syntax // its syntax
	scan   int    // next byte to scan
	open   int    // open compounds
	need   int    // complete top-level values still needed
	// text scanner state
	mode  textMode
	quote byte
	esc   bool
	// binary scanner: bytes of an atom body still to skip
	skip int

	readSize int // current read size (readFrom)

	budget   *BufferBudget // shared by the connections of a process
	onWait   func()        // called before waiting for the budget
	reserved int64         // bytes of budget held for buf beyond budget.free

	err error // sticky
}

type textMode uint8

const (
	tmNormal  textMode = iota
	tmString           // inside "…", |…|, #"…", #x"…" (quote holds the closer)
	tmBase64           // inside #[…]
	tmComment          // to end of line
	tmToken            // bare token (number, symbol, #t, …)
)

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
	return &framer{maxSize: maxSize, maxDepth: maxDepth, maxValues: maxValues}
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
	if f.budget.used.Debt() > limit && f.onWait != nil {
		f.onWait()
	}
	if err := f.budget.used.Wait(ctx, limit); err != nil {
		return err
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
		f.open, f.need, f.skip, f.values = 0, 1, 0, 0
		f.mode, f.esc = tmNormal, false
		f.syn = Text
		if f.buf[f.start] >= 0x80 {
			f.syn = Binary
		}
	}
	var done bool
	if f.syn == Binary {
		done, err = f.scanBinary()
	} else {
		done, err = f.scanText()
	}
	off = f.base + int64(f.start)
	if err == nil && f.values > f.maxValues {
		// Checked once per scan: the scanners count in their loops
		// only, and a scan covers at most one read's worth of input.
		err = protoErr(off, ErrLimit, nil, "packet holds more than %d values", f.maxValues)
	}
	if err != nil {
		f.err = err
		return nil, 0, off, err
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
	f.start = f.scan
	f.active = false
	return raw, syn, off, nil
}

func (f *framer) depthErr() error {
	return protoErr(f.base+int64(f.start), ErrLimit, nil, "packet nested deeper than %d", f.maxDepth)
}

func (f *framer) syntaxErr(msg string) error {
	return protoErr(f.base+int64(f.scan), ErrProtocol, nil, "%s", msg)
}

// value ends one value; at top level that may complete the packet.
func (f *framer) valueEnd() bool {
	if f.open == 0 {
		f.need--
		return f.need == 0
	}
	return false
}

// scanBinary advances over binary syntax; done when the packet's value is
// complete.
func (f *framer) scanBinary() (bool, error) {
	b := f.buf
	for f.scan < len(b) {
		if f.skip > 0 {
			n := min(f.skip, len(b)-f.scan)
			f.scan += n
			f.skip -= n
			if f.skip > 0 {
				return false, nil
			}
			if f.valueEnd() {
				return true, nil
			}
			continue
		}
		if f.open > 0 {
			f.scanInside()
			if f.scan >= len(b) {
				break
			}
		}
		tag := b[f.scan]
		switch {
		case tag == 0x80 || tag == 0x81:
			f.scan++
			f.values++
			if f.valueEnd() {
				return true, nil
			}
		case tag == 0x84:
			if f.open == 0 {
				return false, f.syntaxErr("unexpected end marker")
			}
			f.scan++
			f.open--
			if f.valueEnd() {
				return true, nil
			}
		case tag == 0x85:
			f.scan++
			if f.open == 0 {
				f.need++
			}
		case tag == 0x86:
			f.scan++
		case tag == 0x87 || (tag >= 0xB0 && tag <= 0xB3):
			n, w, ok, short := varint(b[f.scan+1:])
			if short {
				if len(b)-f.scan > 11 {
					return false, f.syntaxErr("bad length")
				}
				return false, nil
			}
			if !ok || n > uint64(f.maxSize) {
				return false, protoErr(f.base+int64(f.start), ErrLimit, nil, "atom longer than %d bytes", f.maxSize)
			}
			f.scan += 1 + w
			f.values++
			if n == 0 {
				if f.valueEnd() {
					return true, nil
				}
				continue
			}
			f.skip = int(n)
		case tag >= 0xB4 && tag <= 0xB7:
			f.scan++
			f.values++
			f.open++
			if f.open > f.maxDepth {
				return false, f.depthErr()
			}
		default:
			return false, f.syntaxErr("invalid binary tag")
		}
	}
	return false, nil
}

// scanInside is scanBinary's fast path, in locals, for the bulk of a
// packet: inside a compound (so no top-level value can end), it steps over
// atoms with one-byte lengths whose bodies are buffered, simple atoms,
// opens within the depth limit and closes that leave a compound open. It
// stops at anything else, which the general loop then handles, limits and
// errors included.
func (f *framer) scanInside() {
	b := f.buf
	p, open, values := f.scan, f.open, f.values
	for p+1 < len(b) {
		tag := b[p]
		switch {
		case tag >= 0xB0 && tag <= 0xB3:
			n := int(b[p+1])
			if n >= 0x80 || n > f.maxSize || p+2+n > len(b) {
				f.scan, f.open, f.values = p, open, values
				return
			}
			p += 2 + n
			values++
		case tag >= 0xB4 && tag <= 0xB7 && open < f.maxDepth:
			open++
			p++
			values++
		case tag == 0x84 && open > 1:
			open--
			p++
		case tag == 0x80 || tag == 0x81:
			p++
			values++
		case tag == 0x86:
			p++
		default:
			f.scan, f.open, f.values = p, open, values
			return
		}
	}
	f.scan, f.open, f.values = p, open, values
}

// varint reads a base-128 little-endian length. short: more bytes needed.
func varint(b []byte) (n uint64, width int, ok, short bool) {
	var shift uint
	for i, c := range b {
		if i >= 10 {
			return 0, 0, false, false
		}
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return n, i + 1, true, false
		}
		shift += 7
	}
	return 0, 0, false, true
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '[', ']', '<', '>', '{', '}', '"', ';', '@', '|':
		return true
	}
	return c == '\f' || c == '\v'
}

// scanText advances over text syntax; done when the packet's value is
// complete. A bare atom at top level completes only at the next delimiter,
// which is why text packets are written with a trailing newline.
func (f *framer) scanText() (bool, error) {
	b := f.buf
	for f.scan < len(b) {
		c := b[f.scan]
		switch f.mode {
		case tmString:
			f.scan++
			switch {
			case f.esc:
				f.esc = false
			case c == '\\' && f.quote != ']':
				f.esc = true
			case c == f.quote:
				f.mode = tmNormal
				if f.valueEnd() {
					return true, nil
				}
			}
			continue
		case tmBase64:
			f.scan++
			if c == ']' {
				f.mode = tmNormal
				if f.valueEnd() {
					return true, nil
				}
			}
			continue
		case tmComment:
			f.scan++
			if c == '\n' || c == '\r' {
				f.mode = tmNormal
			}
			continue
		case tmToken:
			if isDelim(c) {
				f.mode = tmNormal
				if f.valueEnd() {
					return true, nil
				}
				continue // re-examine c in normal mode
			}
			f.scan++
			continue
		}
		// tmNormal
		switch c {
		case ' ', '\t', '\n', '\r', ',', '\f', '\v':
			f.scan++
		case ';':
			f.scan++
			f.mode = tmComment
		case '"', '|':
			f.scan++
			f.values++
			f.mode, f.quote = tmString, c
		case '[', '<', '{':
			f.scan++
			f.values++
			f.open++
			if f.open > f.maxDepth {
				return false, f.depthErr()
			}
		case ']', '>', '}':
			if f.open == 0 {
				return false, f.syntaxErr("unbalanced closing bracket")
			}
			f.scan++
			f.open--
			if f.valueEnd() {
				return true, nil
			}
		case '@':
			f.scan++
			if f.open == 0 {
				f.need++
			}
		case '#':
			if f.scan+1 >= len(b) {
				return false, nil
			}
			switch d := b[f.scan+1]; d {
			case ':':
				f.scan += 2
			case '"':
				f.scan += 2
				f.values++
				f.mode, f.quote = tmString, '"'
			case '[':
				f.scan += 2
				f.values++
				f.mode = tmBase64
			case '{':
				f.scan += 2
				f.values++
				f.open++
				if f.open > f.maxDepth {
					return false, f.depthErr()
				}
			case ' ', '\t', '\n', '\r', '!':
				f.scan += 2
				f.mode = tmComment
				if d == '\n' || d == '\r' {
					f.mode = tmNormal
				}
			case 'x':
				// #x"hex" and #xd"hex-double" are strings; anything else
				// a token.
				if f.scan+2 >= len(b) {
					return false, nil
				}
				f.values++
				if b[f.scan+2] == '"' {
					f.scan += 3
					f.mode, f.quote = tmString, '"'
					break
				}
				if b[f.scan+2] == 'd' {
					if f.scan+3 >= len(b) {
						f.values-- // counted again when the input arrives
						return false, nil
					}
					if b[f.scan+3] == '"' {
						f.scan += 4
						f.mode, f.quote = tmString, '"'
						break
					}
				}
				f.scan += 2
				f.mode = tmToken
			default:
				f.scan++
				f.values++
				f.mode = tmToken
			}
		default:
			f.scan++
			f.values++
			f.mode = tmToken
		}
	}
	return false, nil
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
