package preserves

// Binary decoding (spec §4). The decoder works on a complete []byte with an
// index, so the hot path is plain slice indexing with no per-byte interface
// calls. Compound items are collected on a scratch stack shared by the whole
// decode and copied out once into an exactly sized slice when the end marker
// arrives, so each compound costs one allocation for its items.
//
// Hostile input is bounded three ways: nesting depth (compounds, embedded
// values and annotations) is limited by MaxDepth, so recursion cannot exhaust
// the stack; a claimed atom length beyond MaxLength is rejected as soon as the
// length is read; and nothing is ever allocated from a claimed length until
// that many bytes are actually present in the input.

import (
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"unicode/utf8"
)

// Default limits used when DecodeOptions leaves them zero.
const (
	DefaultMaxDepth  = 512
	DefaultMaxLength = 64 << 20
)

// DecodeOptions configures binary decoding.
type DecodeOptions struct {
	// Annotations keeps annotations (as *Annotated wrappers); otherwise they
	// are checked and dropped.
	Annotations bool
	// Embedded converts the payload of an embedded value (already decoded as a
	// Value) into the domain payload stored in *Embedded. Without it the
	// payload is the Value itself. It is not called for embedded values
	// inside annotations that are being dropped.
	Embedded func(Value) (any, error)
	// MaxDepth bounds nesting: compounds, embedded values and annotations.
	// Zero means DefaultMaxDepth.
	MaxDepth int
	// MaxLength bounds the encoded size in bytes of one top-level value, and
	// so the claimed length of any atom in it. Zero means DefaultMaxLength;
	// negative means no limit.
	MaxLength int
}

func (o DecodeOptions) limits() (depth, length int) {
	depth, length = o.MaxDepth, o.MaxLength
	if depth <= 0 {
		depth = DefaultMaxDepth
	}
	switch {
	case length == 0:
		length = DefaultMaxLength
	case length < 0:
		length = math.MaxInt
	}
	return depth, length
}

// DecodeBinary decodes exactly one value from b. Empty input is an error of
// class ErrEmpty; input ending inside the value is ErrUnexpectedEOF; bytes
// left over after the value are a syntax error.
func DecodeBinary(b []byte, opts DecodeOptions) (Value, error) {
	var d binDecoder
	var local [64]Value
	d.stack = local[:0]
	d.init(opts)
	if len(b) == 0 {
		return nil, d.errAt(ErrEmpty, 0, "no input")
	}
	if len(b) > d.maxLength {
		return nil, d.errAt(ErrLimit, 0, "input longer than MaxLength")
	}
	d.buf = b
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.pos != len(b) {
		return nil, d.errAt(ErrSyntax, d.pos, "trailing bytes after value")
	}
	return v, nil
}

// binDecoder decodes values from buf starting at pos. base is added to
// offsets in errors (the stream offset of buf[0] for the incremental
// Decoder).
type binDecoder struct {
	buf         []byte
	pos         int
	base        int64
	annotations bool
	embedded    func(Value) (any, error)
	maxDepth    int
	maxLength   int
	// dropping counts the annotations being skipped that enclose the current
	// position; the Embedded hook is not called inside them.
	dropping int
	stack    []Value
}

func (d *binDecoder) init(opts DecodeOptions) {
	d.annotations = opts.Annotations
	d.embedded = opts.Embedded
	d.maxDepth, d.maxLength = opts.limits()
}

func (d *binDecoder) errAt(class error, off int, msg string) *Error {
	return &Error{Pos: Pos{Offset: int(d.base) + off}, Msg: msg, Class: class}
}

func (d *binDecoder) eof() *Error {
	return d.errAt(ErrUnexpectedEOF, d.pos, "input ends inside a value")
}

