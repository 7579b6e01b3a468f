package noisesession

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzNoise feeds arbitrary Preserves text to the decoders of this
// package: the Packet decoder, padding stripper, spec and protocol-name
// parsers. No panics; accepted packets respect the size limit; accepted
// specs render back to a spec that parses to the same value; building
// either side's handshake from an accepted spec does not panic.
func FuzzNoise(f *testing.F) {
	for _, s := range []string{
		`#"abc"`, `[#"a" #"b"]`, `[]`, `[1]`, `3`,
		`{service: "s" key: #""}`,
		`{service: x key: #"" protocol: "Noise_XX_25519_ChaChaPoly_BLAKE2s"}`,
		`{service: x key: #"" protocol: "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2s" preSharedKeys: []}`,
		`{service: x key: #"" protocol: "Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"}`,
		`{service: x key: #"" preSharedKeys: [#"0123456789abcdef0123456789abcdef"]}`,
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
		if pieces, err := DecodePacket(v); err == nil {
			for _, p := range pieces {
				if len(p) > maxMessage {
					t.Fatalf("%s: %d-byte piece", s, len(p))
				}
				if q := StripPadding(p); len(q) > 0 && q[len(q)-1] == padding {
					t.Fatalf("%s: padding left", s)
				}
			}
		}
		if str, ok := v.(preserves.String); ok {
			_, _ = parseProtocol(string(str))
		}
		for _, withSecret := range []bool{false, true} {
			spec, err := ParseSpec(v, withSecret)
			if err != nil {
				continue
			}
			back, err := ParseSpec(spec.ToValue(), false)
			if err != nil || !preserves.Equal(back.ToValue(), spec.ToValue()) {
				t.Fatalf("%s: spec %v does not round-trip (%v)", s, spec.ToValue(), err)
			}
			_, _ = spec.Handshake(withSecret) // must not panic
			_, _ = spec.Handshake(!withSecret)
		}
	})
}
