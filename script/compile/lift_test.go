package compile

import (
	"reflect"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// TestLiftMatchesPattern: the compiler's arena-backed lift builds exactly
// what pattern.Lift builds (it exists only to allocate less).
func TestLiftMatchesPattern(t *testing.T) {
	srcs := []string{
		`1`, `"s"`, `sym`, `#t`, `#"b"`, `1.5`, `<a>`, `[]`, `{}`,
		`<a 1 [2 3] {k: <v>}>`, `[[] [[]] <x <y <z>>>]`, `{a: 1, b: [2], 3: {c: d}}`,
		`<[1] 2>`, `<a #{1 2}>`, `[#{}]`, `{k: #{x}}`, `#{1}`,
	}
	for _, src := range srcs {
		v, err := preserves.ParseText(src)
		if err != nil {
			t.Fatal(err)
		}
		c := &compiler{}
		got, ok := c.lift(v)
		want, err := pattern.Lift(v)
		if ok != (err == nil) {
			t.Errorf("%s: lift ok=%v, Lift error %v", src, ok, err)
			continue
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: lift %#v, Lift %#v", src, got, want)
		}
	}
}
