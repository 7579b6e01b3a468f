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
			_, _, _ = parseSturdyDescription(r)
		}
	})
}

// FuzzNoise feeds arbitrary Preserves text to the noise decoders: the
// Packet parser, padding stripper, spec and protocol-name parsers. No
// panics; accepted packets respect the size limit; accepted specs render
// back to a spec that parses to the same value.
func FuzzNoise(f *testing.F) {
	for _, s := range []string{
		`#"abc"`, `[#"a" #"b"]`, `[]`, `[1]`, `3`,
		`{service: "s" key: #""}`,
		`{service: x key: #"" protocol: "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2s" preSharedKeys: []}`,
		`{service: x key: #"" protocol: "Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"}`,
		`{service: x key: #"" secretKey: #"0123456789abcdef0123456789abcdef"}`,
		`"Noise_NKpsk0_25519_ChaChaPoly_BLAKE2s"`, `"Noise_psk0_25519_ChaChaPoly_BLAKE2s"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := preserves.ParseText(s)
		if err != nil {
			return
		}
		if pieces, err := decodeNoisePacket(v); err == nil {
			for _, p := range pieces {
				if len(p) > noiseMaxMessage {
					t.Fatalf("%s: %d-byte piece", s, len(p))
				}
				if q := stripNoisePadding(p); len(q) > 0 && q[len(q)-1] == noisePadding {
					t.Fatalf("%s: padding left", s)
				}
			}
		}
		if str, ok := v.(preserves.String); ok {
			_, _ = parseNoiseProtocol(string(str))
		}
		for _, withSecret := range []bool{false, true} {
			spec, err := parseNoiseSpec(v, withSecret)
			if err != nil {
				continue
			}
			back, err := parseNoiseSpec(spec.toValue(), false)
			if err != nil || !preserves.Equal(back.toValue(), spec.toValue()) {
				t.Fatalf("%s: spec %v does not round-trip (%v)", s, spec.toValue(), err)
			}
			_, _ = spec.handshake(withSecret) // must not panic
		}
	})
}
