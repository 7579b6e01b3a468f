// Package preserves implements the Preserves data language: the value model,
// its total order and equality, the text syntax and the binary syntax.
//
// # Design
//
// Every Preserves value is a [Value]. Atoms are small Go value types that are
// comparable with == exactly when Preserves says they are equal:
//
//	Bool       #t / #f
//	Double     an IEEE-754 binary64 bit pattern (never passed through float
//	           arithmetic, so -0.0 and NaN payloads survive bit-exactly)
//	Int        a SignedInteger that fits in int64 (the fast path)
//	*BigInt    a SignedInteger outside the int64 range; constructors normalise,
//	           so each number has exactly one representation
//	String, ByteString, Symbol   immutable Go strings
//
// Compounds are pointers or slices and are immutable by convention: code that
// receives a value never mutates it, so values may be shared freely between
// goroutines and actors.
//
//	*Record      label (any value) plus fields
//	Sequence     []Value
//	*Set         elements kept sorted in Preserves order, without duplicates
//	*Dictionary  entries kept sorted by key in Preserves order
//	*Embedded    a domain payload (the actor runtime embeds capabilities)
//
// Annotations are not part of the data model. A value carrying annotations is
// wrapped in *Annotated; [Compare], [Equal] and [Hash] look through the
// wrapper, and [Strip] removes wrappers recursively. The text reader can also
// record the source position of every value it reads: in that mode each value
// comes back wrapped in *Annotated with its Pos filled in, so plain values pay
// nothing for positions while the script compiler can ask any node where it
// came from.
//
// # Positions of plain values
//
// Wrapped values suit a reader of source text, not values that travel:
// every consumer would have to look through wrappers. So values leave the
// script language plain, and where they were written is kept beside them
// in a side table (positions.go): [StripRemembering] strips a value read
// with positions and remembers its compounds, [Remember], [NewSetAt] and
// [NewDictionaryAt] remember compounds built elsewhere (the script VM), an
// [Owner] those that live exactly as long as their owner (a compiled
// program's constants), and [PosOf], [ItemPos], [FieldPos], [EntryPos] and [FirstPos] answer
// error messages. Compounds are keyed by identity (values are immutable
// and shared) and held weakly; an atom has no identity, so its place is
// the one its parent remembers for item i. Nothing is remembered, and
// nothing paid, unless someone asks for positions.
//
// # Binary syntax
//
// [EncodeCanonical] writes the canonical form (no annotations; set elements
// and dictionary entries ordered by the bytes of their encodings, which is
// not the value order), the form that is hashed and signed;
// [EncodeBinary] can also keep annotations. [DecodeBinary] reads one value
// from a buffer, [BatchDecoder] many values at known places of one buffer
// (sharing allocations), and [Decoder] and [BinaryReader] read streams.
// Decoding is bounded against hostile input (nesting depth, value length,
// no allocation from a claimed length) and reports malformed input,
// truncated input and exceeded limits as distinct error classes. See
// binary_decode.go, binary_batch.go and binary_stream.go for the design.
package preserves

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Kind is the Preserves kind of a value; the numeric order of kinds is the
// order the Preserves total order uses between values of different kinds.
type Kind uint8

const (
	KindBoolean Kind = iota
	KindDouble
	KindSignedInteger
	KindString
	KindByteString
	KindSymbol
	KindRecord
	KindSequence
	KindSet
	KindDictionary
	KindEmbedded
)

