package preserves_test

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

func TestMapEmbedded(t *testing.T) {
	v, err := preserves.ParseTextOptions([]byte(`@"c" <a #:x [#:y #{#:z}] {k: #:w} "s">`), preserves.TextOptions{
		Annotations: true, Positions: true, Embedded: func(v preserves.Value) (any, error) { return v, nil }})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	got := preserves.MapEmbedded(v, func(*preserves.Embedded) preserves.Value { n++; return preserves.Symbol("ref") })
	if s := preserves.FormatText(got); s != `<a ref [ref #{ref}] {k: ref} "s">` || n != 4 {
		t.Fatalf("got %s after %d calls", s, n)
	}
}
