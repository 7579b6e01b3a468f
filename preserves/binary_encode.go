package preserves

// Binary encoding (spec §4). Three flavours share one encoder:
//
//   - canonical (EncodeCanonical, AppendCanonical, or EncodeBinary without
//     Annotations): no annotations, minimal integers and lengths, set
//     elements and dictionary entries sorted by the bytes of their canonical
//     encodings. Equal values give identical bytes, so canonical form is
//     what gets hashed and signed.
//   - annotated (EncodeBinary with Annotations): the same bytes plus `85`
//     annotations; the ordering of set elements and dictionary entries still
//     comes from the canonical, annotation-free encodings, which is exactly
//     how the conformance suite's samples.bin is written.
//
// The canonical sort key is the encoded bytes, not the Preserves value order
// (lengths precede contents and tags do not follow kind ranks), so sets and
// dictionaries are encoded entry by entry into a scratch buffer, the spans
// are sorted bytewise and then copied out.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"slices"
	"sync"
)

// The binary tags (spec §4.1): the first byte of every binary value.
// Exported for codecs that write or take apart binary values by hand on a
// hot path (the relay's packet codec), so that no tag is a bare number.
const (
	TagFalse      = 0x80
	TagTrue       = 0x81
	TagEnd        = 0x84
	TagAnnotation = 0x85
	TagEmbedded   = 0x86
	TagDouble     = 0x87
	TagInteger    = 0xB0
	TagString     = 0xB1
	TagByteString = 0xB2
	TagSymbol     = 0xB3
	TagRecord     = 0xB4
	TagSequence   = 0xB5
	TagSet        = 0xB6
	TagDictionary = 0xB7
)

// EncodeOptions configures EncodeBinary.
type EncodeOptions struct {
	// Annotations writes annotations (tag 85). Without it the output is
	// canonical.
	Annotations bool
	// Embedded converts an embedded payload that is not itself a Value into
	// the Value to write after the 86 tag. Payloads that are Values are
	// written as they are and never reach the hook.
	Embedded func(any) (Value, error)
}

// EncodeCanonical returns the canonical binary encoding of v.
//
// It panics when v contains a nil Value or an embedded payload that is not a
// Value; use EncodeBinary with an Embedded hook for domain payloads.
func EncodeCanonical(v Value) []byte {
	return AppendCanonical(nil, v)
}

// AppendCanonical appends the canonical binary encoding of v to dst. It
// panics in the same situations as EncodeCanonical.
func AppendCanonical(dst []byte, v Value) []byte {
	e := getEncoder(false, nil)
	out := e.encode(dst, v)
	err := e.err
	e.release()
	if err != nil {
		panic(err)
	}
	return out
}

// EncodeBinary returns the binary encoding of v: canonical unless
// opts.Annotations is set.
func EncodeBinary(v Value, opts EncodeOptions) ([]byte, error) {
	return AppendBinary(nil, v, opts)
}

