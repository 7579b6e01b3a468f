package preserves

// Binary decoding (spec §4). The decoder works on a complete []byte with an
// index, so the hot path is plain slice indexing with no per-byte interface
// calls. A prescan of the whole value bounds how many items each compound
// has, so sequences and records are decoded straight into slices reserved
// for them; sets and dictionaries (which sort their items), and values read
// without a prescan (Decoder, BatchDecoder), collect items on a scratch
// stack shared by the whole decode and copy them out once, when the end
// marker arrives, into an exactly sized slice. Those slices, Record structs,
// the bytes of strings and even the interface boxes of sequences, strings,
// byte strings and integers are carved out of a few chunks per top-level
// value (sized by the same prescan), so a typical packet costs three or four
// allocations however many items it has. Nothing is interned but symbols
// (see symbol). The prescan validates nothing: a bound that malformed input
// makes it miscount costs a fallback to the scratch stack or a few unused
// slots, never a wrong value.
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
	"sync"
	"unicode/utf8"
	"unsafe"
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
	d := binDecoderPool.Get().(*binDecoder)
	v, err := d.whole(b, opts)
	d.release()
	return v, err
}

// whole decodes all of b as one value.
func (d *binDecoder) whole(b []byte, opts DecodeOptions) (Value, error) {
	d.init(opts)
	if len(b) == 0 {
		return nil, d.errAt(ErrEmpty, 0, "no input")
	}
	if len(b) > d.maxLength {
		return nil, d.errAt(ErrLimit, 0, "input longer than MaxLength")
	}
	d.buf, d.pos = b, 0
	d.resetSlabs()
	// A prescan sizes the slabs: it costs a fraction of decoding and saves
	// both over-allocation and chunk after chunk of guesses.
	var c slotCounts
	c, d.sizes, d.open = prescan(b, d.sizes[:0], d.open[:0], d.maxDepth)
	d.hintItems, d.hintRecs, d.hintHdrs, d.hintInts, d.hintStrs = c.items, c.recs, c.hdrs, c.ints, c.strs
	d.nextCompound = 1
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.pos != len(b) {
		return nil, d.errAt(ErrSyntax, d.pos, "trailing bytes after value")
	}
	return v, nil
}

// binDecoderPool recycles decoders, and with them the scratch stack and the
// unused tail of the string arena, across DecodeBinary calls.
var binDecoderPool = sync.Pool{New: func() any { return &binDecoder{stack: make([]Value, 0, 64)} }}

func (d *binDecoder) release() {
	d.resetSlabs() // clears the stack, which an error may leave non-empty
	if cap(d.stack) > 1<<12 {
		d.stack = make([]Value, 0, 64)
	}
	if cap(d.sizes) > 1<<14 {
		d.sizes, d.open = nil, nil
	}
	d.buf, d.pos, d.base, d.embedded, d.dropping = nil, 0, 0, nil, 0
	binDecoderPool.Put(d)
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
	// stackHigh bounds the stack slots used since resetSlabs last cleared
	// them; slots past len(stack) may still hold references
	stackHigh int
	// arena holds the bytes of decoded strings, symbols and byte strings,
	// so each costs no allocation of its own. Bytes are only ever
	// appended, never overwritten, so strings handed out stay valid while
	// the arena's spare capacity is reused. The boxes of integers that
	// need one (see boxInt) are carved from the other end of the chunk,
	// downwards from arenaTop, where every slot is 8-byte aligned; the
	// spare capacity is what lies between.
	arena    []byte
	arenaTop int
	vals     []Value  // slab for compound items of the current top-level value
	recs     []Record // slab for records of the current top-level value
	// slot usage of the current top-level value, which began at slabStart
	itemsUsed, recsUsed, slabStart int
	// hdrs is the slab for the interface boxes of sequences, strings and
	// byte strings (see boxIn)
	hdrs     []Sequence
	hdrsUsed int
	// upper bounds on the slots the current top-level value needs, from a
	// prescan; zero when unknown
	hintItems, hintRecs, hintHdrs int
	// hintInts and hintStrs bound the integers and strings of the current
	// value that need a box in the arena (see boxInt, boxString); zero
	// when unknown
	hintInts, hintStrs int
	// sizes[k] bounds the items of the k-th compound (1-based, in the
	// order compounds open) of the current value, from the prescan, so
	// sequences and records can be decoded straight into their final slots
	// (see compoundInPlace); empty when unknown. open is the prescan's
	// stack, kept to reuse its memory.
	sizes, open  []int32
	nextCompound int
	// batch: decoding the values of a BatchDecoder, which share chunks
	batch bool
	// symbols is the decoder's own cache of boxed symbols when it decodes
	// value after value itself (pooled or stream decoders; see symbol)
	symbols *ownSymbols
}

