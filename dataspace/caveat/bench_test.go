package caveat

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

func benchParse(b *testing.B, src string) Caveat {
	b.Helper()
	v, err := preserves.ParseText(src)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := FromValue(v)
	return c
}

// BenchmarkApplyRewrite: one record rewrite, the common attenuation shape.
func BenchmarkApplyRewrite(b *testing.B) {
	cs := []Caveat{benchParse(b, "<rewrite <rec foo [<bind <_>>]> <rec bar [<ref 0>]>>")}
	v := preserves.Rec("foo", preserves.Int(1))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Apply(cs, v); !ok {
			b.Fatal("rejected")
		}
	}
}

// BenchmarkApplyChain: a reject, an `or` and a pass-through rewrite.
func BenchmarkApplyChain(b *testing.B) {
	cs := []Caveat{
		benchParse(b, "<rewrite <bind <_>> <ref 0>>"),
		benchParse(b, "<or [<rewrite <rec a [<bind <_>>]> <rec b [<ref 0>]>> <rewrite <bind <rec b [<_>]>> <ref 0>>]>"),
		benchParse(b, "<reject <rec secret [<_>]>>"),
	}
	v := preserves.Rec("a", preserves.String("x"))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Apply(cs, v); !ok {
			b.Fatal("rejected")
		}
	}
}

func BenchmarkFromValue(b *testing.B) {
	v, err := preserves.ParseText("<or [<rewrite <rec a [<bind <_>> <dict {k: <bind String>}>]> <rec b [<ref 1> <ref 0>]>> <rewrite <bind Embedded> <attenuate <ref 0> [<reject <_>>]>>]>")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromValue(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSturdyValidate: what a gatekeeper does per resolve.
func BenchmarkSturdyValidate(b *testing.B) {
	key := []byte("hello")
	sr, err := Mint(preserves.Symbol("a-service"), key).Attenuate(
		benchParse(b, "<rewrite <bind <_>> <ref 0>>"),
		benchParse(b, "<reject <rec foo [<_>]>>"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sr.Validate(key); err != nil {
			b.Fatal(err)
		}
	}
}