// AppendBinary appends the binary encoding of v to dst, as EncodeBinary. On
// error the returned slice is dst unchanged in length.
func AppendBinary(dst []byte, v Value, opts EncodeOptions) ([]byte, error) {
	e := getEncoder(opts.Annotations, opts.Embedded)
	n := len(dst)
	out := e.encode(dst, v)
	err := e.err
	e.release()
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// encoder carries the options and the first error through the recursion, so
// the hot path returns only the grown slice. Encoders are pooled together
// with their buffers: out, where a value is encoded when the caller supplies
// no buffer of its own, and the scratch buffers sets and dictionaries sort
// their entries in.
type encoder struct {
	annotations bool
	embedded    func(any) (Value, error)
	err         error
	out         []byte
	// free scratch buffers; a nested set or dictionary takes its own
	free      [][]byte
	freeSpans [][]span
}

var encoderPool = sync.Pool{New: func() any { return new(encoder) }}

// Buffers above these sizes are not kept in the pool, so one huge value does
// not pin its memory for the life of the process.
const (
	encKeepOut     = 64 << 10
	encKeepScratch = 16 << 10
	encKeepSpans   = 1 << 10
	encKeepFree    = 8
)

func getEncoder(annotations bool, embedded func(any) (Value, error)) *encoder {
	e := encoderPool.Get().(*encoder)
	e.annotations, e.embedded, e.err = annotations, embedded, nil
	return e
}

func (e *encoder) release() {
	e.embedded, e.err = nil, nil
	if cap(e.out) > encKeepOut {
		e.out = nil
	}
	encoderPool.Put(e)
}

// encode appends v to dst. Growing a fresh slice by appending would
// allocate and copy about twice the output, value after value; so with no
// buffer from the caller the value goes into the pooled buffer first and is
// copied out once into an exactly sized slice.
func (e *encoder) encode(dst []byte, v Value) []byte {
	if cap(dst) != 0 {
		return e.value(dst, v)
	}
	buf := e.value(e.out[:0], v)
	e.out = buf
	if e.err != nil || len(buf) == 0 {
		return dst
	}
	out := make([]byte, len(buf))
	copy(out, buf)
	return out
}

func (e *encoder) value(dst []byte, v Value) []byte {
	switch x := v.(type) {
	case Bool:
		if x {
			return append(dst, TagTrue)
		}
		return append(dst, TagFalse)
	case Int:
		return AppendBinaryInt(dst, int64(x))
	case String:
		return AppendBinaryAtom(dst, TagString, string(x))
	case Symbol:
		return AppendBinaryAtom(dst, TagSymbol, string(x))
	case ByteString:
		return AppendBinaryAtom(dst, TagByteString, string(x))
	case Double:
		dst = append(dst, TagDouble, 8)
		return binary.BigEndian.AppendUint64(dst, x.bits)
	case *BigInt:
		return appendBig(dst, x.v)
	case *Record:
		dst = append(dst, TagRecord)
		dst = e.value(dst, x.Label)
		for _, f := range x.Fields {
			dst = e.value(dst, f)
		}
		return append(dst, TagEnd)
	case Sequence:
		dst = append(dst, TagSequence)
		for _, f := range x {
			dst = e.value(dst, f)
		}
		return append(dst, TagEnd)
	case *Set:
		return e.set(dst, x.elems)
	case *Dictionary:
		return e.dict(dst, x.entries)
	case *Embedded:
		dst = append(dst, TagEmbedded)
		if pv, ok := x.Payload.(Value); ok && pv != nil {
			return e.value(dst, pv)
		}
		if e.embedded == nil {
			e.fail(fmt.Errorf("preserves: cannot encode embedded payload of type %T without an Embedded hook", x.Payload))
			return dst
		}
		pv, err := e.embedded(x.Payload)
		if err != nil {
			e.fail(fmt.Errorf("preserves: encoding embedded payload: %w", err))
			return dst
		}
		if pv == nil {
			e.fail(fmt.Errorf("preserves: Embedded hook returned nil for payload of type %T", x.Payload))
			return dst
		}
		return e.value(dst, pv)
	case *Annotated:
		if e.annotations {
			for _, a := range x.Anns {
				dst = append(dst, TagAnnotation)
				dst = e.value(dst, a)
			}
		}
		return e.value(dst, x.Item)
	case nil:
		e.fail(fmt.Errorf("preserves: cannot encode a nil Value"))
		return dst
	}
	e.fail(fmt.Errorf("preserves: cannot encode value of type %T", v))
	return dst
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// span locates, in a scratch buffer, the canonical encoding of one set
// element or dictionary key, which is its sort key, and which element or
// entry it belongs to.
type span struct {
	start, end, index int
}

// keys encodes the canonical form of key(i) for i < n into a scratch buffer
// and returns the buffer and the spans sorted bytewise. The caller hands
// both back with putScratch.
func (e *encoder) keys(n int, key func(int) Value) ([]byte, []span) {
	var scratch []byte
	if k := len(e.free); k > 0 {
		scratch, e.free = e.free[k-1][:0], e.free[:k-1]
	}
	var spans []span
	if k := len(e.freeSpans); k > 0 {
		spans, e.freeSpans = e.freeSpans[k-1][:0], e.freeSpans[:k-1]
	}
	ann := e.annotations
	e.annotations = false // sort keys are canonical even when writing annotations
	for i := range n {
		s := len(scratch)
		scratch = e.value(scratch, key(i))
		spans = append(spans, span{s, len(scratch), i})
	}
	e.annotations = ann
	slices.SortFunc(spans, func(a, b span) int {
		return bytes.Compare(scratch[a.start:a.end], scratch[b.start:b.end])
	})
	return scratch, spans
}

func (e *encoder) putScratch(scratch []byte, spans []span) {
	if cap(scratch) <= encKeepScratch && len(e.free) < encKeepFree {
		e.free = append(e.free, scratch)
	}
	if cap(spans) <= encKeepSpans && len(e.freeSpans) < encKeepFree {
		e.freeSpans = append(e.freeSpans, spans)
	}
}

func (e *encoder) set(dst []byte, elems []Value) []byte {
	dst = append(dst, TagSet)
	if len(elems) == 1 {
		return append(e.value(dst, elems[0]), TagEnd)
	}
	scratch, spans := e.keys(len(elems), func(i int) Value { return elems[i] })
	for _, s := range spans {
		if e.annotations {
			dst = e.value(dst, elems[s.index])
		} else {
			dst = append(dst, scratch[s.start:s.end]...)
		}
	}
	e.putScratch(scratch, spans)
	return append(dst, TagEnd)
}

func (e *encoder) dict(dst []byte, entries []DictEntry) []byte {
	dst = append(dst, TagDictionary)
	if len(entries) == 1 {
		dst = e.value(dst, entries[0].Key)
		return append(e.value(dst, entries[0].Value), TagEnd)
	}
	scratch, spans := e.keys(len(entries), func(i int) Value { return entries[i].Key })
	for _, s := range spans {
		if e.annotations {
			dst = e.value(dst, entries[s.index].Key)
		} else {
			dst = append(dst, scratch[s.start:s.end]...)
		}
		dst = e.value(dst, entries[s.index].Value)
	}
	e.putScratch(scratch, spans)
	return append(dst, TagEnd)
}

// AppendBinaryAtom appends an atom of the length-prefixed kinds (TagString,
// TagByteString, TagSymbol, TagInteger's body): tag, length, body.
func AppendBinaryAtom(dst []byte, tag byte, body string) []byte {
	dst = append(dst, tag)
	dst = appendVarint(dst, uint64(len(body)))
	return append(dst, body...)
}

// appendVarint writes unsigned LEB128, which is minimal by construction.
func appendVarint(dst []byte, n uint64) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}

// AppendBinaryInt appends the canonical binary encoding of n: the minimal
// big-endian two's-complement form, tagged TagInteger.
func AppendBinaryInt(dst []byte, n int64) []byte {
	if n == 0 {
		return append(dst, TagInteger, 0)
	}
	// Count the bytes needed: drop leading bytes that merely repeat the
	// sign bit of the byte after them.
	size := 8
	for size > 1 {
		top := n >> (8*(size-1) - 1) // the top byte plus the next sign bit
		if top != 0 && top != -1 {
			break
		}
		size--
	}
	dst = append(dst, TagInteger, byte(size))
	for i := size - 1; i >= 0; i-- {
		dst = append(dst, byte(n>>(8*i)))
	}
	return dst
}

func appendBig(dst []byte, n *big.Int) []byte {
	var body []byte
	if n.Sign() >= 0 {
		body = n.Bytes()
		if len(body) > 0 && body[0] >= 0x80 {
			body = append([]byte{0}, body...)
		}
	} else {
		m := new(big.Int).Neg(n)
		m.Sub(m, big.NewInt(1))
		body = m.Bytes()
		for i := range body {
			body[i] = ^body[i]
		}
		if len(body) == 0 || body[0] < 0x80 {
			body = append([]byte{0xFF}, body...)
		}
	}
	dst = append(dst, TagInteger)
	dst = appendVarint(dst, uint64(len(body)))
	return append(dst, body...)
}