// Atom bodies longer than arenaMaxString get their own allocation, and arena
// chunks are at most arenaChunk bytes, which bounds how much memory a small
// retained string can keep alive.
const (
	arenaChunk     = 4096
	arenaMaxString = 512
)

// str copies an atom body out of the input.
func (d *binDecoder) str(body []byte) string {
	n := len(body)
	if n == 0 {
		return ""
	}
	if n > arenaMaxString {
		return string(body)
	}
	return unsafe.String(&d.arena[d.arenaCopy(body, 0)], n)
}

// arenaCopy appends body (at most arenaMaxString bytes) to the arena,
// making sure the chunk also has reserve bytes to spare at its top, and
// returns where body starts.
func (d *binDecoder) arenaCopy(body []byte, reserve int) int {
	if d.arenaTop-len(d.arena) < len(body)+reserve {
		d.newArena(len(body) + reserve)
	}
	start := len(d.arena)
	d.arena = append(d.arena, body...)
	return start
}

// newArena starts an arena chunk with room for at least n bytes. It is
// sized by the input still to come (every later body is part of it) plus
// the boxes the prescan's hints call for, so decoding one small packet
// allocates little; but a decoder that keeps needing chunks (a pooled one
// serving packet after packet) doubles them, up to arenaChunk, rather than
// allocating one per packet. Sizes are multiples of 8, which the allocator
// aligns to 8.
func (d *binDecoder) newArena(n int) {
	rest := len(d.buf) - d.pos
	size := (max(n, min(arenaChunk, max(n+rest+8*d.hintInts+16*d.hintStrs, 2*cap(d.arena)))) + 7) &^ 7
	for {
		d.arena = make([]byte, 0, size)
		// The allocator aligns these sizes to 8; the check keeps any
		// other allocator from ever producing a misaligned box.
		end := uintptr(unsafe.Pointer(unsafe.SliceData(d.arena[:size]))) + uintptr(size)
		d.arenaTop = size - int(end&7)
		if d.arenaTop >= n {
			return
		}
		size += 8
	}
}

// intBox is the prototype for integer boxes (see boxIn).
var intBox Value = Int(0)

