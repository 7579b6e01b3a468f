package caveat

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// vocabulary biases generated values towards the sturdy.prs symbols so the
// fuzzer reaches deep into the parser and matcher instead of producing
// Unknown caveats almost every time.
var vocabulary = []string{
	"rewrite", "or", "reject", "_", "bind", "and", "not", "lit", "rec", "arr",
	"dict", "attenuate", "ref", "Embedded", "Boolean", "Double", "SignedInteger",
	"String", "ByteString", "Symbol", "foo", "bar",
}

// valueGen turns fuzz bytes into a Preserves value. It is a generator, not
// a decoder: every byte string yields some value.
type valueGen struct {
	b     []byte
	depth int
}

func (g *valueGen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *valueGen) value() V {
	g.depth++
	defer func() { g.depth-- }()
	op := g.byte()
	if g.depth > 12 {
		op %= 6 // atoms only
	}
	switch op % 12 {
	case 0:
		return preserves.Int(int64(int8(g.byte())))
	case 1, 2:
		return preserves.Symbol(vocabulary[int(g.byte())%len(vocabulary)])
	case 3:
		return preserves.String(string(rune('a' + g.byte()%4)))
	case 4:
		return preserves.Bool(g.byte()&1 == 1)
	case 5:
		return preserves.NewEmbedded(&fakeCap{name: "f"})
	case 6, 7, 8:
		label := preserves.Symbol(vocabulary[int(g.byte())%len(vocabulary)])
		return preserves.NewRecord(label, g.values()...)
	case 9, 10:
		return preserves.Sequence(g.values())
	default:
		vs := g.values()
		es := make([]preserves.DictEntry, 0, len(vs)/2)
		for j := 0; j+1 < len(vs); j += 2 {
			es = append(es, preserves.DictEntry{Key: vs[j], Value: vs[j+1]})
		}
		return preserves.NewDictionary(es...)
	}
}

func (g *valueGen) values() []V {
	n := int(g.byte() % 4)
	out := make([]V, n)
	for j := range out {
		out[j] = g.value()
	}
	return out
}

// FuzzCaveat: parsing, rendering, validating and applying arbitrary caveat
// values never panics, and parsing round-trips.
func FuzzCaveat(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{6, 0, 2, 6, 4, 0, 6, 3, 0, 6, 12, 0})
	f.Add([]byte{6, 2, 1, 9, 1, 6, 0, 2, 6, 4, 0, 6, 12, 1, 0, 1})
	f.Add([]byte{6, 1, 1, 9, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &valueGen{b: data}
		cv := g.value()
		c, err := FromValue(cv)
		if err != nil {
			t.Fatalf("FromValue: %v", err)
		}
		if back := ToValue(c); !preserves.Equal(back, cv) {
			t.Fatalf("round trip changed %v into %v", cv, back)
		}
		cs := []Caveat{c}
		_ = Validate(cs) // must not panic; either answer is fine
		for k := 0; k < 3; k++ {
			in := g.value()
			out, ok := Apply(cs, in)
			if ok && out == nil {
				t.Fatalf("Apply accepted with a nil result")
			}
			if _, isUnknown := c.(Unknown); isUnknown && ok {
				t.Fatalf("unknown caveat %v passed %v", cv, in)
			}
		}
	})
}
