package resolve

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{
		`<route [<tcp "h" 1>] <ref {oid: "x" sig: #""}>>`,
		`<route []>`, `<route [] 1>`, `<route 1>`, `<route [<tcp "h" 1>] <"s" 1>>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := preserves.ParseText(s)
		if err != nil {
			return
		}
		ts, steps, err := parseRoute(v)
		if err != nil {
			return
		}
		r := v.(*preserves.Record)
		if len(steps) != len(r.Fields)-1 || len(ts) != len(r.Fields[0].(preserves.Sequence)) {
			t.Fatalf("%s: %v %v", s, ts, steps)
		}
	})
}