// boxInt returns n as a Value. Go boxes small non-negative integers
// without allocating; others get an 8-byte slot at the top of the arena
// instead of an allocation each.
func (d *binDecoder) boxInt(n int64) Value {
	if uint64(n) < 256 {
		return Int(n)
	}
	if d.arenaTop-len(d.arena) < 8 {
		d.newArena(8)
	}
	d.arenaTop -= 8
	p := (*int64)(unsafe.Pointer(&d.arena[:cap(d.arena)][d.arenaTop]))
	*p = n
	return boxIn(intBox, unsafe.Pointer(p))
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
	case TagFalse:
		return Bool(false), nil
	case TagTrue:
		return Bool(true), nil
	case TagInteger:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		if len(body) <= 8 {
			return d.boxInt(decodeInt64(body)), nil
		}
		return decodeInt(body), nil
	case TagString:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(body) {
			return nil, d.errAt(ErrSyntax, start, "invalid UTF-8 in string or symbol")
		}
		return d.boxString(stringBox, body), nil
	case TagSymbol:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		return d.symbol(start, body)
	case TagByteString:
		body, err := d.body()
		if err != nil {
			return nil, err
		}
		return d.boxString(byteStringBox, body), nil
	case TagDouble:
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
	case TagRecord, TagSequence, TagSet, TagDictionary:
		if depth >= d.maxDepth {
			return nil, d.errAt(ErrLimit, start, "nesting deeper than MaxDepth")
		}
		return d.compound(tag, start, depth+1)
	case TagEmbedded:
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
	case TagAnnotation:
		return d.annotated(start, depth)
	case TagEnd:
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
		if d.pos < len(d.buf) && d.buf[d.pos] == TagAnnotation {
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
	k := d.nextCompound
	d.nextCompound++
	if k < len(d.sizes) && (tag == TagSequence || tag == TagRecord) {
		return d.compoundInPlace(tag, start, depth, int(d.sizes[k]))
	}
	return d.collect(tag, start, depth, len(d.stack))
}

// compoundInPlace decodes a sequence or record whose item count the
// prescan bounded by size (the label included), straight into slots
// reserved in the value slab: no scratch stack, no copy, one write per
// item. Should the bound be short (only malformed input can make the
// prescan miscount), the items so far move to the scratch stack and
// collect carries on.
func (d *binDecoder) compoundInPlace(tag byte, start, depth, size int) (Value, error) {
	var label Value
	if tag == TagRecord {
		if d.pos < len(d.buf) && d.buf[d.pos] == TagEnd {
			d.pos++
			return nil, d.errAt(ErrSyntax, start, "record without a label")
		}
		var err error
		if label, err = d.value(depth); err != nil {
			return nil, err
		}
		size--
	}
	slots, at := d.reserve(max(size, 0))
	i := 0
	for {
		if end, err := d.atEnd(); end || err != nil {
			if err != nil {
				return nil, err
			}
			break
		}
		if i == len(slots) {
			mark := len(d.stack)
			if tag == TagRecord {
				d.stack = append(d.stack, label)
			}
			d.stack = append(d.stack, slots[:i]...)
			return d.collect(tag, start, depth, mark)
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		slots[i] = v
		i++
	}
	if i < len(slots) {
		d.unreserve(at, len(slots), i)
	}
	items := slots[:i:i]
	if tag == TagRecord {
		if i == 0 {
			items = nil
		}
		return d.recordSlot(label, items), nil
	}
	if i == 0 {
		return emptySequence, nil
	}
	h := d.header()
	*h = items
	return boxIn(sequenceBox, unsafe.Pointer(h)), nil
}

// atEnd reports whether the next byte ends the compound being read, and
// consumes it if so; running out of input is an error.
func (d *binDecoder) atEnd() (bool, error) {
	if d.pos >= len(d.buf) {
		return false, d.eof()
	}
	if d.buf[d.pos] == TagEnd {
		d.pos++
		return true, nil
	}
	return false, nil
}

// collect gathers the items of a compound on the scratch stack (those
// from mark on are already its own) up to its end marker, then builds it.
func (d *binDecoder) collect(tag byte, start, depth, mark int) (Value, error) {
	for {
		if end, err := d.atEnd(); end || err != nil {
			if err != nil {
				return nil, err
			}
			break
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		d.stack = append(d.stack, v)
		if tag == TagDictionary {
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
	v, err := d.build(tag, start, items)
	// The references the scratch stack still holds are dropped in one go by
	// resetSlabs, which is cheaper than clearing after every compound.
	d.stackHigh = max(d.stackHigh, len(d.stack))
	d.stack = d.stack[:mark]
	return v, err
}

// emptySequence is boxed once: an empty Sequence has no elements to
// share, and boxing a fresh one would cost an allocation each time.
var emptySequence Value = Sequence{}

// build makes the compound value from its items, which it copies.
func (d *binDecoder) build(tag byte, start int, items []Value) (Value, error) {
	switch tag {
	case TagSequence:
		if len(items) == 0 {
			return emptySequence, nil
		}
		h := d.header()
		*h = d.itemSlice(items)
		return boxIn(sequenceBox, unsafe.Pointer(h)), nil
	case TagRecord:
		if len(items) == 0 {
			return nil, d.errAt(ErrSyntax, start, "record without a label")
		}
		return d.newRecord(items[0], items[1:]), nil
	case TagSet:
		elems := slices.Clone(items)
		slices.SortFunc(elems, Compare)
		for i := 1; i < len(elems); i++ {
			if Compare(elems[i-1], elems[i]) == 0 {
				return nil, d.errAt(ErrSyntax, start, "duplicate set element")
			}
		}
		return &Set{elems: elems}, nil
	default: // TagDictionary
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

// Slabs. Item arrays and Record structs of one top-level value are carved
// out of shared chunks, so a small compound costs no allocation of its own.
// A chunk never serves two top-level values: otherwise a value retained from
// one packet could keep another packet's data reachable. A new chunk is sized
// by extrapolating how many items (or records) per input byte the value has
// used so far over the input still to come, and capped so that one retained
// value pins a bounded amount of memory.
const slabMax = 256

// slabSize estimates how many more slots the current top-level value needs,
// given the slots used so far and, when a prescan provided it, an upper bound
// on the total (hint > 0).
func (d *binDecoder) slabSize(used, hint int) int {
	if hint > 0 {
		return min(max(hint-used, 0), slabMax)
	}
	consumed := max(d.pos-d.slabStart, 1)
	rest := len(d.buf) - d.pos
	if d.batch {
		// The rest of a batch's buffer is other values (and the caller's
		// framing), which extend the chunk as they need: no slack, or a
		// small packet would pay for slots it never uses.
		return min(rest*used/consumed, slabMax)
	}
	return min(rest*used/consumed+4, slabMax)
}

// itemSlice copies items into the value slab. The result's capacity equals
// its length, so appending to it can never overwrite a neighbour.
func (d *binDecoder) itemSlice(items []Value) []Value {
	n := len(items)
	d.itemsUsed += n
	if cap(d.vals)-len(d.vals) < n {
		if n > slabMax/2 {
			return slices.Clone(items)
		}
		d.vals = make([]Value, 0, n+d.slabSize(d.itemsUsed, d.hintItems))
	}
	l := len(d.vals)
	d.vals = append(d.vals, items...)
	return d.vals[l : l+n : l+n]
}

func (d *binDecoder) newRecord(label Value, fields []Value) *Record {
	if len(fields) > 0 {
		fields = d.itemSlice(fields)
	} else {
		fields = nil
	}
	return d.recordSlot(label, fields)
}

// recordSlot returns a fresh record of the record slab.
func (d *binDecoder) recordSlot(label Value, fields []Value) *Record {
	d.recsUsed++
	if len(d.recs) == cap(d.recs) {
		d.recs = make([]Record, 0, 1+d.slabSize(d.recsUsed, d.hintRecs))
	}
	d.recs = append(d.recs, Record{Label: label, Fields: fields})
	return &d.recs[len(d.recs)-1]
}

// reserve returns n fresh slots of the value slab (capacity n, so appending
// to them never reaches a neighbour) and where they start in d.vals, or -1
// when they were allocated on their own.
func (d *binDecoder) reserve(n int) ([]Value, int) {
	d.itemsUsed += n
	if cap(d.vals)-len(d.vals) < n {
		if n > slabMax/2 {
			return make([]Value, n), -1
		}
		d.vals = make([]Value, 0, n+d.slabSize(d.itemsUsed, d.hintItems))
	}
	l := len(d.vals)
	d.vals = d.vals[:l+n]
	return d.vals[l : l+n : l+n], l
}

// unreserve gives back the unused tail of a reservation of n slots at at,
// of which used were filled, if nothing was reserved after it.
func (d *binDecoder) unreserve(at, n, used int) {
	if at >= 0 && len(d.vals) == at+n {
		d.vals = d.vals[:at+used]
		d.itemsUsed -= n - used
	}
}

// Interface boxes. Storing a Sequence, String or ByteString in a Value
// needs a box holding its header (a slice or string header), which the
// compiler allocates on its own, one small object per value. The decoder
// instead places the headers of one top-level value in a slab of its own
// and points each Value's data word at its slot: one allocation for all of
// them. Decoded values are never written again, so sharing the slab is as
// safe as the slabs above; the only difference from a compiler-made box is
// where it lives.
//
// The header of a string whose bytes are in the arena goes in the arena
// too, at its top end beside the integer boxes: the arena holds no pointers
// the collector would look at, but the header's only pointer leads into the
// very chunk that holds the header, which the Value's data word keeps
// alive. Longer strings, with bytes of their own, take a slot in the header
// slab, where a string header fits in the first two words of a Sequence
// slot (a pointer, then a length, in both layouts).
//
// The boxes are made from prototypes of each type (converting a zero
// Sequence or empty string allocates nothing) whose data word is replaced.
var (
	sequenceBox   Value = Sequence(nil)
	stringBox     Value = String("")
	byteStringBox Value = ByteString("")
)

// eface is the layout of an interface value: type (or itab) word, then
// the pointer to the boxed data.
type eface struct {
	typ, data unsafe.Pointer
}

// boxIn returns proto's type with data as its boxed value; data must point
// to a value of that type that is never modified afterwards.
func boxIn(proto Value, data unsafe.Pointer) Value {
	v := proto
	(*eface)(unsafe.Pointer(&v)).data = data
	return v
}

// header returns a fresh slot of the header slab.
func (d *binDecoder) header() *Sequence {
	d.hdrsUsed++
	if len(d.hdrs) == cap(d.hdrs) {
		d.hdrs = make([]Sequence, 0, 1+d.slabSize(d.hdrsUsed, d.hintHdrs))
	}
	d.hdrs = d.hdrs[:len(d.hdrs)+1]
	return &d.hdrs[len(d.hdrs)-1]
}

// boxString copies body out of the input as proto's type (String or
// ByteString); the empty string needs no box of its own.
func (d *binDecoder) boxString(proto Value, body []byte) Value {
	n := len(body)
	if n == 0 {
		return proto
	}
	if n > arenaMaxString {
		h := d.header()
		*(*string)(unsafe.Pointer(h)) = string(body)
		return boxIn(proto, unsafe.Pointer(h))
	}
	start := d.arenaCopy(body, 16)
	d.arenaTop -= 16
	h := unsafe.Pointer(&d.arena[:cap(d.arena)][d.arenaTop])
	// Stored as plain words: the collector never reads them (see above).
	*(*[2]uintptr)(h) = [2]uintptr{uintptr(unsafe.Pointer(&d.arena[start])), uintptr(n)}
	return boxIn(proto, h)
}

// resetSlabs starts fresh chunks for a top-level value starting at d.pos,
// and drops the references left on the scratch stack by the previous one.
func (d *binDecoder) resetSlabs() {
	if n := max(d.stackHigh, len(d.stack)); n > 0 {
		clear(d.stack[:n])
		d.stack, d.stackHigh = d.stack[:0], 0
	}
	d.vals, d.recs, d.hdrs = nil, nil, nil
	d.itemsUsed, d.recsUsed, d.hdrsUsed, d.slabStart = 0, 0, 0, d.pos
	d.hintItems, d.hintRecs, d.hintHdrs, d.hintInts, d.hintStrs = 0, 0, 0, 0, 0
	d.sizes, d.nextCompound = d.sizes[:0], 0
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
		return Int(decodeInt64(b))
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

// decodeInt64 reads a body of at most 8 bytes.
func decodeInt64(b []byte) int64 {
	var n int64
	if len(b) > 0 && b[0] >= 0x80 {
		n = -1
	}
	for _, c := range b {
		n = n<<8 | int64(c)
	}
	return n
}

// prescan returns upper bounds on the compound item slots (record labels
// excluded) and the records the value in b needs, for sizing the slabs, and
// bounds the items of each compound: sizes[k] for the k-th compound to open
// (1-based, labels and annotations counted as items; sizes[0] collects the
// top level and means nothing). It validates nothing: tokens are counted and
// atom bodies skipped, without the per-tag dispatch of extentScanner, so
// almost every step is branch-free. On malformed input the counts are merely
// useless, never harmful: every slab chunk is capped at slabMax slots anyway.
// Nesting deeper than maxDepth, which the decoder will reject anyway, leaves
// sizes empty. sizes and open are buffers to reuse.
func prescan(b []byte, sizes, open []int32, maxDepth int) (c slotCounts, _, _ []int32) {
	sizes = append(sizes[:0], 0)
	open = open[:0]
	cur := int32(0) // the innermost open compound's entry in sizes
	p, n := 0, len(b)
	for p+1 < n {
		t := b[p]
		l1 := int(b[p+1])
		// Whether a length follows is worked out from the tag directly
		// rather than from the table, which keeps a memory load off the
		// chain of dependent steps from one token to the next.
		hasLen := 0
		if t-TagInteger < 4 || t == TagDouble {
			hasLen = 1
		}
		info := int(countTable[t])
		c.items += info & countValue
		sizes[cur] += int32(info & countValue)
		if info&countOpen != 0 {
			if len(open) == maxDepth {
				sizes = sizes[:0]
				return c, sizes, open
			}
			open = append(open, cur)
			cur = int32(len(sizes))
			sizes = append(sizes, 0)
		} else if t == TagEnd && len(open) > 0 {
			cur = open[len(open)-1]
			open = open[:len(open)-1]
		}
		c.recs += info >> 1 & 1
		c.hdrs += info >> 3 & 1
		c.ints += info >> 4 & 1
		c.strs += info >> 5 & 1
		if hasLen&(l1>>7) != 0 { // a length of more than one byte
			l, w, ok := scanVarint(b[p+1:])
			if !ok || w == 0 || l > n {
				break
			}
			p += 1 + w + l
			continue
		}
		p += 1 + hasLen*(1+l1)
	}
	if p == n-1 {
		c.items += int(countTable[b[p]]) & countValue
	}
	// The top-level value and record labels take no item slot.
	c.items = max(c.items-1-c.recs, 0)
	return c, sizes, open
}

// slotCounts are countSlots' bounds: compound item slots, records, header
// slots (see header), and integers and strings that may need a box in the
// arena (see boxInt, boxString).
type slotCounts struct {
	items, recs, hdrs, ints, strs int
}

// Bits of countTable.
const (
	countValue  = 1 << 0 // a value starts with this tag
	countRecord = 1 << 1 // a record starts with this tag
	countLength = 1 << 2 // a varint length and that many body bytes follow
	countHeader = 1 << 3 // the value needs a slot in the header slab
	countInt    = 1 << 4 // an integer, which may need a box
	countString = 1 << 5 // a string or byte string, which may need a box
	countOpen   = 1 << 6 // a compound opens
)

var countTable = func() (t [256]uint8) {
	t[TagFalse], t[TagTrue] = countValue, countValue
	for tag := TagInteger; tag <= TagSymbol; tag++ {
		t[tag] = countValue | countLength
	}
	t[TagDouble] = countValue | countLength
	for tag := TagSequence; tag <= TagDictionary; tag++ {
		t[tag] = countValue | countOpen
	}
	t[TagRecord] = countValue | countRecord | countOpen
	t[TagString] |= countString
	t[TagByteString] |= countString
	t[TagSequence] |= countHeader
	t[TagInteger] |= countInt
	return t
}()

// Symbols repeat far more than other atoms (record labels, above all), so a
// decoder that is not part of a BatchDecoder (a pooled one behind
// DecodeBinary, or a stream Decoder) keeps a small direct-mapped cache of
// boxed symbols: a hit costs no allocation at all. Unlike a batch's cache,
// this one outlives the input, so its strings are copied out of the arena:
// a cached symbol must not keep a chunk of some earlier packet's strings
// reachable.
const (
	ownSymbolsSize   = 128 // a power of two
	ownSymbolsMaxLen = 32
)

type ownSymbols [ownSymbolsSize]struct {
	s string
	v Value
}

// symbol is value's symbol case outside a BatchDecoder.
func (d *binDecoder) symbol(start int, body []byte) (Value, error) {
	if len(body) > ownSymbolsMaxLen || len(body) == 0 {
		if !utf8.Valid(body) {
			return nil, d.errAt(ErrSyntax, start, "invalid UTF-8 in string or symbol")
		}
		return Symbol(d.str(body)), nil
	}
	if d.symbols == nil {
		d.symbols = new(ownSymbols)
	}
	// FNV-1a over at most the first and last 8 bytes: cheap, and enough to
	// spread a protocol's vocabulary over the table.
	h := uint32(2166136261)
	for _, c := range body[:min(len(body), 8)] {
		h = (h ^ uint32(c)) * 16777619
	}
	if len(body) > 8 {
		for _, c := range body[len(body)-min(len(body)-8, 8):] {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	e := &d.symbols[(h^h>>15)%ownSymbolsSize]
	if e.v != nil && e.s == string(body) {
		return e.v, nil // validated when it was cached
	}
	if !utf8.Valid(body) {
		return nil, d.errAt(ErrSyntax, start, "invalid UTF-8 in string or symbol")
	}
	e.s = string(body)
	e.v = Symbol(e.s)
	return e.v, nil
}
