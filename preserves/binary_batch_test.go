package preserves

import (
	"errors"
	"testing"
)

// batchInput concatenates the canonical encodings of vs and returns the
// start of each.
func batchInput(vs ...Value) ([]byte, []int) {
	var b []byte
	var starts []int
	for _, v := range vs {
		starts = append(starts, len(b))
		b = AppendCanonical(b, v)
	}
	return b, starts
}

func TestBatchDecoderAgreesWithDecodeBinary(t *testing.T) {
	vs := []Value{
		Rec("msg", Int(1000)),
		Rec("msg", Int(-5), String("x"), Sequence{}),
		Sequence{Symbol("msg"), Symbol("other"), NewSet(Symbol("msg"), Int(3))},
		NewDictionary(DictEntry{Symbol("k"), Rec("msg")}),
		NewEmbedded(Sequence{Int(0), Int(7)}),
		Symbol("msg"),
		Symbol(string(make([]byte, ownSymbolsMaxLen+1))),
		Sequence{},
	}
	b, starts := batchInput(vs...)
	var bd BatchDecoder
	bd.Reset(b, DecodeOptions{})
	for i, p := range starts {
		v, end, err := bd.DecodeAt(p)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		want := len(b)
		if i+1 < len(starts) {
			want = starts[i+1]
		}
		if end != want {
			t.Fatalf("value %d ends at %d, want %d", i, end, want)
		}
		if !Equal(v, vs[i]) {
			t.Fatalf("value %d = %v, want %v", i, v, vs[i])
		}
	}
	bd.Reset(nil, DecodeOptions{})
	if _, _, err := bd.DecodeAt(0); !errors.Is(err, ErrUnexpectedEOF) {
		t.Fatalf("DecodeAt after Reset(nil) = %v, want ErrUnexpectedEOF", err)
	}
}

// Repeated labels are boxed once and small payloads share
// chunks: a batch of many small records costs about one allocation per
// record (the Int box), where separate decodes cost several each.
func TestBatchDecoderSharesAllocations(t *testing.T) {
	const n = 200
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = Rec("msg", Int(1000+i))
	}
	b, starts := batchInput(vs...)
	var bd BatchDecoder
	allocs := testing.AllocsPerRun(20, func() {
		bd.Reset(b, DecodeOptions{})
		for _, p := range starts {
			if _, _, err := bd.DecodeAt(p); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs > n*1.2 {
		t.Fatalf("%v allocations for %d records, want about one each", allocs, n)
	}
	// The same symbol text gives the same box within a batch.
	bd.Reset(b, DecodeOptions{})
	v1, _, _ := bd.DecodeAt(starts[0])
	v2, _, _ := bd.DecodeAt(starts[1])
	l1, l2 := v1.(*Record).Label, v2.(*Record).Label
	if l1 != l2 {
		t.Fatal("labels differ")
	}
}

func TestBatchDecoderErrors(t *testing.T) {
	good := AppendCanonical(nil, Rec("ok", Int(1)))
	b := append([]byte{0xB3, 0x02, 0xFF, 0xFE}, good...) // invalid UTF-8 symbol, then a good value
	b = append(b, 0xB5, 0xB5, 0xB5, 0x84, 0x84, 0x84)    // depth 3
	var bd BatchDecoder
	bd.Reset(b, DecodeOptions{MaxDepth: 2})
	_, _, err := bd.DecodeAt(0)
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) || pe.Pos.Offset != 0 {
		t.Fatalf("bad symbol: %v", err)
	}
	v, end, err := bd.DecodeAt(4)
	if err != nil || !Equal(v, Rec("ok", Int(1))) || end != 4+len(good) {
		t.Fatalf("after an error: %v %d %v", v, end, err)
	}
	if _, _, err := bd.DecodeAt(end); !errors.Is(err, ErrLimit) {
		t.Fatalf("too deep: %v", err)
	}
	if _, _, err := bd.DecodeAt(len(b)); !errors.Is(err, ErrUnexpectedEOF) {
		t.Fatalf("past the end: %v", err)
	}
	// A symbol cached by one batch does not vouch for different bytes in
	// the next: they are validated.
	bd.Reset([]byte{0xB3, 0x01, 'a'}, DecodeOptions{})
	if v, _, err := bd.DecodeAt(0); err != nil || v != Value(Symbol("a")) {
		t.Fatalf("symbol a: %v %v", v, err)
	}
	bd.Reset([]byte{0xB3, 0x01, 0xFF}, DecodeOptions{})
	if _, _, err := bd.DecodeAt(0); !errors.Is(err, ErrSyntax) {
		t.Fatalf("invalid symbol after reset: %v", err)
	}
}

// FuzzBatchDecode decodes arbitrary input as a run of consecutive values
// and checks each against DecodeBinary over its extent: the batch decoder
// must accept exactly what the whole-buffer decoder accepts there, with the
// same value.
//
// Run it with: go test -run '^$' -fuzz FuzzBatchDecode -fuzztime 2m ./preserves
func FuzzBatchDecode(f *testing.F) {
	b, _ := batchInput(Rec("msg", Int(1)), Rec("msg", Int(2)), Symbol("msg"), Sequence{}, String("s"))
	f.Add(b, uint8(0))
	f.Add(binHex("B3 01 61 B3 01 61 B3 02 FF FE B3 01 61"), uint8(3))
	f.Add(binHex("85 B3 01 61 B4 B3 01 61 84 86 B5 B0 00 84"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, depth uint8) {
		opts := DecodeOptions{MaxDepth: int(depth % 16)}
		var bd BatchDecoder
		bd.Reset(data, opts)
		p := 0
		for p < len(data) {
			v, end, err := bd.DecodeAt(p)
			if err != nil {
				var pe *Error
				if !errors.As(err, &pe) || pe.Pos.Offset < p || pe.Pos.Offset > len(data) {
					t.Fatalf("error %v at %d not a positioned *Error", err, p)
				}
				// No value starts at p: DecodeBinary over any extent
				// from p must fail too, in particular the rest.
				if w, werr := DecodeBinary(data[p:], opts); werr == nil {
					t.Fatalf("batch refused %x at %d (%v), DecodeBinary gives %v", data[p:], p, err, w)
				}
				return
			}
			if end <= p || end > len(data) {
				t.Fatalf("end %d after start %d", end, p)
			}
			w, werr := DecodeBinary(data[p:end], opts)
			if werr != nil || !Equal(v, w) {
				t.Fatalf("at %d: batch %v, DecodeBinary %v %v", p, v, w, werr)
			}
			p = end
		}
	})
}