// value decodes the value at d.pos. depth is the number of enclosing
// compounds, embedded values and annotations.
func (d *binDecoder) value(depth int) (Value, error) {
	if d.pos >= len(d.buf) {
		return nil, d.eof()
	}
	start := d.pos
	tag := d.buf[d.pos]
	d.pos++
	switch tag {
	case tagFalse:
		return Bool(false), nil
	case tagTrue:
		return Bool(true), nil
	case tagInteger:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		return decodeInt(body), nil
	case tagString, tagSymbol:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(body) {
			return nil, d.errAt(ErrSyntax, start, "invalid UTF-8 in string or symbol")
		}
		if tag == tagString {
			return String(body), nil
		}
		return Symbol(body), nil
	case tagByteString:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		return ByteString(body), nil
	case tagDouble:
		n, err := d.length()
		if err != nil {
			return nil, err
		}
		if n != 8 {
			return nil, d.errAt(ErrSyntax, start, "IEEE754 value of length other than 8")
		}
		if len(d.buf)-d.pos < 8 {
			d.pos = len(d.buf)
			return nil, d.eof()
		}
		bits := binary.BigEndian.Uint64(d.buf[d.pos:])
		d.pos += 8
		return Double{bits}, nil
	case tagRecord, tagSequence, tagSet, tagDictionary:
		if depth >= d.maxDepth {
			return nil, d.errAt(ErrLimit, start, "nesting deeper than MaxDepth")
		}
		return d.compound(tag, start, depth+1)
	case tagEmbedded:
		if depth >= d.maxDepth {
			return nil, d.errAt(ErrLimit, start, "nesting deeper than MaxDepth")
		}
		pv, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if d.embedded == nil || d.dropping > 0 {
			return &Embedded{Payload: pv}, nil
		}
		p, err := d.embedded(pv)
		if err != nil {
			return nil, d.errAt(ErrSyntax, start, "embedded value rejected: "+err.Error())
		}
		return &Embedded{Payload: p}, nil
	case tagAnnotation:
		return d.annotated(start, depth)
	case tagEnd:
		return nil, d.errAt(ErrSyntax, start, "end marker (84) where a value was expected")
	}
	return nil, d.errAt(ErrSyntax, start, "invalid tag")
}

// annotated decodes a chain `85 A1 85 A2 … V` (d.pos is just past the first
// 85) into one *Annotated with the annotations in order. The chain is read
// iteratively, so only annotations nested inside annotations use depth.
func (d *binDecoder) annotated(start, depth int) (Value, error) {
	if depth >= d.maxDepth {
		return nil, d.errAt(ErrLimit, start, "nesting deeper than MaxDepth")
	}
	var anns []Value
	if !d.annotations {
		d.dropping++
	}
	for {
		a, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if d.annotations {
			anns = append(anns, a)
		}
		if d.pos < len(d.buf) && d.buf[d.pos] == tagAnnotation {
			d.pos++
			continue
		}
		break
	}
	if !d.annotations {
		d.dropping--
	}
	item, err := d.value(depth)
	if err != nil {
		return nil, err
	}
	if !d.annotations {
		return item, nil
	}
	return &Annotated{Anns: anns, Item: item}, nil
}

