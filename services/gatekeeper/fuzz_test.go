package gatekeeper

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzParse feeds arbitrary Preserves text to the step and bind
// description parsers: no panics, and exactly one of (ref, refusal).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`<ref {oid: "x" sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>`,
		`<ref {oid: a sig: #"" caveats: [<reject <_>>]}>`,
		`<ref {oid: a sig: #"" caveats: 3}>`,
		`<ref 3>`, `<frob 1>`, `<"str" 1>`, `[1 2]`,
		`<ref {oid: "x" key: #""}>`, `<ref {oid: "x" key: "k"}>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := preserves.ParseText(s)
		if err != nil {
			return
		}
		ref, refusal := parseStep(v)
		if (ref == nil) == (refusal == nil) {
			t.Fatalf("%s: ref %v refusal %v", s, ref, refusal)
		}
		if ref != nil {
			_ = ref.Validate([]byte("key")) // must not panic
		}
		if r, ok := v.(*preserves.Record); ok {
			_, _ = parseSturdyDescription(r)
		}
	})
}
