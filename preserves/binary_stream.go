package preserves

// Incremental binary decoding. A Decoder accumulates bytes across Write calls
// and hands out each value once all of its bytes have arrived.
//
// Re-running the full decoder on every Write would be quadratic when a large
// value trickles in byte by byte, so a cheap resumable scanner first finds
// where the pending value ends. Its state is a few integers: the scan
// position, the number of open compounds, and how many complete values are
// still needed at top level (an 85 annotation at top level needs one more,
// since the annotation and the annotated value are both values), plus counts
// that size the decoder's slabs. Only when the
// scanner reaches the end of a value, or meets something malformed, does the
// full decoder run over exactly those bytes; it is authoritative for every
// error.

import (
	"errors"
	"io"
)

// Decoder decodes a stream of binary values delivered in arbitrary pieces.
// It is not safe for concurrent use.
type Decoder struct {
	d    binDecoder
	buf  []byte
	off  int   // start of the pending value in buf
	base int64 // stream offset of buf[0]
	err  error // sticky syntax or limit error

	scan extentScanner // state for the pending value
}

// NewDecoder returns a Decoder with the given options.
func NewDecoder(opts DecodeOptions) *Decoder {
	dec := &Decoder{}
	dec.d.init(opts)
	dec.scan.reset(0)
	return dec
}

// Write appends p to the pending input. It never fails and does not retain p.
// After a syntax or limit error the input is discarded, since the stream
// cannot be resynchronised.
func (dec *Decoder) Write(p []byte) {
	if dec.err != nil {
		return
	}
	dec.compact()
	dec.buf = append(dec.buf, p...)
}

// Buffered reports how many bytes are waiting: zero means the stream is at a
// value boundary.
func (dec *Decoder) Buffered() int { return len(dec.buf) - dec.off }

// Offset returns the stream offset of the next undecoded byte.
func (dec *Decoder) Offset() int64 { return dec.base + int64(dec.off) }

// Next returns the next complete value. When the buffered bytes do not yet
// hold a complete value it returns an *Error of class ErrUnexpectedEOF:
// write more bytes and call Next again. A syntax or limit error is final:
// every later call returns it again.
func (dec *Decoder) Next() (Value, error) {
	if dec.err != nil {
		return nil, dec.err
	}
	if dec.off == len(dec.buf) {
		return nil, dec.needMore()
	}
	end, bad := dec.scan.scan(dec.buf, dec.d.maxDepth, dec.d.maxLength)
	if end < 0 && !bad {
		if dec.d.maxLength < len(dec.buf)-dec.off {
			dec.err = &Error{Pos: Pos{Offset: int(dec.Offset())}, Msg: "value longer than MaxLength", Class: ErrLimit}
			return nil, dec.err
		}
		return nil, dec.needMore()
	}
	if bad {
		end = len(dec.buf)
	}
	if end-dec.off > dec.d.maxLength {
		dec.err = &Error{Pos: Pos{Offset: int(dec.Offset())}, Msg: "value longer than MaxLength", Class: ErrLimit}
		return nil, dec.err
	}
	d := &dec.d
	d.buf = dec.buf[:end]
	d.pos = dec.off
	d.base = dec.base
	d.dropping = 0
	d.resetSlabs()
	if !bad {
		sc := &dec.scan
		d.hintItems, d.hintRecs, d.hintHdrs, d.hintInts, d.hintStrs = sc.items-sc.recs, sc.recs, sc.hdrs, sc.ints, sc.strs
	}
	v, err := d.value(0)
	d.buf = nil
	d.resetSlabs() // let go of the value's chunks and scratch references
	if err != nil {
		if errors.Is(err, ErrUnexpectedEOF) {
			// Only possible after the scanner gave up early on input it
			// could not judge; wait for more bytes and let the full
			// decoder decide again.
			dec.resetScan()
			return nil, err
		}
		dec.err = err
		return nil, err
	}
	if d.pos != end {
		// The scanner's idea of the value's extent disagrees with the
		// decoder's; report rather than silently desynchronise.
		dec.err = d.errAt(ErrSyntax, d.pos, "malformed value")
		return nil, dec.err
	}
	dec.off = end
	dec.resetScan()
	return v, nil
}

// End tells the decoder that no more bytes will arrive. It returns nil when
// the stream ended at a value boundary; otherwise the error the whole-buffer
// decoder reports for the pending bytes: a syntax or limit error if they are
// malformed before their end, else an error of class ErrUnexpectedEOF.
func (dec *Decoder) End() error {
	if dec.err != nil {
		return dec.err
	}
	if dec.off == len(dec.buf) {
		return nil
	}
	d := &dec.d
	d.buf = dec.buf
	d.pos = dec.off
	d.base = dec.base
	d.dropping = 0
	d.resetSlabs()
	_, err := d.value(0)
	d.buf = nil
	d.resetSlabs()
	if err == nil {
		// Cannot happen while the scanner and decoder agree; Next would
		// have returned the value.
		err = d.errAt(ErrSyntax, dec.off, "malformed value")
	}
	if !errors.Is(err, ErrUnexpectedEOF) {
		dec.err = err
	}
	return err
}

func (dec *Decoder) needMore() error {
	return &Error{Pos: Pos{Offset: int(dec.base) + len(dec.buf)}, Msg: "need more bytes", Class: ErrUnexpectedEOF}
}

func (dec *Decoder) resetScan() {
	dec.scan.reset(dec.off)
}

// compact drops consumed bytes once they dominate the buffer, so a
// long-lived stream does not grow without bound.
func (dec *Decoder) compact() {
	if dec.off == 0 || dec.off < len(dec.buf)-dec.off {
		return
	}
	n := copy(dec.buf, dec.buf[dec.off:])
	dec.buf = dec.buf[:n]
	dec.base += int64(dec.off)
	dec.scan.pos -= dec.off
	dec.off = 0
}

