package dataspace

import (
	"bytes"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// Fuzz targets for the runtime's two value-driven pieces: the injective
// key that makes attenuated Refs comparable, and Observe parsing.

func fuzzSeeds(f *testing.F) {
	for _, v := range []preserves.Value{
		preserves.Int(1), preserves.String("a"), preserves.Symbol("a"),
		preserves.NewDouble(-0.0), preserves.Rec("foo", preserves.Int(1)),
		preserves.Sequence{preserves.Int(1), preserves.Sequence{}},
		preserves.NewSet(preserves.Int(1), preserves.Int(2)),
		preserves.NewDictionary(preserves.DictEntry{Key: preserves.Symbol("k"), Value: preserves.Bool(true)}),
		pattern.ToValue(pattern.Rec(preserves.Symbol("foo"), pattern.Capture())),
		preserves.NewEmbedded(preserves.Int(3)),
	} {
		f.Add(preserves.EncodeCanonical(v), preserves.EncodeCanonical(preserves.Int(1)))
	}
}

// FuzzValueKey checks that the caveat key is injective and consistent with
// Preserves equality: key(a) == key(b) exactly when Equal(a, b).
func FuzzValueKey(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, x, y []byte) {
		opts := preserves.DecodeOptions{Annotations: true, MaxDepth: 64}
		a, err := preserves.DecodeBinary(x, opts)
		if err != nil {
			return
		}
		b, err := preserves.DecodeBinary(y, opts)
		if err != nil {
			return
		}
		ka, kb := appendKey(nil, a), appendKey(nil, b)
		if eq := preserves.Equal(a, b); eq != bytes.Equal(ka, kb) {
			t.Fatalf("Equal(%v, %v) = %v but keys %x / %x", a, b, eq, ka, kb)
		}
		if !bytes.Equal(ka, appendKey(nil, preserves.Strip(a))) {
			t.Fatal("annotations changed the key")
		}
	})
}

// FuzzParseObserve checks that Observe parsing never panics and that a
// parsed pattern renders back to an Observe that parses to the same thing.
func FuzzParseObserve(f *testing.F) {
	fuzzSeeds(f)
	obs := &target{id: 1, actor: &Actor{name: "fuzz"}}
	obs.base.tgt = obs
	f.Fuzz(func(t *testing.T, x, _ []byte) {
		v, err := preserves.DecodeBinary(x, preserves.DecodeOptions{MaxDepth: 64})
		if err != nil {
			return
		}
		// As a pattern inside an Observe with a real observer…
		p, r, ok := ParseObserve(preserves.Rec("Observe", v, Embed(&obs.base)))
		if _, perr := pattern.FromValue(v); (perr == nil) != ok {
			t.Fatalf("ParseObserve ok=%v but FromValue err=%v", ok, perr)
		}
		if ok {
			if r != &obs.base {
				t.Fatal("wrong observer")
			}
			p2, _, ok2 := ParseObserve(Observe(p, r))
			if !ok2 || !pattern.Equal(p, p2) {
				t.Fatalf("round trip of %v failed", v)
			}
		}
		// …and as a whole assertion.
		ParseObserve(v)
	})
}
