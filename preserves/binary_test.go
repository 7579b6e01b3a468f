package preserves

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// Test helpers in this file are prefixed "bin" so they cannot collide with
// helpers of the text-syntax tests in the same package.

const binSamplesPath = "../testdata/samples.bin"

// binCase is one conformance test case read from samples.bin.
type binCase struct {
	name  string
	kind  string // Test, NondeterministicTest, DecodeError, …
	bytes []byte // binary (Test kinds) or bytes (Decode kinds); nil for Parse kinds
	av    Value  // annotatedValue (Test kinds)
}

func binReadSamples(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(binSamplesPath)
	if err != nil {
		t.Fatalf("reading conformance suite: %v", err)
	}
	return b
}

func binLoadCases(t testing.TB) []binCase {
	t.Helper()
	v, err := DecodeBinary(binReadSamples(t), DecodeOptions{Annotations: true})
	if err != nil {
		t.Fatalf("decoding samples.bin: %v", err)
	}
	rec, ok := Unwrap(v).(*Record)
	if !ok || !Equal(rec.Label, Symbol("TestCases")) || len(rec.Fields) != 1 {
		t.Fatalf("samples.bin: unexpected top-level value %T", Unwrap(v))
	}
	dict, ok := Unwrap(rec.Fields[0]).(*Dictionary)
	if !ok {
		t.Fatalf("samples.bin: TestCases field is %T", Unwrap(rec.Fields[0]))
	}
	var cases []binCase
	for _, e := range dict.Entries() {
		name, _ := Strip(e.Key).(Symbol)
		tc, ok := Unwrap(e.Value).(*Record)
		if !ok {
			t.Fatalf("case %s: not a record", name)
		}
		label, _ := Strip(tc.Label).(Symbol)
		c := binCase{name: string(name), kind: string(label)}
		switch c.kind {
		case "Test", "NondeterministicTest":
			c.bytes = []byte(Strip(tc.Fields[0]).(ByteString))
			c.av = tc.Fields[1]
		case "DecodeError", "DecodeShort", "DecodeEOF":
			c.bytes = []byte(Strip(tc.Fields[0]).(ByteString))
		}
		cases = append(cases, c)
	}
	return cases
}

// binAnnEqual is equality that also requires equal annotations, in order, at
// every node (spec §5.2 "Equality in the harness").
func binAnnEqual(a, b Value) bool {
	var aa, ba []Value
	if x, ok := a.(*Annotated); ok {
		aa = x.Anns
	}
	if x, ok := b.(*Annotated); ok {
		ba = x.Anns
	}
	if len(aa) != len(ba) {
		return false
	}
	for i := range aa {
		if !binAnnEqual(aa[i], ba[i]) {
			return false
		}
	}
	a, b = Unwrap(a), Unwrap(b)
	if !Equal(a, b) {
		return false
	}
	switch x := a.(type) {
	case *Record:
		y := b.(*Record)
		if !binAnnEqual(x.Label, y.Label) {
			return false
		}
		for i := range x.Fields {
			if !binAnnEqual(x.Fields[i], y.Fields[i]) {
				return false
			}
		}
	case Sequence:
		y := b.(Sequence)
		for i := range x {
			if !binAnnEqual(x[i], y[i]) {
				return false
			}
		}
	case *Set:
		// Both are sorted by stripped value and equal, so elements pair up
		// by index.
		y := b.(*Set)
		for i := range x.Elems() {
			if !binAnnEqual(x.Elems()[i], y.Elems()[i]) {
				return false
			}
		}
	case *Dictionary:
		y := b.(*Dictionary)
		for i, e := range x.Entries() {
			f := y.Entries()[i]
			if !binAnnEqual(e.Key, f.Key) || !binAnnEqual(e.Value, f.Value) {
				return false
			}
		}
	case *Embedded:
		y := b.(*Embedded)
		pa, ok1 := x.Payload.(Value)
		pb, ok2 := y.Payload.(Value)
		if ok1 && ok2 {
			return binAnnEqual(pa, pb)
		}
	}
	return true
}

func binHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func binClass(err error) error {
	for _, c := range []error{ErrSyntax, ErrUnexpectedEOF, ErrEmpty, ErrLimit} {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

func TestBinaryConformance(t *testing.T) {
	cases := binLoadCases(t)
	if len(cases) != 186 {
		t.Fatalf("got %d cases, want 186", len(cases))
	}
	counts := map[string]int{}
	for _, c := range cases {
		counts[c.kind]++
		t.Run(c.name, func(t *testing.T) {
			switch c.kind {
			case "Test", "NondeterministicTest":
				st := Strip(c.av)
				// 1: canonical encoder and decoder agree.
				canon := EncodeCanonical(c.av)
				if got, err := DecodeBinary(canon, DecodeOptions{}); err != nil || !Equal(got, st) {
					t.Errorf("1: decode(encodeCanonical(av)) = %v, %v", got, err)
				}
				// 2: decoder reads the given bytes.
				if got, err := DecodeBinary(c.bytes, DecodeOptions{}); err != nil || !Equal(got, st) {
					t.Errorf("2: decode(binary) = %v, %v", got, err)
				}
				// 3: decoder keeps annotations.
				if got, err := DecodeBinary(c.bytes, DecodeOptions{Annotations: true}); err != nil || !binAnnEqual(got, c.av) {
					t.Errorf("3: decode(binary) with annotations = %v, %v", got, err)
				}
				// 4 and 7: annotated encoder.
				enc, err := EncodeBinary(c.av, EncodeOptions{Annotations: true})
				if err != nil {
					t.Fatalf("annotated encode: %v", err)
				}
				if got, err := DecodeBinary(enc, DecodeOptions{Annotations: true}); err != nil || !binAnnEqual(got, c.av) {
					t.Errorf("4: decode(annotatedBinary(av)) = %v, %v", got, err)
				}
				if !bytes.Equal(enc, c.bytes) {
					t.Errorf("7: annotatedBinary(av) = % x, want % x", enc, c.bytes)
				}
				// Canonical form of the stripped value matches too, and is
				// what the canonical encoder gives for av.
				if st2 := EncodeCanonical(st); !bytes.Equal(st2, canon) {
					t.Errorf("encodeCanonical(strip(av)) = % x, want % x", st2, canon)
				}
			case "DecodeError", "DecodeShort", "DecodeEOF":
				want := map[string]error{"DecodeError": ErrSyntax, "DecodeShort": ErrUnexpectedEOF, "DecodeEOF": ErrEmpty}[c.kind]
				_, err := DecodeBinary(c.bytes, DecodeOptions{Annotations: true})
				if !errors.Is(err, want) {
					t.Errorf("decode(% x) error %v, want class %v", c.bytes, err, want)
				}
				var pe *Error
				if !errors.As(err, &pe) {
					t.Errorf("error %T is not *Error", err)
				}
			}
		})
	}
	want := map[string]int{"Test": 127, "NondeterministicTest": 6, "ParseError": 37, "ParseShort": 7,
		"ParseEOF": 1, "DecodeError": 6, "DecodeShort": 1, "DecodeEOF": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s cases, want %d", counts[k], k, n)
		}
	}
}

// TestBinarySamplesRoundTrip: samples.bin is exactly the annotated encoding
// of its own decoding, which covers canonical ordering of a 186-entry
// dictionary with annotated keys and values.
func TestBinarySamplesRoundTrip(t *testing.T) {
	src := binReadSamples(t)
	v, err := DecodeBinary(src, DecodeOptions{Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeBinary(v, EncodeOptions{Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, src) {
		t.Fatalf("annotated re-encoding differs from samples.bin (len %d vs %d)", len(out), len(src))
	}
	plain, err := DecodeBinary(src, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(plain, v) || HasAnnotations(plain) {
		t.Fatal("decoding without annotations must give the stripped value")
	}
	if !bytes.Equal(EncodeCanonical(plain), EncodeCanonical(v)) {
		t.Fatal("canonical encoding depends on annotations")
	}
}

func TestBinaryIntegers(t *testing.T) {
	two136 := new(big.Int).Lsh(big.NewInt(1), 136)
	tests := []struct {
		n   Value
		hex string
	}{
		{Int(0), "B0 00"},
		{Int(-1), "B0 01 FF"},
		{Int(127), "B0 01 7F"},
		{Int(-128), "B0 01 80"},
		{Int(128), "B0 02 00 80"},
		{Int(-129), "B0 02 FF 7F"},
		{Int(255), "B0 02 00 FF"},
		{Int(-256), "B0 02 FF 00"},
		{Int(32768), "B0 03 00 80 00"},
		{Int(-257), "B0 02 FE FF"},
		{Int(2500000000), "B0 05 00 95 02 F9 00"},
		{NewBigInt(two136), "B0 12 01" + strings.Repeat("00", 17)},
		{Int(math.MaxInt64), "B0 08 7F FF FF FF FF FF FF FF"},
		{Int(math.MinInt64), "B0 08 80 00 00 00 00 00 00 00"},
		{NewBigInt(new(big.Int).Add(big.NewInt(math.MaxInt64), big.NewInt(1))), "B0 09 00 80 00 00 00 00 00 00 00"},
		{NewBigInt(new(big.Int).Sub(big.NewInt(math.MinInt64), big.NewInt(1))), "B0 09 FF 7F FF FF FF FF FF FF FF"},
		{NewBigInt(new(big.Int).Neg(two136)), "B0 12 FF" + strings.Repeat("00", 17)},
	}
	for _, tt := range tests {
		want := binHex(tt.hex)
		if got := EncodeCanonical(tt.n); !bytes.Equal(got, want) {
			t.Errorf("encode %v = % X, want % X", tt.n, got, want)
		}
		got, err := DecodeBinary(want, DecodeOptions{})
		if err != nil || !Equal(got, tt.n) {
			t.Errorf("decode % X = %v, %v; want %v", want, got, err, tt.n)
		}
		// Values in int64 range always come back as Int (the fast path).
		_, gotBig := got.(*BigInt)
		_, wantBig := tt.n.(*BigInt)
		if gotBig != wantBig {
			t.Errorf("decode % X gave %T, want %T", want, got, tt.n)
		}
	}
	// Every width boundary encodes minimally and round-trips.
	for shift := 0; shift < 64; shift++ {
		for _, n := range []int64{1 << shift, -(1 << shift), 1<<shift - 1, -(1 << shift) - 1} {
			enc := EncodeCanonical(Int(n))
			want := EncodeCanonical(NewBigIntFromInt64ForTest(n))
			if !bytes.Equal(enc, want) {
				t.Errorf("encode %d = % X, big path gives % X", n, enc, want)
			}
			if got, err := DecodeBinary(enc, DecodeOptions{}); err != nil || got != Int(n) {
				t.Errorf("decode(encode(%d)) = %v, %v", n, got, err)
			}
		}
	}
	// Non-minimal bodies are accepted and normalised (spec §4.3).
	for _, h := range []string{"B0 01 00", "B0 02 00 01", "B0 0A 00 00 00 00 00 00 00 00 00 05", "B0 0A FF FF FF FF FF FF FF FF FF FB"} {
		got, err := DecodeBinary(binHex(h), DecodeOptions{})
		if err != nil {
			t.Errorf("decode %s: %v", h, err)
			continue
		}
		if _, ok := got.(Int); !ok {
			t.Errorf("decode %s = %T, want Int", h, got)
		}
	}
}

// NewBigIntFromInt64ForTest forces the *big.Int encoding path for n by
// building the BigInt directly, bypassing NewBigInt's normalisation.
func NewBigIntFromInt64ForTest(n int64) *BigInt { return &BigInt{big.NewInt(n)} }

func TestBinaryDoubles(t *testing.T) {
	for _, bits := range []uint64{
		0x0000000000000000, 0x8000000000000000, // +0.0, -0.0: distinct values
		0x3FF0000000000000, 0xBFF0000000000000,
		0x7FF0000000000000, 0xFFF0000000000000, // ±Inf
		0x7FF0000000000001, 0x7FF8000000000001, // signalling and quiet NaN payloads
		0xFFF8000000000111, 0x7FFFFFFFFFFFFFFF, 0x0000000000000001,
	} {
		d := DoubleFromBits(bits)
		enc := EncodeCanonical(d)
		want := append([]byte{0x87, 0x08}, byte(bits>>56), byte(bits>>48), byte(bits>>40), byte(bits>>32),
			byte(bits>>24), byte(bits>>16), byte(bits>>8), byte(bits))
		if !bytes.Equal(enc, want) {
			t.Errorf("encode %016x = % X", bits, enc)
		}
		got, err := DecodeBinary(enc, DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := got.(Double); !ok || g.Bits() != bits {
			t.Errorf("decode %016x = %#v", bits, got)
		}
	}
	if Equal(NewDouble(0), NewDouble(math.Copysign(0, -1))) {
		t.Error("+0.0 and -0.0 must differ")
	}
	for _, h := range []string{"87 04 3F 80 00 00", "87 00", "87 09 00 00 00 00 00 00 00 00 00"} {
		if _, err := DecodeBinary(binHex(h), DecodeOptions{}); !errors.Is(err, ErrSyntax) {
			t.Errorf("decode %s: %v, want syntax error", h, err)
		}
	}
	if _, err := DecodeBinary(binHex("87 08 3F F0"), DecodeOptions{}); !errors.Is(err, ErrUnexpectedEOF) {
		t.Errorf("short double: %v", err)
	}
}

func TestBinaryVarints(t *testing.T) {
	long := strings.Repeat("x", 130)
	enc := EncodeCanonical(Symbol(long))
	if !bytes.Equal(enc[:3], []byte{0xB3, 0x82, 0x01}) {
		t.Errorf("130-byte symbol header % X", enc[:3])
	}
	if got := appendVarint(nil, 1000000000); !bytes.Equal(got, binHex("80 94 EB DC 03")) {
		t.Errorf("varint(1e9) = % X", got)
	}
	tests := []struct {
		hex   string
		class error
		off   int
	}{
		{"B1 81 00 61", ErrSyntax, 1},                       // 1 written in two bytes
		{"B1 80 80 00", ErrSyntax, 1},                       // 0 written in three bytes
		{"B2 80 80 80 80 80 80 80 80 80 02", ErrSyntax, 1},  // overflows 64 bits
		{"B2 FF FF FF FF FF FF FF FF FF 01", ErrLimit, 1},   // 2^64-1: beyond any limit
		{"B2 FF FF FF FF 0F", ErrLimit, 1},                  // 4 GiB claimed, nothing there
		{"B1 82", ErrUnexpectedEOF, 2},                      // varint cut short
		{"B1 05 61 62", ErrUnexpectedEOF, 4},                // body cut short
		{"B1 02 C3 28", ErrSyntax, 0},                       // invalid UTF-8
		{"B3 03 ED A0 80", ErrSyntax, 0},                    // encoded surrogate
		{"B0 00 B0 00", ErrSyntax, 2},                       // trailing bytes
		{"", ErrEmpty, 0},                                   // nothing
		{"84", ErrSyntax, 0},                                // end marker at top level
		{"B5 80 80", ErrUnexpectedEOF, 3},                   // missing end marker
		{"B4 84", ErrSyntax, 0},                             // record without label
		{"B7 B0 01 01 B0 01 02 B0 01 03 84", ErrSyntax, 10}, // dict5: 84 where a value goes
		{"B6 B0 01 01 B0 01 01 84", ErrSyntax, 0},           // duplicate set element
		{"B7 B0 00 80 85 80 B0 00 81 84", ErrSyntax, 0},     // duplicate key (annotation ignored)
		{"85 80 84", ErrSyntax, 2},                          // 84 after annotation
		{"85 80", ErrUnexpectedEOF, 2},                      // annotation with nothing after it
		{"10", ErrSyntax, 0},                                // invalid tag
		{"B5 B0 00 88 84", ErrSyntax, 3},                    // invalid tag inside
		{"86", ErrUnexpectedEOF, 1},                         // embedded without payload
	}
	for _, tt := range tests {
		in := binHex(tt.hex)
		v, err := DecodeBinary(in, DecodeOptions{})
		if !errors.Is(err, tt.class) {
			t.Errorf("decode %q = %v, %v; want class %v", tt.hex, v, err, tt.class)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("decode %q: error %T is not *Error", tt.hex, err)
			continue
		}
		if pe.Pos.Offset != tt.off {
			t.Errorf("decode %q: offset %d, want %d (%v)", tt.hex, pe.Pos.Offset, tt.off, err)
		}
	}
}

func TestBinaryCanonicalOrder(t *testing.T) {
	// Byte order of encodings, not value order: length before content.
	s := NewSet(String("aa"), String("b"), Int(256), Int(-1), Int(1),
		NewDouble(-1), NewDouble(1), NewEmbedded(Int(0)), Bool(true))
	got := EncodeCanonical(s)
	want := binHex("B6 81 86 B0 00 87 08 3FF0000000000000 87 08 BFF0000000000000" +
		"B0 01 01 B0 01 FF B0 02 01 00 B1 01 62 B1 02 61 61 84")
	if !bytes.Equal(got, want) {
		t.Errorf("set encoding\n got % X\nwant % X", got, want)
	}
	d := NewDictionary(DictEntry{String("Title"), Int(1)}, DictEntry{String("IDs"), Int(2)},
		DictEntry{String("Animated"), Int(3)})
	got = EncodeCanonical(d)
	want = binHex("B7 B1 03 494473 B0 01 02 B1 05 5469746C65 B0 01 01 B1 08 416E696D61746564 B0 01 03 84")
	if !bytes.Equal(got, want) {
		t.Errorf("dict encoding\n got % X\nwant % X", got, want)
	}
	// Annotated mode orders by the stripped key but keeps annotations.
	ad := NewDictionary(DictEntry{Annotate(String("aa"), Symbol("z")), Int(1)}, DictEntry{String("b"), Int(2)})
	got, err := EncodeBinary(ad, EncodeOptions{Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	want = binHex("B7 B1 01 62 B0 01 02 85 B3 01 7A B1 02 6161 B0 01 01 84")
	if !bytes.Equal(got, want) {
		t.Errorf("annotated dict\n got % X\nwant % X", got, want)
	}
	// Decoders accept any order and build the same value.
	back, err := DecodeBinary(binHex("B6 B1 02 61 61 B1 01 62 84"), DecodeOptions{})
	if err != nil || !Equal(back, NewSet(String("b"), String("aa"))) {
		t.Errorf("unordered set: %v, %v", back, err)
	}
}

func TestBinaryAnnotations(t *testing.T) {
	// @@1 2 @@3 4 5 (annotation3)
	in := binHex("85 85 B0 01 01 B0 01 02 85 85 B0 01 03 B0 01 04 B0 01 05")
	v, err := DecodeBinary(in, DecodeOptions{Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := v.(*Annotated)
	if !ok || len(a.Anns) != 2 || a.Item != Int(5) {
		t.Fatalf("got %#v", v)
	}
	for i, want := range [][2]Int{{1, 2}, {3, 4}} {
		inner, ok := a.Anns[i].(*Annotated)
		if !ok || len(inner.Anns) != 1 || inner.Anns[0] != want[0] || inner.Item != want[1] {
			t.Errorf("annotation %d = %#v", i, a.Anns[i])
		}
	}
	out, err := EncodeBinary(v, EncodeOptions{Annotations: true})
	if err != nil || !bytes.Equal(out, in) {
		t.Errorf("re-encode = % X, %v", out, err)
	}
	if got := EncodeCanonical(v); !bytes.Equal(got, binHex("B0 01 05")) {
		t.Errorf("canonical drops annotations: % X", got)
	}
	plain, err := DecodeBinary(in, DecodeOptions{})
	if err != nil || plain != Int(5) {
		t.Errorf("without annotations: %#v, %v", plain, err)
	}
}

type binRef struct{ id int }

func TestBinaryEmbedded(t *testing.T) {
	v := Sequence{NewEmbedded(&binRef{7}), NewEmbedded(NewEmbedded(Int(0)))}
	if _, err := EncodeBinary(v, EncodeOptions{}); err == nil {
		t.Fatal("opaque payload without a hook must fail")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("EncodeCanonical of an opaque payload must panic")
			}
		}()
		EncodeCanonical(v)
	}()
	enc, err := EncodeBinary(v, EncodeOptions{Embedded: func(p any) (Value, error) {
		return Rec("ref", Int(p.(*binRef).id)), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := binHex("B5 86 B4 B3 03 726566 B0 01 07 84 86 86 B0 00 84")
	if !bytes.Equal(enc, want) {
		t.Fatalf("encode = % X, want % X", enc, want)
	}
	var seen []Value
	got, err := DecodeBinary(enc, DecodeOptions{Embedded: func(p Value) (any, error) {
		seen = append(seen, p)
		if r, ok := p.(*Record); ok {
			return &binRef{int(r.Fields[0].(Int))}, nil
		}
		return p, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	seq := got.(Sequence)
	if r, ok := seq[0].(*Embedded).Payload.(*binRef); !ok || r.id != 7 {
		t.Errorf("first payload %#v", seq[0])
	}
	if len(seen) != 3 {
		t.Errorf("hook called %d times, want 3", len(seen))
	}
	// A hook error is a syntax error at the 86 tag.
	_, err = DecodeBinary(binHex("B5 B0 00 86 B0 00 84"), DecodeOptions{Embedded: func(Value) (any, error) {
		return nil, errors.New("no")
	}})
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) || pe.Pos.Offset != 3 {
		t.Errorf("hook error: %v", err)
	}
	// The hook is not called for embedded values in dropped annotations.
	calls := 0
	_, err = DecodeBinary(binHex("85 86 B0 00 B0 00"), DecodeOptions{Embedded: func(p Value) (any, error) {
		calls++
		return p, nil
	}})
	if err != nil || calls != 0 {
		t.Errorf("dropped annotation: %v, %d hook calls", err, calls)
	}
}

func TestBinaryLimits(t *testing.T) {
	nest := func(n int, open, close string) []byte {
		return binHex(strings.Repeat(open, n) + "B0 00" + strings.Repeat(close, n))
	}
	// Default depth: 512 nested sequences are fine, 513 are not.
	if _, err := DecodeBinary(nest(DefaultMaxDepth, "B5", "84"), DecodeOptions{}); err != nil {
		t.Errorf("depth %d: %v", DefaultMaxDepth, err)
	}
	for _, in := range [][]byte{
		nest(DefaultMaxDepth+1, "B5", "84"),
		nest(100000, "B5", "84"),
		nest(100000, "86", ""),
		binHex(strings.Repeat("85", 100000) + "B0 00"),
		append(binHex(strings.Repeat("B5", 1000000)), 0x84),
	} {
		_, err := DecodeBinary(in, DecodeOptions{})
		if !errors.Is(err, ErrLimit) {
			t.Errorf("deep input (%d bytes): %v, want ErrLimit", len(in), err)
		}
	}
	if _, err := DecodeBinary(nest(11, "B5", "84"), DecodeOptions{MaxDepth: 10}); !errors.Is(err, ErrLimit) {
		t.Errorf("MaxDepth 10: %v", err)
	}
	if _, err := DecodeBinary(nest(10, "B5", "84"), DecodeOptions{MaxDepth: 10}); err != nil {
		t.Errorf("MaxDepth 10, depth 10: %v", err)
	}
	// Length: a claim beyond MaxLength fails at once, without allocating
	// anything sized by the claim.
	claim := binHex("B2 80 80 80 80 01") // 2^28 bytes claimed
	allocs := testing.AllocsPerRun(10, func() {
		_, err := DecodeBinary(claim, DecodeOptions{MaxLength: 1 << 20})
		if !errors.Is(err, ErrLimit) {
			t.Errorf("claimed length: %v", err)
		}
	})
	if allocs > 2 {
		t.Errorf("rejecting a length claim allocated %v times", allocs)
	}
	if _, err := DecodeBinary(claim, DecodeOptions{MaxLength: -1}); !errors.Is(err, ErrUnexpectedEOF) {
		t.Errorf("unlimited: claimed length without bytes is premature EOF, got %v", err)
	}
	// Within the limit, a claimed length is not allocated before its bytes
	// arrive, neither by DecodeBinary nor by the incremental Decoder.
	claim = binHex("B2 80 80 80 10") // 2^25 bytes: under DefaultMaxLength
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := DecodeBinary(claim, DecodeOptions{}); !errors.Is(err, ErrUnexpectedEOF) {
			t.Fatalf("claimed length within the limit: %v", err)
		}
		dec := NewDecoder(DecodeOptions{})
		dec.Write(claim)
		dec.Write([]byte("some bytes"))
		if _, err := dec.Next(); !errors.Is(err, ErrUnexpectedEOF) {
			t.Fatalf("decoder, claimed length within the limit: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("claims of 2^25 bytes allocated %d bytes", grew)
	}
	if _, err := DecodeBinary(EncodeCanonical(String("hello")), DecodeOptions{MaxLength: 4}); !errors.Is(err, ErrLimit) {
		t.Errorf("input beyond MaxLength: %v", err)
	}
	// The incremental decoder stops buffering a value beyond MaxLength.
	dec := NewDecoder(DecodeOptions{MaxLength: 100})
	dec.Write([]byte{0xB5})
	var err error
	for i := 0; i < 200 && !errors.Is(err, ErrLimit); i++ {
		dec.Write([]byte{0x80})
		_, err = dec.Next()
	}
	if !errors.Is(err, ErrLimit) {
		t.Errorf("decoder kept buffering: %v", err)
	}
	dec = NewDecoder(DecodeOptions{MaxLength: 100})
	dec.Write(binHex("B2 80 80 04"))
	if _, err := dec.Next(); !errors.Is(err, ErrLimit) {
		t.Errorf("decoder length claim: %v", err)
	}
	dec = NewDecoder(DecodeOptions{})
	dec.Write(nest(DefaultMaxDepth+1, "B5", "")) // no end markers yet
	if _, err := dec.Next(); !errors.Is(err, ErrLimit) {
		t.Errorf("decoder depth: %v", err)
	}
}

// binStream is the conformance Test cases' binaries back to back, plus the
// whole suite, as one stream.
func binStream(t *testing.T) ([]byte, []Value) {
	var stream []byte
	var want []Value
	for _, c := range binLoadCases(t) {
		if c.av != nil {
			stream = append(stream, c.bytes...)
			want = append(want, c.av)
		}
	}
	src := binReadSamples(t)
	whole, _ := DecodeBinary(src, DecodeOptions{Annotations: true})
	return append(stream, src...), append(want, whole)
}

func TestDecoderByteByByte(t *testing.T) {
	stream, want := binStream(t)
	dec := NewDecoder(DecodeOptions{Annotations: true})
	var got []Value
	for i, b := range stream {
		dec.Write([]byte{b})
		for {
			v, err := dec.Next()
			if errors.Is(err, ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				t.Fatalf("after byte %d: %v", i, err)
			}
			got = append(got, v)
		}
	}
	if dec.Buffered() != 0 {
		t.Errorf("%d bytes left over", dec.Buffered())
	}
	if dec.Offset() != int64(len(stream)) {
		t.Errorf("offset %d, want %d", dec.Offset(), len(stream))
	}
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	for i := range want {
		if !binAnnEqual(got[i], want[i]) {
			t.Errorf("value %d: got %v", i, got[i])
		}
	}
}

func TestDecoderPartialThenError(t *testing.T) {
	dec := NewDecoder(DecodeOptions{})
	if _, err := dec.Next(); !errors.Is(err, ErrUnexpectedEOF) {
		t.Fatalf("empty decoder: %v", err)
	}
	dec.Write(binHex("B0 01 05 B5 B0"))
	if v, err := dec.Next(); err != nil || v != Int(5) {
		t.Fatalf("first value: %v, %v", v, err)
	}
	if _, err := dec.Next(); !errors.Is(err, ErrUnexpectedEOF) {
		t.Fatalf("partial: %v", err)
	}
	if dec.Buffered() != 2 {
		t.Errorf("buffered %d", dec.Buffered())
	}
	dec.Write(binHex("00 10 84"))
	_, err := dec.Next()
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) || pe.Pos.Offset != 6 {
		t.Fatalf("bad tag: %v", err)
	}
	dec.Write(binHex("B0 00"))
	if _, err2 := dec.Next(); err2 != err {
		t.Errorf("error not sticky: %v", err2)
	}
	if dec.Buffered() != 5 {
		t.Errorf("input after a final error must be dropped; %d bytes buffered", dec.Buffered())
	}
	if err2 := dec.End(); err2 != err {
		t.Errorf("End after error: %v", err2)
	}
	// End: nil at a boundary, premature EOF inside a value, and the syntax
	// error when the pending bytes are malformed before they run out.
	for _, tt := range []struct {
		hex   string
		class error
	}{
		{"", nil},
		{"B0 00", nil},
		{"B0 00 B5 B0", ErrUnexpectedEOF},
		{"B0 00 85 B1 01 FF", ErrSyntax}, // invalid UTF-8 in an annotation still waiting for its value
	} {
		dec := NewDecoder(DecodeOptions{})
		dec.Write(binHex(tt.hex))
		for {
			if _, err := dec.Next(); err != nil {
				break
			}
		}
		if err := dec.End(); binClass(err) != tt.class || (err == nil) != (tt.class == nil) {
			t.Errorf("End after %q = %v, want class %v", tt.hex, err, tt.class)
		}
	}
	// A syntax error the scanner cannot see (duplicate) is still reported.
	dec = NewDecoder(DecodeOptions{})
	dec.Write(binHex("B0 00 B6 80 80 84"))
	dec.Next()
	if _, err := dec.Next(); !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) || pe.Pos.Offset != 2 {
		t.Errorf("duplicate in stream: %v", err)
	}
}

func TestBinaryReader(t *testing.T) {
	stream, want := binStream(t)
	for name, r := range map[string]io.Reader{
		"whole":    bytes.NewReader(stream),
		"one-byte": iotest.OneByteReader(bytes.NewReader(stream)),
		"data-err": iotest.DataErrReader(bytes.NewReader(stream)),
	} {
		br := NewBinaryReader(r, DecodeOptions{Annotations: true})
		n := 0
		for {
			v, err := br.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: value %d: %v", name, n, err)
			}
			if !binAnnEqual(v, want[n]) {
				t.Errorf("%s: value %d differs", name, n)
			}
			n++
		}
		if n != len(want) {
			t.Errorf("%s: %d values, want %d", name, n, len(want))
		}
	}
	br := NewBinaryReader(bytes.NewReader(binHex("B0 00 B5 B0 00")), DecodeOptions{})
	if v, err := br.Next(); err != nil || v != Int(0) {
		t.Fatalf("first: %v %v", v, err)
	}
	_, err := br.Next()
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrUnexpectedEOF) || pe.Pos.Offset != 5 {
		t.Errorf("truncated stream: %v", err)
	}
	boom := errors.New("boom")
	br = NewBinaryReader(iotest.ErrReader(boom), DecodeOptions{})
	if _, err := br.Next(); err != boom {
		t.Errorf("reader error: %v", err)
	}
	br = NewBinaryReader(bytes.NewReader(nil), DecodeOptions{})
	if _, err := br.Next(); err != io.EOF {
		t.Errorf("empty stream: %v", err)
	}
}

func TestAppendBinary(t *testing.T) {
	prefix := []byte("xy")
	out, err := AppendBinary(prefix, Sequence{Int(1), String("a")}, EncodeOptions{})
	if err != nil || !bytes.Equal(out, binHex("7879 B5 B0 01 01 B1 01 61 84")) {
		t.Errorf("AppendBinary = % X, %v", out, err)
	}
	out, err = AppendBinary(prefix, Sequence{Int(1), nil}, EncodeOptions{})
	if err == nil || len(out) != 2 {
		t.Errorf("nil value: % X, %v", out, err)
	}
	if got := AppendCanonical([]byte{1}, Bool(true)); !bytes.Equal(got, []byte{1, 0x81}) {
		t.Errorf("AppendCanonical = % X", got)
	}
}

// TestEncodePooledBuffers: encoders and their buffers are recycled, so a
// result must never alias a pooled buffer, nested sets and dictionaries must
// each sort in their own scratch space, and a failed encoding must not
// disturb the next one.
func TestEncodePooledBuffers(t *testing.T) {
	inner := NewDictionary(DictEntry{String("bb"), NewSet(Int(300), Int(2), String("x"))},
		DictEntry{String("a"), NewSet(Symbol("q"), Symbol("pp"))})
	outer := NewSet(inner, NewSet(ByteString("zz"), ByteString("y")), Int(7))
	first := EncodeCanonical(outer)
	keep := bytes.Clone(first)
	want := binHex("B6 B0 01 07" +
		"B6 B2 01 79 B2 02 7A7A 84" +
		"B7 B1 01 61 B6 B3 01 71 B3 02 7070 84" +
		"B1 02 6262 B6 B0 01 02 B0 02 012C B1 01 78 84 84 84")
	if !bytes.Equal(first, want) {
		t.Fatalf("nested canonical encoding\n got % X\nwant % X", first, want)
	}
	if cap(first) != len(first) {
		t.Errorf("EncodeCanonical result has spare capacity %d", cap(first)-len(first))
	}
	for i := range 50 {
		_ = EncodeCanonical(Sequence{Int(i), String("overwrite the pooled buffer")})
		if _, err := EncodeBinary(Sequence{outer, nil}, EncodeOptions{}); err == nil {
			t.Fatal("nil value encoded")
		}
	}
	if !bytes.Equal(first, keep) {
		t.Fatal("an EncodeCanonical result changed when later values were encoded")
	}
	again, err := EncodeBinary(outer, EncodeOptions{Annotations: true})
	if err != nil || !bytes.Equal(again, want) {
		t.Errorf("annotated encoder without annotations = % X, %v", again, err)
	}
	if got := AppendCanonical(nil, outer); !bytes.Equal(got, want) {
		t.Errorf("AppendCanonical(nil) = % X", got)
	}
	if got := EncodeCanonical(Sequence{}); !bytes.Equal(got, binHex("B5 84")) {
		t.Errorf("empty sequence = % X", got)
	}
}

// TestCountSlotsBounds: the prescan's counts bound what the decoder carves
// out of its slabs, and are exact where no set, dictionary or annotation
// is involved (those are not built in the slabs).
func TestCountSlotsBounds(t *testing.T) {
	var inputs [][]byte
	for _, c := range binLoadCases(t) {
		if c.kind == "Test" || c.kind == "NondeterministicTest" {
			inputs = append(inputs, c.bytes, EncodeCanonical(c.av))
		}
	}
	inputs = append(inputs, binReadSamples(t),
		EncodeCanonical(Sequence{Rec("a", Sequence{Int(1), String(string(make([]byte, 300)))}), Sequence{}}))
	exact := 0
	for _, in := range inputs {
		c := countSlots(in)
		items, recs, hdrs := c.items, c.recs, c.hdrs
		d := &binDecoder{}
		d.init(DecodeOptions{Annotations: true})
		d.buf = in
		d.resetSlabs()
		v, err := d.value(0)
		if err != nil {
			t.Fatalf("% X: %v", in, err)
		}
		if d.hdrsUsed > hdrs {
			t.Fatalf("%v: counted %d headers, decoder used %d", v, hdrs, d.hdrsUsed)
		}
		if d.itemsUsed > items || d.recsUsed > recs {
			t.Fatalf("%v: counted %d items %d records, decoder used %d and %d", v, items, recs, d.itemsUsed, d.recsUsed)
		}
		if !binHasUnslabbed(v) {
			if d.itemsUsed != items || d.recsUsed != recs {
				t.Errorf("%v: counted %d items %d records, decoder used %d and %d", v, items, recs, d.itemsUsed, d.recsUsed)
			}
			exact++
		}
	}
	if exact < 100 {
		t.Errorf("only %d inputs checked for exact counts", exact)
	}
	// Garbage and truncated input give some count without panicking.
	for _, in := range [][]byte{nil, {0xB0}, {0xB1, 0xFF}, {0xB1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, {0x00, 0x84, 0x84}} {
		countSlots(in)
	}
}

func binHasUnslabbed(v Value) bool {
	switch x := v.(type) {
	case *Annotated, *Set, *Dictionary:
		return true
	case *Record:
		if binHasUnslabbed(x.Label) {
			return true
		}
		for _, f := range x.Fields {
			if binHasUnslabbed(f) {
				return true
			}
		}
	case Sequence:
		for _, f := range x {
			if binHasUnslabbed(f) {
				return true
			}
		}
	case *Embedded:
		if pv, ok := x.Payload.(Value); ok {
			return binHasUnslabbed(pv)
		}
	}
	return false
}

// TestDecodeSymbolCache: repeated symbols share one box, lookalikes and
// colliding names never get each other's box, and invalid UTF-8 is still
// rejected when a valid symbol of the same length is cached.
func TestDecodeSymbolCache(t *testing.T) {
	dec := func(b []byte) Value {
		t.Helper()
		v, err := DecodeBinary(b, DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var names []string
	for i := range 1000 { // far more names than cache entries: collisions
		names = append(names, fmt.Sprintf("sym-%d", i), fmt.Sprintf("a-much-longer-symbol-name-%06d", i))
	}
	names = append(names, "", "x", strings.Repeat("y", ownSymbolsMaxLen+1))
	for round := range 2 {
		for _, n := range names {
			if got := dec(EncodeCanonical(Symbol(n))); got != Symbol(n) {
				t.Fatalf("round %d: %q decoded as %#v", round, n, got)
			}
		}
	}
	ok := binHex("B3 02 C3 A9") // "é"
	bad := binHex("B3 02 C3 28")
	for range 3 {
		if got := dec(ok); got != Symbol("é") {
			t.Fatalf("got %#v", got)
		}
		if _, err := DecodeBinary(bad, DecodeOptions{}); !errors.Is(err, ErrSyntax) {
			t.Fatalf("invalid UTF-8 symbol: %v", err)
		}
	}
	// A record label decoded over and over costs no allocation. (One
	// decoder rather than DecodeBinary's pool, which the race detector
	// makes drop decoders at random.)
	want := Rec("label", Int(1))
	pkt := EncodeCanonical(want)
	d := &binDecoder{}
	if n := testing.AllocsPerRun(100, func() {
		if v, err := d.whole(pkt, DecodeOptions{}); err != nil || !Equal(v, want) {
			t.Fatalf("%v, %v", v, err)
		}
	}); n > 2 {
		t.Errorf("decoding <label 1> allocates %v times, want at most 2 (record and field slabs)", n)
	}
}

// TestDecoderDropsScratchReferences: once a value has been handed out, the
// decoder's scratch stack holds no references into it.
func TestDecoderDropsScratchReferences(t *testing.T) {
	dec := NewDecoder(DecodeOptions{})
	dec.Write(EncodeCanonical(Sequence{Sequence{String("a"), Rec("r", Int(1), Sequence{Int(2)})}, String("b")}))
	dec.Write(binHex("B5 B5 B1 01 61")) // a second value, cut short
	clean := func(when string) {
		t.Helper()
		for i, v := range dec.d.stack[:cap(dec.d.stack)] {
			if v != nil {
				t.Errorf("%s: stack slot %d still holds %v", when, i, v)
			}
		}
	}
	if _, err := dec.Next(); err != nil {
		t.Fatal(err)
	}
	clean("after a value")
	if _, err := dec.Next(); !errors.Is(err, ErrUnexpectedEOF) {
		t.Fatalf("truncated value: %v", err)
	}
	clean("after a truncated value")
	if err := dec.End(); !errors.Is(err, ErrUnexpectedEOF) {
		t.Fatalf("End: %v", err)
	}
	clean("after End")
}

// TestSlabBoxesBehaveLikeCompilerBoxes: sequences, strings, byte strings
// and integers whose interface boxes the decoder carves from its slabs are
// indistinguishable from compiler-made ones, whichever decoder made them,
// and stay intact through garbage collections when only a fragment of the
// decoded value is retained.
func TestSlabBoxesBehaveLikeCompilerBoxes(t *testing.T) {
	want := Sequence{
		String("bench"), ByteString("\x00\x01payload"), Int(17), Int(-1), Int(300),
		Int(math.MinInt64), Int(math.MaxInt64), Sequence{String("x"), Sequence{}},
		Rec("A", Sequence{Int(1 << 40), String("")}, ByteString("")),
		String(strings.Repeat("long ", 200)), // bytes of its own, not the arena's
	}
	enc := EncodeCanonical(want)
	decoders := map[string]func() Value{
		"DecodeBinary": func() Value {
			v, err := DecodeBinary(enc, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return v
		},
		"Decoder": func() Value {
			dec := NewDecoder(DecodeOptions{})
			dec.Write(enc)
			v, err := dec.Next()
			if err != nil {
				t.Fatal(err)
			}
			return v
		},
		"BatchDecoder": func() Value {
			var bd BatchDecoder
			bd.Reset(enc, DecodeOptions{})
			v, _, err := bd.DecodeAt(0)
			if err != nil {
				t.Fatal(err)
			}
			return v
		},
	}
	for name, decode := range decoders {
		t.Run(name, func(t *testing.T) {
			got := decode().(Sequence)
			if !Equal(got, want) || Hash(got) != Hash(want) || Compare(got, want) != 0 {
				t.Fatalf("got %v, want %v", got, want)
			}
			for i := range want {
				if _, isRec := want[i].(*Record); isRec {
					continue
				}
				if _, isSeq := want[i].(Sequence); isSeq {
					continue
				}
				if got[i] != want[i] { // Go's own interface equality
					t.Errorf("item %d: %#v != %#v", i, got[i], want[i])
				}
				keys := map[Value]int{want[i]: i}
				if keys[got[i]] != i {
					t.Errorf("item %d does not find its twin as a map key", i)
				}
			}
			switch x := got[1].(type) {
			case ByteString:
				if string(x) != "\x00\x01payload" {
					t.Errorf("byte string %q", x)
				}
			default:
				t.Errorf("item 1 is %T", x)
			}
			// Keep only fragments; collect; the fragments must be intact.
			s, n, inner, long := got[0], got[4], got[7], got[9]
			got = nil
			for range 3 {
				runtime.GC()
			}
			if s != String("bench") || n != Int(300) || !Equal(inner, Sequence{String("x"), Sequence{}}) || long != want[9] {
				t.Errorf("after GC: %v %v %v", s, n, inner)
			}
		})
	}
}

// TestInPlaceBoundsMiscounted: sequences and records are decoded straight
// into slots the prescan bounded; should a bound ever be short or long
// (only malformed input could make the prescan miscount), the result is
// still exactly the value, through the scratch-stack fallback or by giving
// back the unused slots.
func TestInPlaceBoundsMiscounted(t *testing.T) {
	var inputs [][]byte
	for _, c := range binLoadCases(t) {
		if c.kind == "Test" || c.kind == "NondeterministicTest" {
			inputs = append(inputs, c.bytes)
		}
	}
	inputs = append(inputs, binReadSamples(t))
	for _, in := range inputs {
		want, err := DecodeBinary(in, DecodeOptions{Annotations: true})
		if err != nil {
			t.Fatalf("% X: %v", in, err)
		}
		for _, skew := range []int32{-3, -1, 0, 1, 5} {
			d := &binDecoder{}
			d.init(DecodeOptions{Annotations: true})
			d.buf = in
			d.resetSlabs()
			var c slotCounts
			c, d.sizes, d.open = prescan(in, nil, nil, DefaultMaxDepth)
			d.hintItems = c.items
			for k := range d.sizes {
				d.sizes[k] = max(d.sizes[k]+skew, 0)
			}
			d.nextCompound = 1
			got, err := d.value(0)
			if err != nil || d.pos != len(in) || !binAnnEqual(got, want) {
				t.Fatalf("skew %d, % X: got %v (%v, at %d), want %v", skew, in, got, err, d.pos, want)
			}
		}
	}
}

// countSlots is prescan's counts alone.
func countSlots(b []byte) slotCounts {
	c, _, _ := prescan(b, nil, nil, DefaultMaxDepth)
	return c
}
