package relay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// The relay's own encoder for common shapes must produce exactly the
// canonical bytes of preserves.AppendBinary, and hand everything else to
// it.
func TestAppendValueMatchesAppendBinary(t *testing.T) {
	deep := preserves.Value(preserves.Int(1))
	for range appendSimpleDepth + 2 {
		deep = preserves.Sequence{deep}
	}
	vs := []preserves.Value{
		preserves.Bool(true), preserves.Bool(false),
		preserves.Int(0), preserves.Int(-1), preserves.Int(127), preserves.Int(128), preserves.Int(-129),
		preserves.Int(1 << 62), preserves.Int(-1 << 63),
		preserves.String(""), preserves.String("héllo"), preserves.String(strings.Repeat("x", 300)),
		preserves.ByteString("\x00\xff"), preserves.Symbol("msg"),
		rec("msg", preserves.Int(1000)), preserves.Sequence{}, preserves.Sequence{preserves.Sequence{}},
		preserves.NewEmbedded(preserves.Sequence{preserves.Int(0), preserves.Int(7)}),
		rec("x", preserves.NewEmbedded(preserves.Sequence{preserves.Int(1), preserves.Int(2), rec("rewrite")})),
		// Handed to the general encoder:
		preserves.NewDouble(1.5), preserves.NewSet(preserves.Int(2), preserves.Int(1)),
		rec("d", preserves.NewDictionary(preserves.DictEntry{Key: preserves.Symbol("k"), Value: preserves.Int(1)})),
		&preserves.Annotated{Anns: []preserves.Value{preserves.Symbol("a")}, Item: rec("m", preserves.Int(1))},
		deep,
	}
	for _, v := range vs {
		want, werr := preserves.AppendBinary([]byte{0xAA}, v, preserves.EncodeOptions{})
		got, gerr := appendValue([]byte{0xAA}, v)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%v: appendValue % x (%v), AppendBinary % x (%v)", v, got, gerr, want, werr)
		}
	}
	// A payload that is not a Value is refused, as by the general encoder.
	if _, err := appendValue(nil, rec("x", preserves.NewEmbedded(struct{}{}))); err == nil {
		t.Fatal("appendValue encoded a non-Value embedded payload")
	}
}

// FuzzAppendValue checks appendValue against preserves.AppendBinary on
// every value the binary decoder accepts.
func FuzzAppendValue(f *testing.F) {
	for _, v := range []preserves.Value{
		rec("msg", preserves.Int(1000)), preserves.Sequence{preserves.String("s"), preserves.Bool(true)},
		preserves.NewEmbedded(preserves.Sequence{preserves.Int(0), preserves.Int(7)}),
	} {
		f.Add(preserves.EncodeCanonical(v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := preserves.DecodeBinary(data, preserves.DecodeOptions{Annotations: true})
		if err != nil {
			return
		}
		want, werr := preserves.AppendBinary(nil, v, preserves.EncodeOptions{})
		got, gerr := appendValue(nil, v)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%v: appendValue % x (%v), AppendBinary % x (%v)", v, got, gerr, want, werr)
		}
	})
}

// fastTurn is fastTurnAt for one packet on its own, as the fuzz target and
// the decoding benchmark use it.
func fastTurn(evs []Event, raw []byte, maxDepth, maxSize int) ([]Event, bool) {
	bd := batchDecoders.Get().(*preserves.BatchDecoder)
	bd.Reset(raw, turnDecodeOptions(maxDepth, maxSize))
	evs, ok := fastTurnAt(bd, evs, raw, 0, len(raw), maxDepth)
	bd.Reset(nil, preserves.DecodeOptions{})
	batchDecoders.Put(bd)
	return evs, ok
}
