package trace

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzDescribe: a described value holds no embedded value or annotation,
// its text reads back as itself, and values without embedded parts are
// unchanged (annotations aside).
func FuzzDescribe(f *testing.F) {
	for _, s := range []string{`<a #:[1] {k: #:"x"}>`, `@"c" [1 2 #{#:<r>}]`, `{#:1: 2, 3: #:4}`, `"plain"`, `<r @x 1.5 #"b">`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := preserves.ParseText(src)
		if err != nil {
			return
		}
		d := Describe(v)
		text := preserves.FormatText(d)
		back, err := preserves.ParseText(text)
		if err != nil {
			t.Fatalf("%s described as %s, which does not parse: %v", src, text, err)
		}
		if !preserves.Equal(back, d) || preserves.FormatText(back) != text {
			t.Fatalf("%s described as %s, which reads back as %s", src, text, preserves.FormatText(back))
		}
		if !containsEmbedded(v) && !preserves.Equal(d, preserves.Strip(v)) {
			t.Fatalf("%s changed to %s", src, text)
		}
	})
}

func containsEmbedded(v preserves.Value) bool {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Embedded:
		return true
	case *preserves.Record:
		if containsEmbedded(x.Label) {
			return true
		}
		for _, f := range x.Fields {
			if containsEmbedded(f) {
				return true
			}
		}
	case preserves.Sequence:
		for _, e := range x {
			if containsEmbedded(e) {
				return true
			}
		}
	case *preserves.Set:
		for _, e := range x.Elems() {
			if containsEmbedded(e) {
				return true
			}
		}
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			if containsEmbedded(e.Key) || containsEmbedded(e.Value) {
				return true
			}
		}
	}
	return false
}
