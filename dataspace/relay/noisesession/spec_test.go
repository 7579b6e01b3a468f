package noisesession

import (
	"errors"
	"strings"
	"testing"

	"github.com/flynn/noise"

	"github.com/syndicate-go/syndicate/preserves"
)

// testKeys is a fixed responder key pair.
func testKeys(tb testing.TB) (secret, public []byte) {
	secret = make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i + 1)
	}
	public, err := PublicKey(secret)
	if err != nil {
		tb.Fatal(err)
	}
	return secret, public
}

func dict(kvs ...preserves.Value) *preserves.Dictionary { return preserves.Dict(kvs...) }

func bs(b []byte) preserves.Value { return preserves.ByteStringFrom(b) }

// TestParseSpec checks validation of NoiseServiceSpecs and the rendering
// of accepted ones (no secret, defaults left out).
func TestParseSpec(t *testing.T) {
	sk, pk := testKeys(t)
	psk := make([]byte, 32)
	psk[0] = 9
	svc := preserves.String("svc")
	cases := []struct {
		name string
		spec preserves.Value
		want preserves.Value // nil: refused
	}{
		{"default protocol", dict(SymService, svc, SymKey, bs(pk), SymSecretKey, bs(sk)),
			dict(SymService, svc, SymKey, bs(pk))},
		{"default protocol spelled out is left out", dict(SymService, svc, SymKey, bs(pk), SymSecretKey, bs(sk), SymProtocol, preserves.String(DefaultProtocol)),
			dict(SymService, svc, SymKey, bs(pk))},
		{"other protocol kept", dict(SymService, svc, SymKey, bs(pk), SymSecretKey, bs(sk), SymProtocol, preserves.String("Noise_XX_25519_ChaChaPoly_BLAKE2s")),
			dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_XX_25519_ChaChaPoly_BLAKE2s"))},
		{"psk variant and keys", dict(SymService, svc, SymKey, bs(pk), SymSecretKey, bs(sk), SymProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"), SymPreSharedKeys, preserves.Sequence{bs(psk)}),
			dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"), SymPreSharedKeys, preserves.Sequence{bs(psk)})},
		{"empty psk list left out", dict(SymService, svc, SymKey, bs(pk), SymPreSharedKeys, preserves.Sequence{}),
			dict(SymService, svc, SymKey, bs(pk))},
		{"no secret key", dict(SymService, preserves.Symbol("s2"), SymKey, bs(nil)),
			dict(SymService, preserves.Symbol("s2"), SymKey, bs(nil))},
		{"annotated service stripped", dict(SymService, &preserves.Annotated{Anns: []preserves.Value{preserves.Int(1)}, Item: svc}, SymKey, bs(pk)),
			dict(SymService, svc, SymKey, bs(pk))},
		{"not a dictionary", preserves.Int(1), nil},
		{"no service", dict(SymKey, bs(pk)), nil},
		{"no key", dict(SymService, svc), nil},
		{"key not bytes", dict(SymService, svc, SymKey, preserves.String("k")), nil},
		{"protocol not a string", dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.Symbol("Noise_NK_25519_ChaChaPoly_BLAKE2s")), nil},
		{"other suite", dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_NK_25519_AESGCM_SHA256")), nil},
		{"unknown pattern", dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_NQ_25519_ChaChaPoly_BLAKE2s")), nil},
		{"psk out of range", dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_NKpsk3_25519_ChaChaPoly_BLAKE2s")), nil},
		{"psk repeated", dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_NKpsk1+psk1_25519_ChaChaPoly_BLAKE2s")), nil},
		{"psk not a number", dict(SymService, svc, SymKey, bs(pk), SymProtocol, preserves.String("Noise_NKpskx_25519_ChaChaPoly_BLAKE2s")), nil},
		{"preSharedKeys not a sequence", dict(SymService, svc, SymKey, bs(pk), SymPreSharedKeys, bs(psk)), nil},
		{"preSharedKeys item not bytes", dict(SymService, svc, SymKey, bs(pk), SymPreSharedKeys, preserves.Sequence{preserves.Int(1)}), nil},
		{"preSharedKeys item short", dict(SymService, svc, SymKey, bs(pk), SymPreSharedKeys, preserves.Sequence{bs(psk[:5])}), nil},
		{"secretKey not bytes", dict(SymService, svc, SymKey, bs(pk), SymSecretKey, preserves.String("s")), nil},
		{"secretKey short", dict(SymService, svc, SymKey, bs(pk), SymSecretKey, bs(sk[:31])), nil},
		{"key does not match secretKey", dict(SymService, svc, SymKey, bs(sk), SymSecretKey, bs(sk)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, err := ParseSpec(c.spec, true)
			if c.want == nil {
				if err == nil {
					t.Fatalf("accepted as %v", spec.ToValue())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := spec.ToValue(); !preserves.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	// A bare NoiseSpec (the initiator's) ignores a secretKey entry, even a
	// malformed one, and never carries it.
	spec, err := ParseSpec(dict(SymService, svc, SymKey, bs(pk), SymSecretKey, preserves.Int(0)), false)
	if err != nil || spec.SecretKey != nil {
		t.Fatalf("without secret: %v, %v", spec, err)
	}
	spec, err = ParseSpec(dict(SymService, svc, SymKey, bs(pk), SymSecretKey, bs(sk)), true)
	if err != nil || string(spec.SecretKey) != string(sk) {
		t.Fatalf("with secret: %v, %v", spec, err)
	}
}

func TestParseProtocol(t *testing.T) {
	for _, p := range []string{"N", "K", "X", "NN", "NK", "NX", "XN", "XK", "XX", "KN", "KK", "KX", "IN", "IK", "IX",
		"Npsk0", "Npsk1", "NKpsk0", "NKpsk2", "XXpsk3", "NNpsk0+psk2", "IKpsk1+psk2"} {
		if _, err := parseProtocol("Noise_" + p + protocolSuffix); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"", "NNN", "XXpsk4", "Npsk2", "NNpsk01", "NNpsk-1", "NNpsk0+", "NNpsk0+psk0", "XXfallback", "NK1", "nk"} {
		if _, err := parseProtocol("Noise_" + p + protocolSuffix); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	if _, err := parseProtocol("Noise_NK_448_ChaChaPoly_BLAKE2s"); err == nil {
		t.Error("448 accepted")
	}
	// A peer's name is quoted cut short: the error becomes an <error …>
	// answer and a warning.
	long := strings.Repeat("X", 1<<20)
	for _, name := range []string{long, "Noise_" + long + protocolSuffix, "Noise_NNpsk" + long + protocolSuffix} {
		_, err := parseProtocol(name)
		if err == nil {
			t.Errorf("a 1 MiB protocol name accepted")
		} else if n := len(err.Error()); n > 4*preserves.ShowLimit {
			t.Errorf("a 1 MiB protocol name: %d bytes of error", n)
		}
	}
}

// Valid protocols flynn/noise cannot run are refused with ErrUnsupported;
// specs that cannot be used with a runnable protocol fail otherwise.
func TestHandshakeRefusals(t *testing.T) {
	_, pk := testKeys(t)
	for _, proto := range []string{"Noise_NNpsk0+psk1_25519_ChaChaPoly_BLAKE2s", "Noise_KK_25519_ChaChaPoly_BLAKE2s", "Noise_K_25519_ChaChaPoly_BLAKE2s"} {
		for _, initiator := range []bool{true, false} {
			_, err := (&Spec{Service: preserves.Int(1), Key: pk, Protocol: proto}).Handshake(initiator)
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s (initiator %v): %v is not ErrUnsupported", proto, initiator, err)
			}
		}
	}
	for name, c := range map[string]struct {
		spec      *Spec
		initiator bool
	}{
		"responder without secret": {&Spec{Service: preserves.Int(1), Key: pk}, false},
		"NK initiator, short key":  {&Spec{Service: preserves.Int(1), Key: []byte("k")}, true},
		"capability in selector":   {&Spec{Service: preserves.NewEmbedded(struct{}{}), Key: pk}, true},
	} {
		if _, err := c.spec.Handshake(c.initiator); err == nil || errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// handshakePair runs the handshake between ini and res directly and
// returns each side's (cs1, cs2).
func handshakePair(tb testing.TB, ini, res *Handshake) (ics, rcs [2]*noise.CipherState, err error) {
	tb.Helper()
	parties := []*noise.HandshakeState{ini.hs, res.hs}
	var cs [2][2]*noise.CipherState
	for i := 0; cs[0][0] == nil; i++ {
		msg, c1, c2, err := parties[i%2].WriteMessage(nil, nil)
		if err != nil {
			return ics, rcs, err
		}
		cs[i%2] = [2]*noise.CipherState{c1, c2}
		_, d1, d2, err := parties[1-i%2].ReadMessage(nil, msg)
		if err != nil {
			return ics, rcs, err
		}
		cs[1-i%2] = [2]*noise.CipherState{d1, d2}
		if i > 4 {
			tb.Fatal("no end to the handshake")
		}
	}
	return cs[0], cs[1], nil
}

// Every pattern flynn/noise can run completes the handshake between the
// two sides Handshake builds, with psk placements and drawn keys.
func TestHandshakePatterns(t *testing.T) {
	sk, pk := testKeys(t)
	psk := make([]byte, 32)
	psk[3] = 7
	for _, p := range []string{"N", "X", "NN", "NK", "NX", "XN", "XK", "XX", "IN", "IK", "IX", "NNpsk0", "NKpsk2", "XXpsk3", "Npsk1"} {
		for _, keys := range [][][]byte{nil, {psk}} {
			spec := &Spec{Service: preserves.Symbol("p"), Key: pk, SecretKey: sk, Protocol: "Noise_" + p + protocolSuffix, PreSharedKeys: keys}
			ini, err := spec.Handshake(true)
			if err != nil {
				t.Fatalf("%s initiator: %v", p, err)
			}
			res, err := spec.Handshake(false)
			if err != nil {
				t.Fatalf("%s responder: %v", p, err)
			}
			ics, rcs, err := handshakePair(t, ini, res)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			ct, _ := ics[0].Encrypt(nil, nil, []byte("hi"))
			if pt, err := rcs[0].Decrypt(nil, nil, ct); err != nil || string(pt) != "hi" {
				t.Fatalf("%s: transport %q %v", p, pt, err)
			}
		}
	}
	// A responder whose PSK differs from the initiator's fails.
	a := &Spec{Service: preserves.Symbol("p"), Key: pk, SecretKey: sk, Protocol: "Noise_NNpsk0" + protocolSuffix, PreSharedKeys: [][]byte{psk}}
	b := &Spec{Service: preserves.Symbol("p"), Key: pk, SecretKey: sk, Protocol: "Noise_NNpsk0" + protocolSuffix}
	ini, _ := a.Handshake(true)
	res, _ := b.Handshake(false)
	if _, _, err := handshakePair(t, ini, res); err == nil {
		t.Fatal("mismatched PSKs agreed")
	}
	// Sides that disagree on the service selector (the prologue) fail.
	ini, _ = (&Spec{Service: preserves.Symbol("p"), Key: pk}).Handshake(true)
	res, _ = (&Spec{Service: preserves.Symbol("q"), Key: pk, SecretKey: sk}).Handshake(false)
	if _, _, err := handshakePair(t, ini, res); err == nil {
		t.Fatal("mismatched prologues agreed")
	}
}

func TestGenerateKey(t *testing.T) {
	sk, pk, err := GenerateKey()
	if err != nil || len(sk) != 32 || len(pk) != 32 {
		t.Fatalf("GenerateKey = %x, %x, %v", sk, pk, err)
	}
	if again, err := PublicKey(sk); err != nil || string(again) != string(pk) {
		t.Fatalf("PublicKey(secret) = %x, %v; want %x", again, err, pk)
	}
	sk2, _, _ := GenerateKey()
	if string(sk2) == string(sk) {
		t.Fatal("two generated secrets are equal")
	}
	spec := preserves.Dict(SymService, preserves.Symbol("s"), SymKey, bs(pk), SymSecretKey, bs(sk))
	if _, err := ParseSpec(spec, true); err != nil {
		t.Fatalf("a generated pair is not a valid spec: %v", err)
	}
}