// compound decodes the items of a record, sequence, set or dictionary up to
// its end marker; d.pos is just past the opening tag.
func (d *binDecoder) compound(tag byte, start, depth int) (Value, error) {
	mark := len(d.stack)
	defer func() {
		clear(d.stack[mark:]) // drop references held by the scratch stack
		d.stack = d.stack[:mark]
	}()
	for {
		if d.pos >= len(d.buf) {
			return nil, d.eof()
		}
		if d.buf[d.pos] == tagEnd {
			d.pos++
			break
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		d.stack = append(d.stack, v)
		if tag == tagDictionary {
			// A value must follow each key; an end marker here is a
			// syntax error, which value reports.
			v, err := d.value(depth)
			if err != nil {
				return nil, err
			}
			d.stack = append(d.stack, v)
		}
	}
	items := d.stack[mark:]
	switch tag {
	case tagSequence:
		return Sequence(slices.Clone(items)), nil
	case tagRecord:
		if len(items) == 0 {
			return nil, d.errAt(ErrSyntax, start, "record without a label")
		}
		return newRecordFrom(items), nil
	case tagSet:
		elems := slices.Clone(items)
		slices.SortFunc(elems, Compare)
		for i := 1; i < len(elems); i++ {
			if Compare(elems[i-1], elems[i]) == 0 {
				return nil, d.errAt(ErrSyntax, start, "duplicate set element")
			}
		}
		return &Set{elems: elems}, nil
	default: // tagDictionary
		entries := make([]DictEntry, len(items)/2)
		for i := range entries {
			entries[i] = DictEntry{items[2*i], items[2*i+1]}
		}
		slices.SortFunc(entries, func(a, b DictEntry) int { return Compare(a.Key, b.Key) })
		for i := 1; i < len(entries); i++ {
			if Compare(entries[i-1].Key, entries[i].Key) == 0 {
				return nil, d.errAt(ErrSyntax, start, "duplicate dictionary key")
			}
		}
		return &Dictionary{entries: entries}, nil
	}
}

// Records with few fields are allocated together with their field array, so
// a small record costs one allocation instead of two.
type record1 struct {
	r Record
	f [1]Value
}
type record2 struct {
	r Record
	f [2]Value
}
type record3 struct {
	r Record
	f [3]Value
}
type record4 struct {
	r Record
	f [4]Value
}

// newRecordFrom builds a record from label and fields (items[0] is the
// label), copying items.
func newRecordFrom(items []Value) *Record {
	switch len(items) - 1 {
	case 0:
		return &Record{Label: items[0]}
	case 1:
		x := &record1{}
		copy(x.f[:], items[1:])
		x.r = Record{Label: items[0], Fields: x.f[:]}
		return &x.r
	case 2:
		x := &record2{}
		copy(x.f[:], items[1:])
		x.r = Record{Label: items[0], Fields: x.f[:]}
		return &x.r
	case 3:
		x := &record3{}
		copy(x.f[:], items[1:])
		x.r = Record{Label: items[0], Fields: x.f[:]}
		return &x.r
	case 4:
		x := &record4{}
		copy(x.f[:], items[1:])
		x.r = Record{Label: items[0], Fields: x.f[:]}
		return &x.r
	}
	return &Record{Label: items[0], Fields: slices.Clone(items[1:])}
}

// length reads a varint length, rejecting non-minimal encodings, values that
// overflow and lengths beyond MaxLength (as ErrLimit, before any body byte
// need arrive).
func (d *binDecoder) length() (int, error) {
	start := d.pos
	if d.pos < len(d.buf) && d.buf[d.pos] < 0x80 { // fast path: one byte
		n := int(d.buf[d.pos])
		d.pos++
		if n > d.maxLength {
			return 0, d.errAt(ErrLimit, start, "length exceeds MaxLength")
		}
		return n, nil
	}
	var x uint64
	for i := 0; ; i++ {
		if d.pos >= len(d.buf) {
			return 0, d.eof()
		}
		b := d.buf[d.pos]
		d.pos++
		if i == 9 && b > 1 {
			return 0, d.errAt(ErrSyntax, start, "varint overflows 64 bits")
		}
		x |= uint64(b&0x7F) << (7 * i)
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, d.errAt(ErrSyntax, start, "non-minimal varint")
			}
			break
		}
	}
	if x > uint64(d.maxLength) {
		return 0, d.errAt(ErrLimit, start, "length exceeds MaxLength")
	}
	return int(x), nil
}

// body reads a length-prefixed atom body. The returned slice aliases d.buf.
func (d *binDecoder) body() ([]byte, error) {
	n, err := d.length()
	if err != nil {
		return nil, err
	}
	if len(d.buf)-d.pos < n {
		d.pos = len(d.buf)
		return nil, d.eof()
	}
	b := d.buf[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b, nil
}

// decodeInt reads a big-endian two's-complement body. Non-minimal bodies are
// accepted (spec §4.3) and normalised, so the result is the same Value as for
// the minimal form.
func decodeInt(b []byte) Value {
	if len(b) <= 8 {
		if len(b) == 0 {
			return Int(0)
		}
		var n int64
		if b[0] >= 0x80 {
			n = -1
		}
		for _, c := range b {
			n = n<<8 | int64(c)
		}
		return Int(n)
	}
	if b[0] < 0x80 {
		return NewBigInt(new(big.Int).SetBytes(b))
	}
	c := make([]byte, len(b))
	for i := range b {
		c[i] = ^b[i]
	}
	m := new(big.Int).SetBytes(c)
	m.Neg(m)
	m.Sub(m, big.NewInt(1))
	return NewBigInt(m)
}