// extentScanner finds where a binary value ends without building it, and
// counts, as an upper bound, the compound items and records inside it so the
// decoder can size its slabs. It is resumable: when the bytes run out its
// state stays valid for a later call on a longer buffer.
type extentScanner struct {
	pos   int // next byte to scan
	open  int // open compounds
	need  int // complete top-level values still needed
	items int // value tokens seen inside compounds
	recs  int // records opened
	hdrs  int // sequences (see header)
	ints  int // integers (see boxInt)
	strs  int // strings and byte strings (see boxString)
}

func (s *extentScanner) reset(pos int) { *s = extentScanner{pos: pos, need: 1} }

// scan advances over buf. It returns the end index of the value, or -1 when
// more bytes are needed; bad reports input the scanner cannot accept (the
// full decoder then produces the error).
func (s *extentScanner) scan(buf []byte, maxDepth, maxLength int) (end int, bad bool) {
	p := s.pos
	for p < len(buf) {
		q := p + 1
		switch tagClasses[buf[p]] {
		case classAtom:
		case classLength:
			var n, w int
			if q < len(buf) && buf[q] < 0x80 {
				n, w = int(buf[q]), 1
			} else {
				var ok bool
				if n, w, ok = scanVarint(buf[q:]); !ok {
					return -1, true
				}
			}
			if w == 0 || len(buf)-q-w < n {
				if n > maxLength {
					return -1, true
				}
				s.pos = p
				return -1, false
			}
			q += w + n
			switch buf[p] {
			case TagString, TagByteString:
				s.strs++
			case TagInteger:
				s.ints++
			}
		case classOpen, classRecord:
			if s.open > 0 {
				s.items++
			}
			switch buf[p] {
			case TagRecord:
				s.recs++
			case TagSequence:
				s.hdrs++
			}
			s.open++
			if s.open > maxDepth {
				return -1, true
			}
			p = q
			continue
		case classEnd:
			if s.open == 0 {
				return -1, true
			}
			s.open--
			p = q
			if s.open == 0 {
				s.need--
				if s.need == 0 {
					s.pos = p
					return p, false
				}
			}
			continue
		case classAnnotation:
			if s.open == 0 {
				s.need++
				if s.need > maxDepth+1 {
					return -1, true
				}
			}
			p = q
			continue
		case classEmbedded:
			p = q
			continue
		default:
			return -1, true
		}
		// an atom ends here
		p = q
		if s.open > 0 {
			s.items++
		} else {
			s.need--
			if s.need == 0 {
				s.pos = p
				return p, false
			}
		}
	}
	s.pos = p
	return -1, false
}

// Tag classes for the scanner's dispatch table.
const (
	classInvalid = iota
	classAtom
	classLength // tag, varint length, body
	classOpen
	classRecord
	classEnd
	classAnnotation
	classEmbedded
)

var tagClasses = func() (t [256]uint8) {
	t[TagFalse], t[TagTrue] = classAtom, classAtom
	t[TagDouble] = classLength
	for tag := TagInteger; tag <= TagSymbol; tag++ {
		t[tag] = classLength
	}
	for tag := TagRecord; tag <= TagDictionary; tag++ {
		t[tag] = classOpen
	}
	t[TagRecord] = classRecord
	t[TagEnd] = classEnd
	t[TagAnnotation] = classAnnotation
	t[TagEmbedded] = classEmbedded
	return t
}()

// scanVarint reads a varint from the front of b: its value and width, with
// width 0 when b ends first. ok is false for a malformed varint.
func scanVarint(b []byte) (n, width int, ok bool) {
	var x uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, 0, false
		}
		x |= uint64(c&0x7F) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, 0, false
			}
			if x > uint64(maxInt) {
				return 0, 0, false
			}
			return int(x), i + 1, true
		}
	}
	return 0, 0, true
}

const maxInt = int(^uint(0) >> 1)

// BinaryReader reads successive binary values from an io.Reader.
type BinaryReader struct {
	r   io.Reader
	dec *Decoder
	eof bool
	err error
}

// readChunk is how many bytes BinaryReader asks its reader for at a time.
const readChunk = 32 << 10

// NewBinaryReader returns a reader of the values in r.
func NewBinaryReader(r io.Reader, opts DecodeOptions) *BinaryReader {
	return &BinaryReader{r: r, dec: NewDecoder(opts)}
}

// Next returns the next value. It returns io.EOF when the stream ends at a
// value boundary and an *Error of class ErrUnexpectedEOF when it ends inside
// a value. Errors from the underlying reader are returned as they are.
func (br *BinaryReader) Next() (Value, error) {
	if br.err != nil {
		return nil, br.err
	}
	for {
		v, err := br.dec.Next()
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrUnexpectedEOF) {
			br.err = err
			return nil, err
		}
		if br.eof {
			br.err = br.dec.End()
			if br.err == nil {
				br.err = io.EOF
			}
			return nil, br.err
		}
		if err := br.fill(); err != nil {
			br.err = err
			return nil, err
		}
	}
}

// fill reads once from r straight into the decoder's buffer.
func (br *BinaryReader) fill() error {
	dec := br.dec
	dec.compact()
	if cap(dec.buf)-len(dec.buf) < readChunk/4 {
		nb := make([]byte, len(dec.buf), 2*cap(dec.buf)+readChunk)
		copy(nb, dec.buf)
		dec.buf = nb
	}
	n, err := br.r.Read(dec.buf[len(dec.buf):cap(dec.buf)])
	dec.buf = dec.buf[:len(dec.buf)+n]
	switch {
	case err == io.EOF:
		br.eof = true
	case err != nil:
		return err
	}
	return nil
}