var kindNames = [...]string{"Boolean", "Double", "SignedInteger", "String", "ByteString",
	"Symbol", "Record", "Sequence", "Set", "Dictionary", "Embedded"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Value is a Preserves value. The interface is sealed: only the types of this
// package implement it.
type Value interface {
	// Kind reports the value's kind. For *Annotated it is the kind of the
	// annotated item.
	Kind() Kind
	isValue()
}

// Bool is a Preserves Boolean.
type Bool bool

// Double is a Preserves Double, stored as its IEEE-754 bit pattern.
type Double struct{ bits uint64 }

// NewDouble returns the Double with f's bit pattern.
func NewDouble(f float64) Double { return Double{math.Float64bits(f)} }

// DoubleFromBits returns the Double with the given bit pattern.
func DoubleFromBits(b uint64) Double { return Double{b} }

// Float64 returns the double as a Go float64 (bit-exact).
func (d Double) Float64() float64 { return math.Float64frombits(d.bits) }

// Bits returns the IEEE-754 bit pattern.
func (d Double) Bits() uint64 { return d.bits }

// Int is a Preserves SignedInteger in the int64 range.
type Int int64

// BigInt is a Preserves SignedInteger outside the int64 range. Always build it
// with [NewBigInt], which returns an Int when the number fits.
type BigInt struct{ v *big.Int }

// NewBigInt returns the SignedInteger equal to n: an Int when n fits in an
// int64, otherwise a *BigInt holding a private copy of n.
func NewBigInt(n *big.Int) Value {
	if n.IsInt64() {
		return Int(n.Int64())
	}
	return &BigInt{new(big.Int).Set(n)}
}

// Big returns a fresh copy of the number.
func (b *BigInt) Big() *big.Int { return new(big.Int).Set(b.v) }

// String is a Preserves String.
type String string

// ByteString is a Preserves ByteString; the Go string holds the raw octets.
type ByteString string

// Symbol is a Preserves Symbol.
type Symbol string

// Record is a Preserves Record. Treat as immutable.
type Record struct {
	Label  Value
	Fields []Value
}

// NewRecord returns a record with the given label and fields.
func NewRecord(label Value, fields ...Value) *Record {
	return &Record{Label: label, Fields: fields}
}

// Rec returns a record whose label is the symbol named label.
func Rec(label string, fields ...Value) *Record {
	return &Record{Label: Symbol(label), Fields: fields}
}

// Sequence is a Preserves Sequence. Treat as immutable.
type Sequence []Value

// Set is a Preserves Set. Its elements are kept sorted in Preserves order with
// duplicates removed, so iteration is deterministic.
type Set struct{ elems []Value }

// NewSet returns the set of the given elements (duplicates are dropped). It
// takes ownership of the slice.
func NewSet(elems ...Value) *Set {
	slices.SortStableFunc(elems, Compare)
	return &Set{elems: slices.CompactFunc(elems, func(a, b Value) bool { return Compare(a, b) == 0 })}
}

// Len returns the number of elements.
func (s *Set) Len() int { return len(s.elems) }

// Elems returns the elements in ascending Preserves order. Do not modify.
func (s *Set) Elems() []Value { return s.elems }

// Contains reports whether v is an element of s.
func (s *Set) Contains(v Value) bool {
	i := sort.Search(len(s.elems), func(i int) bool { return Compare(s.elems[i], v) >= 0 })
	return i < len(s.elems) && Compare(s.elems[i], v) == 0
}

// DictEntry is one key/value pair of a Dictionary.
type DictEntry struct {
	Key   Value
	Value Value
}

// Dictionary is a Preserves Dictionary with entries kept sorted by key.
type Dictionary struct{ entries []DictEntry }

// NewDictionary returns the dictionary of the given entries. When a key
// repeats, the last entry wins. It takes ownership of the slice.
func NewDictionary(entries ...DictEntry) *Dictionary {
	// Entries already in strictly increasing key order (as decoders and
	// most Go callers produce them) need neither the sort, which
	// allocates, nor the deduplication.
	sorted := true
	for i := 1; i < len(entries) && sorted; i++ {
		sorted = Compare(entries[i-1].Key, entries[i].Key) < 0
	}
	if sorted {
		return &Dictionary{entries: entries}
	}
	sort.SliceStable(entries, func(i, j int) bool { return Compare(entries[i].Key, entries[j].Key) < 0 })
	out := entries[:0]
	for _, e := range entries {
		if len(out) > 0 && Compare(out[len(out)-1].Key, e.Key) == 0 {
			out[len(out)-1] = e
			continue
		}
		out = append(out, e)
	}
	return &Dictionary{entries: out}
}

// NewSortedDictionary returns the dictionary of entries, which the caller
// has already put in strictly increasing key order (Compare) without
// duplicate keys, as a generator sorting a Go map's entries with a
// typed comparison does: it neither checks nor copies entries (the
// dictionary keeps the slice). Entries out of order make a dictionary that
// Get and Equal misjudge; when in doubt use NewDictionary.
func NewSortedDictionary(entries []DictEntry) *Dictionary {
	return &Dictionary{entries: entries}
}

// Dict returns the dictionary of alternating keys and values, the way a
// dictionary is written: Dict(k1, v1, k2, v2, …). An odd number of
// arguments is a programming error and panics.
func Dict(kvs ...Value) *Dictionary {
	if len(kvs)%2 != 0 {
		panic("preserves.Dict: odd number of arguments")
	}
	es := make([]DictEntry, len(kvs)/2)
	for i := range es {
		es[i] = DictEntry{Key: kvs[2*i], Value: kvs[2*i+1]}
	}
	return NewDictionary(es...)
}

// Len returns the number of entries.
func (d *Dictionary) Len() int { return len(d.entries) }

// Entries returns the entries in ascending key order. Do not modify.
func (d *Dictionary) Entries() []DictEntry { return d.entries }

// Get looks up key.
func (d *Dictionary) Get(key Value) (Value, bool) {
	i := sort.Search(len(d.entries), func(i int) bool { return Compare(d.entries[i].Key, key) >= 0 })
	if i < len(d.entries) && Compare(d.entries[i].Key, key) == 0 {
		return d.entries[i].Value, true
	}
	return nil, false
}

// Embedded wraps a domain-specific payload. A payload that is itself a Value
// is compared and hashed as a value; a payload implementing EmbeddedPayload
// supplies its own order and hash; any other payload is compared by identity.
type Embedded struct{ Payload any }

// NewEmbedded wraps p.
func NewEmbedded(p any) *Embedded { return &Embedded{Payload: p} }

// EmbeddedPayload lets a domain type (such as a capability) define the order
// and hash of embedded values carrying it. CompareEmbedded is only called with
// another payload of the same dynamic type.
type EmbeddedPayload interface {
	CompareEmbedded(other any) int
	HashEmbedded() uint64
}

// Pos is a source position. Line and Col are 1-based; Col counts Unicode code
// points. The zero Pos means "unknown".
type Pos struct {
	File   string
	Offset int
	Line   int
	Col    int
}

// IsValid reports whether p names a place.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Pos returns p. A struct that embeds a Pos under a field name of its own,
// through an alias (type At = preserves.Pos), thereby has a Pos method: the
// script packages' syntax trees give every node its position that way.
func (p Pos) Pos() Pos { return p }

// Prefix returns msg preceded by "p: " when p names a file or a place, and
// msg alone otherwise: the form of every positioned error message.
func (p Pos) Prefix(msg string) string {
	if p.File == "" && !p.IsValid() {
		return msg
	}
	return p.String() + ": " + msg
}

// String renders file:line:col (omitting what is unknown).
func (p Pos) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.IsValid() {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%d:%d", p.Line, p.Col)
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// Annotated carries annotations and/or a source position for Item, which is
// never itself *Annotated.
type Annotated struct {
	Anns []Value
	// Comment[i] is true when Anns[i] came from a `#` comment line (it is then
	// a String), so a formatter can write it back as a comment.
	Comment []bool
	Pos     Pos
	Item    Value
}

// Annotate wraps v with annotations anns (merging with v's own).
func Annotate(v Value, anns ...Value) Value {
	if a, ok := v.(*Annotated); ok {
		n := *a
		n.Anns = append(append([]Value(nil), anns...), a.Anns...)
		if a.Comment != nil {
			n.Comment = append(make([]bool, len(anns)), a.Comment...)
		}
		return &n
	}
	return &Annotated{Anns: anns, Item: v}
}

// Unwrap removes a top-level annotation wrapper, if any.
func Unwrap(v Value) Value {
	if a, ok := v.(*Annotated); ok {
		return a.Item
	}
	return v
}

// Strip removes annotations recursively. Values without annotations are
// returned as they are, without copying.
func Strip(v Value) Value {
	switch x := v.(type) {
	case *Annotated:
		return Strip(x.Item)
	case *Record:
		// Labels may be uncomparable (e.g. a Sequence), so test for
		// annotations rather than comparing the stripped label with ==.
		fs, changed := stripSlice(x.Fields)
		if !changed && !HasAnnotations(x.Label) {
			return x
		}
		return &Record{Label: Strip(x.Label), Fields: fs}
	case Sequence:
		fs, changed := stripSlice(x)
		if !changed {
			return x
		}
		return Sequence(fs)
	case *Set:
		fs, changed := stripSlice(x.elems)
		if !changed {
			return x
		}
		return &Set{elems: fs} // order is unaffected by annotations
	case *Dictionary:
		if !HasAnnotations(x) {
			return x
		}
		es := make([]DictEntry, len(x.entries))
		for i, e := range x.entries {
			es[i] = DictEntry{Strip(e.Key), Strip(e.Value)}
		}
		return &Dictionary{entries: es}
	case *Embedded:
		if pv, ok := x.Payload.(Value); ok && HasAnnotations(pv) {
			return &Embedded{Payload: Strip(pv)}
		}
		return x
	}
	return v
}

func stripSlice(vs []Value) ([]Value, bool) {
	i := slices.IndexFunc(vs, HasAnnotations)
	if i < 0 {
		return vs, false
	}
	out := make([]Value, len(vs))
	copy(out, vs[:i])
	for j := i; j < len(vs); j++ {
		out[j] = Strip(vs[j])
	}
	return out, true
}

// HasAnnotations reports whether v carries an *Annotated wrapper anywhere.
func HasAnnotations(v Value) bool {
	if _, ok := v.(*Annotated); ok {
		return true
	}
	return AnyPart(v, HasAnnotations)
}

// AnyPart reports whether pred holds for one of the values v is built
// from: a record's label and fields, the items of a sequence or set, the
// keys and values of a dictionary, an embedded value's payload when that
// is a Value. It does not look through annotations.
func AnyPart(v Value, pred func(Value) bool) bool {
	switch x := v.(type) {
	case *Record:
		return pred(x.Label) || slices.ContainsFunc(x.Fields, pred)
	case Sequence:
		return slices.ContainsFunc(x, pred)
	case *Set:
		return slices.ContainsFunc(x.elems, pred)
	case *Dictionary:
		for _, e := range x.entries {
			if pred(e.Key) || pred(e.Value) {
				return true
			}
		}
	case *Embedded:
		if pv, ok := x.Payload.(Value); ok {
			return pred(pv)
		}
	}
	return false
}

func (Bool) Kind() Kind        { return KindBoolean }
func (Double) Kind() Kind      { return KindDouble }
func (Int) Kind() Kind         { return KindSignedInteger }
func (*BigInt) Kind() Kind     { return KindSignedInteger }
func (String) Kind() Kind      { return KindString }
func (ByteString) Kind() Kind  { return KindByteString }
func (Symbol) Kind() Kind      { return KindSymbol }
func (*Record) Kind() Kind     { return KindRecord }
func (Sequence) Kind() Kind    { return KindSequence }
func (*Set) Kind() Kind        { return KindSet }
func (*Dictionary) Kind() Kind { return KindDictionary }
func (*Embedded) Kind() Kind   { return KindEmbedded }
func (a *Annotated) Kind() Kind {
	return a.Item.Kind()
}

func (Bool) isValue()        {}
func (Double) isValue()      {}
func (Int) isValue()         {}
func (*BigInt) isValue()     {}
func (String) isValue()      {}
func (ByteString) isValue()  {}
func (Symbol) isValue()      {}
func (*Record) isValue()     {}
func (Sequence) isValue()    {}
func (*Set) isValue()        {}
func (*Dictionary) isValue() {}
func (*Embedded) isValue()   {}
func (*Annotated) isValue()  {}

// Compare implements the Preserves total order: it returns -1, 0 or +1.
// Annotations are ignored.
func Compare(a, b Value) int {
	a, b = Unwrap(a), Unwrap(b)
	ka, kb := a.Kind(), b.Kind()
	if ka != kb {
		if ka < kb {
			return -1
		}
		return 1
	}
	switch x := a.(type) {
	case Bool:
		y := b.(Bool)
		switch {
		case x == y:
			return 0
		case !bool(x):
			return -1
		}
		return 1
	case Double:
		return cmp.Compare(doubleKey(x.bits), doubleKey(b.(Double).bits))
	case Int:
		if y, ok := b.(Int); ok {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
		return -b.(*BigInt).v.Sign() // a big int is beyond every int64
	case *BigInt:
		if y, ok := b.(*BigInt); ok {
			return x.v.Cmp(y.v)
		}
		return x.v.Sign()
	case String:
		return strings.Compare(string(x), string(b.(String)))
	case ByteString:
		return strings.Compare(string(x), string(b.(ByteString)))
	case Symbol:
		return strings.Compare(string(x), string(b.(Symbol)))
	case *Record:
		y := b.(*Record)
		if x == y {
			return 0
		}
		if c := Compare(x.Label, y.Label); c != 0 {
			return c
		}
		return compareSlices(x.Fields, y.Fields)
	case Sequence:
		return compareSlices(x, b.(Sequence))
	case *Set:
		y := b.(*Set)
		if x == y {
			return 0
		}
		return compareSlices(x.elems, y.elems)
	case *Dictionary:
		y := b.(*Dictionary)
		if x == y {
			return 0
		}
		n := min(len(x.entries), len(y.entries))
		for i := 0; i < n; i++ {
			if c := Compare(x.entries[i].Key, y.entries[i].Key); c != 0 {
				return c
			}
			if c := Compare(x.entries[i].Value, y.entries[i].Value); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(x.entries), len(y.entries))
	case *Embedded:
		return compareEmbedded(x.Payload, b.(*Embedded).Payload)
	}
	panic(fmt.Sprintf("preserves: Compare: unexpected value type %T", a))
}

func doubleKey(bits uint64) uint64 {
	if bits>>63 == 1 {
		return ^bits
	}
	return bits | 1<<63
}

func compareSlices(xs, ys []Value) int {
	n := min(len(xs), len(ys))
	for i := 0; i < n; i++ {
		if c := Compare(xs[i], ys[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(xs), len(ys))
}

func compareEmbedded(a, b any) int {
	if av, ok := a.(Value); ok {
		if bv, ok := b.(Value); ok {
			return Compare(av, bv)
		}
		return -1 // value payloads sort before domain payloads
	}
	if _, ok := b.(Value); ok {
		return 1
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return strings.Compare(typeName(ta), typeName(tb))
	}
	if ep, ok := a.(EmbeddedPayload); ok {
		return ep.CompareEmbedded(b)
	}
	if ta != nil && ta.Comparable() && a == b {
		return 0
	}
	// Identity order for opaque payloads: stable within one process.
	return cmp.Compare(uint64(Identity(a)), uint64(Identity(b)))
}

func typeName(t reflect.Type) string {
	if t == nil {
		return ""
	}
	return t.PkgPath() + "." + t.String()
}

// Identity identifies an opaque embedded payload (neither a Value nor an
// EmbeddedPayload) by its pointer, for reference kinds (pointers, maps,
// channels, functions, slices): stable for the process lifetime, which is
// what Compare's order, Hash and the dataspace's assertion keys need. Any
// other payload has identity 0, and is told apart only by its type and,
// when comparable, by ==.
func Identity(x any) uintptr {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Slice:
		return v.Pointer()
	}
	return 0
}

// Equal reports whether a and b are the same Preserves value (annotations
// ignored).
func Equal(a, b Value) bool {
	a, b = Unwrap(a), Unwrap(b)
	switch x := a.(type) {
	case String, Symbol, Int, Bool, Double, ByteString:
		// Atoms of comparable Go types: the interfaces are equal when
		// the kinds and the values are.
		return a == b
	case *Record:
		y, ok := b.(*Record)
		if !ok || len(x.Fields) != len(y.Fields) {
			return false
		}
		if x == y {
			return true
		}
		if !Equal(x.Label, y.Label) {
			return false
		}
		for i := range x.Fields {
			if !Equal(x.Fields[i], y.Fields[i]) {
				return false
			}
		}
		return true
	case Sequence:
		y, ok := b.(Sequence)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a.Kind() == b.Kind() && Compare(a, b) == 0
}

var hashSeed = maphash.MakeSeed()

// Hash returns a hash of v consistent with Equal (annotations ignored). It is
// stable within one process only.
func Hash(v Value) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	hashInto(&h, v)
	return h.Sum64()
}

func hashInto(h *maphash.Hash, v Value) {
	v = Unwrap(v)
	h.WriteByte(byte(v.Kind()))
	switch x := v.(type) {
	case Bool:
		if x {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
	case Double:
		writeU64(h, x.bits)
	case Int:
		writeU64(h, uint64(x))
	case *BigInt:
		h.Write(x.v.Bytes())
		h.WriteByte(byte(x.v.Sign() + 1))
	case String:
		h.WriteString(string(x))
	case ByteString:
		h.WriteString(string(x))
	case Symbol:
		h.WriteString(string(x))
	case *Record:
		hashInto(h, x.Label)
		writeU64(h, uint64(len(x.Fields)))
		for _, f := range x.Fields {
			hashInto(h, f)
		}
	case Sequence:
		writeU64(h, uint64(len(x)))
		for _, f := range x {
			hashInto(h, f)
		}
	case *Set:
		writeU64(h, uint64(len(x.elems)))
		for _, f := range x.elems {
			hashInto(h, f)
		}
	case *Dictionary:
		writeU64(h, uint64(len(x.entries)))
		for _, e := range x.entries {
			hashInto(h, e.Key)
			hashInto(h, e.Value)
		}
	case *Embedded:
		switch p := x.Payload.(type) {
		case Value:
			hashInto(h, p)
		case EmbeddedPayload:
			writeU64(h, p.HashEmbedded())
		default:
			writeU64(h, uint64(Identity(p)))
		}
	}
}

func writeU64(h *maphash.Hash, u uint64) {
	var b [8]byte
	for i := range b {
		b[i] = byte(u >> (8 * i))
	}
	h.Write(b[:])
}

// Bytes returns a copy of the octets of a ByteString.
func (b ByteString) Bytes() []byte { return []byte(b) }

// ByteStringFrom copies bs into a ByteString.
func ByteStringFrom(bs []byte) ByteString { return ByteString(bytes.Clone(bs)) }

// HasEmbedded reports whether v contains an embedded value anywhere
// (annotations are not searched: they are not part of the value). Values
// with embedded parts have no canonical encoding to sign and no text form
// that reads back as the same value.
func HasEmbedded(v Value) bool {
	v = Unwrap(v)
	if _, ok := v.(*Embedded); ok {
		return true
	}
	return AnyPart(v, HasEmbedded)
}
