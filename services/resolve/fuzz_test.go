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
		ts, steps, ok := parseRoute(v)
		if !ok {
			return
		}
		r := v.(*preserves.Record)
		if len(steps) != len(r.Fields)-1 || len(ts) != len(r.Fields[0].(preserves.Sequence)) {
			t.Fatalf("%s: %v %v", s, ts, steps)
		}
	})
}

// FuzzNoiseSpec feeds arbitrary Preserves text to the initiator's spec
// parser and Packet decoder (the same code as services/gatekeeper's copy,
// which has the fuller FuzzNoise): no panics, and accepted specs render
// back to themselves.
func FuzzNoiseSpec(f *testing.F) {
	for _, s := range []string{
		`{service: "s" key: #""}`, `{service: x key: #"" protocol: "Noise_XX_25519_ChaChaPoly_BLAKE2s"}`,
		`{service: x key: #"" preSharedKeys: [#"0123456789abcdef0123456789abcdef"]}`,
		`#"abc"`, `[#"a" #"b"]`, `[1]`, `3`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := preserves.ParseText(s)
		if err != nil {
			return
		}
		_, _ = decodeNoisePacket(v)
		spec, err := parseNoiseSpec(v, false)
		if err != nil {
			return
		}
		back, err := parseNoiseSpec(spec.toValue(), false)
		if err != nil || !preserves.Equal(back.toValue(), spec.toValue()) {
			t.Fatalf("%s: %v does not round-trip (%v)", s, spec.toValue(), err)
		}
		_, _ = spec.handshake(true)
	})
}
