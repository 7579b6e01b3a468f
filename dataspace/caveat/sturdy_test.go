package caveat

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

func parseText(t *testing.T, src string) V {
	t.Helper()
	v, err := preserves.ParseText(src)
	if err != nil {
		t.Fatalf("ParseText(%q): %v", src, err)
	}
	return v
}

const (
	vecCaveat1 = "<rewrite <bind <_>> <ref 0>>"
	vecCaveat2 = "<reject <rec foo [<_>]>>"
)

// §18 scenario 43: the four signature vectors of runtime §14.5.
func TestScenario43SignatureVectors(t *testing.T) {
	hello := []byte("hello")
	zero := make([]byte, 16)

	sr := Mint(sym("a-service"), hello)
	if got := hex.EncodeToString(sr.Sig); got != "2534c641e60282884c5d6ff64b65c7f2" {
		t.Errorf("vector 1 sig = %s", got)
	}
	if got := base64.StdEncoding.EncodeToString(sr.Sig); got != "JTTGQeYCgohMXW/2S2XH8g==" {
		t.Errorf("vector 1 base64 = %s", got)
	}
	if sr.CaveatsPresent || len(sr.Caveats) != 0 {
		t.Errorf("minted ref has caveats")
	}
	if err := sr.Validate(hello); err != nil {
		t.Errorf("vector 1 does not validate: %v", err)
	}

	sr2 := Mint(str("syndicate"), zero)
	if got := hex.EncodeToString(sr2.Sig); got != "69ca300c1dbfa08fba692102dd82311a" {
		t.Errorf("vector 2 sig = %s", got)
	}
	if got := base64.StdEncoding.EncodeToString(sr2.Sig); got != "acowDB2/oI+6aSEC3YIxGg==" {
		t.Errorf("vector 2 base64 = %s", got)
	}

	c1 := mustParse(t, parseText(t, vecCaveat1))
	if got := hex.EncodeToString(preserves.EncodeCanonical(ToValue(c1))); got !=
		"b4b30772657772697465b4b30462696e64b4b3015f8484b4b303726566b0008484" {
		t.Errorf("e(caveat 1) = %s", got)
	}
	sr3, err := sr.Attenuate(c1)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sr3.Sig); got != "fc59c3f944e8119a15316c60d88fd36f" {
		t.Errorf("vector 3 sig = %s", got)
	}
	c2 := mustParse(t, parseText(t, vecCaveat2))
	sr4, err := sr3.Attenuate(c2)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sr4.Sig); got != "e7416610af25a4576285e10bdd877776" {
		t.Errorf("vector 4 sig = %s", got)
	}
	// Attenuating with both at once continues the same chain.
	sr4b, err := sr.Attenuate(c1, c2)
	if err != nil || !bytes.Equal(sr4b.Sig, sr4.Sig) {
		t.Errorf("one-step attenuation sig = %x, %v", sr4b.Sig, err)
	}
	for n, r := range []*SturdyRef{sr3, sr4, sr4b} {
		if err := r.Validate(hello); err != nil {
			t.Errorf("attenuated ref %d does not validate: %v", n, err)
		}
	}
	// Attenuation leaves the original alone.
	if len(sr.Caveats) != 0 || len(sr3.Caveats) != 1 || len(sr4.Caveats) != 2 {
		t.Errorf("caveat counts %d %d %d", len(sr.Caveats), len(sr3.Caveats), len(sr4.Caveats))
	}
}

func TestSturdyRefTextForm(t *testing.T) {
	v := parseText(t, "<ref {oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>")
	sr, err := SturdyRefFromValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if !preserves.Equal(sr.OID, sym("a-service")) || sr.CaveatsPresent || sr.BadCaveats != nil {
		t.Fatalf("parsed %#v", sr)
	}
	if err := sr.Validate([]byte("hello")); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !preserves.Equal(sr.ToValue(), v) || !preserves.Equal(Mint(sym("a-service"), []byte("hello")).ToValue(), v) {
		t.Fatalf("ToValue = %v, want %v", sr.ToValue(), v)
	}

	// With caveats, through text and back.
	v4 := parseText(t, "<ref {oid: a-service sig: #x\"e7416610af25a4576285e10bdd877776\" caveats: ["+
		vecCaveat1+" "+vecCaveat2+"]}>")
	sr4, err := SturdyRefFromValue(v4)
	if err != nil {
		t.Fatal(err)
	}
	if err := sr4.Validate([]byte("hello")); err != nil {
		t.Fatalf("vector 4 from text: %v", err)
	}
	if !preserves.Equal(sr4.ToValue(), v4) {
		t.Fatalf("ToValue = %v, want %v", sr4.ToValue(), v4)
	}
	// The caveats apply newest first: c2 rejects <foo x>, c1 passes the rest.
	if _, ok := Apply(sr4.Caveats, rec("foo", i(1))); ok {
		t.Error("<foo 1> passed")
	}
	if got, ok := Apply(sr4.Caveats, rec("foo", i(1), i(2))); !ok || !preserves.Equal(got, rec("foo", i(1), i(2))) {
		t.Error("<foo 1 2> rejected")
	}
}

// §18 scenario 44.
func TestScenario44ValidationFailures(t *testing.T) {
	key := []byte("hello")
	base, err := Mint(sym("a-service"), key).Attenuate(
		mustParse(t, parseText(t, vecCaveat1)),
		mustParse(t, parseText(t, vecCaveat2)),
		mustParse(t, parseText(t, "<reject <lit 3>>")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Validate(key); err != nil {
		t.Fatalf("base ref invalid: %v", err)
	}
	with := func(f func(sr *SturdyRef)) *SturdyRef {
		c := *base
		c.Caveats = append([]Caveat(nil), base.Caveats...)
		c.Sig = bytes.Clone(base.Sig)
		f(&c)
		return &c
	}
	cases := []struct {
		name string
		sr   *SturdyRef
		key  []byte
		want error
	}{
		{"wrong key", base, []byte("hellp"), ErrInvalidSignature},
		{"empty key", base, nil, ErrInvalidSignature},
		{"modified oid", with(func(sr *SturdyRef) { sr.OID = sym("b-service") }), key, ErrInvalidSignature},
		{"oid of another kind", with(func(sr *SturdyRef) { sr.OID = str("a-service") }), key, ErrInvalidSignature},
		{"altered caveat", with(func(sr *SturdyRef) { sr.Caveats[1] = mustParse(t, parseText(t, "<reject <rec foo [<_> <_>]>>")) }), key, ErrInvalidSignature},
		{"removed last caveat", with(func(sr *SturdyRef) { sr.Caveats = sr.Caveats[:2] }), key, ErrInvalidSignature},
		{"removed first caveat", with(func(sr *SturdyRef) { sr.Caveats = sr.Caveats[1:] }), key, ErrInvalidSignature},
		{"all caveats removed", with(func(sr *SturdyRef) { sr.Caveats = nil }), key, ErrInvalidSignature},
		{"reordered caveats", with(func(sr *SturdyRef) { sr.Caveats[0], sr.Caveats[1] = sr.Caveats[1], sr.Caveats[0] }), key, ErrInvalidSignature},
		{"truncated sig", with(func(sr *SturdyRef) { sr.Sig = sr.Sig[:15] }), key, ErrInvalidSignature},
		{"extended sig", with(func(sr *SturdyRef) { sr.Sig = append(sr.Sig, 0) }), key, ErrInvalidSignature},
		{"empty sig", with(func(sr *SturdyRef) { sr.Sig = nil }), key, ErrInvalidSignature},
		{"flipped sig bit", with(func(sr *SturdyRef) { sr.Sig[7] ^= 1 }), key, ErrInvalidSignature},
		{"non-sequence caveats", with(func(sr *SturdyRef) { sr.Caveats = nil; sr.BadCaveats = dict() }), key, ErrMalformedRef},
		{"missing oid", with(func(sr *SturdyRef) { sr.OID = nil }), key, ErrMalformedRef},
		{"nil caveat", with(func(sr *SturdyRef) { sr.Caveats[0] = nil }), key, ErrMalformedRef},
		{"embedded in oid", with(func(sr *SturdyRef) { sr.OID = seq(preserves.NewEmbedded(&fakeCap{})) }), key, ErrMalformedRef},
		{"embedded in caveat", with(func(sr *SturdyRef) {
			sr.Caveats[2] = Reject{Pattern: Lit{Value: preserves.NewEmbedded(str("x"))}}
		}), key, ErrMalformedRef},
		{"nil ref", nil, key, ErrMalformedRef},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sr.Validate(tc.key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			other := ErrMalformedRef
			if tc.want == ErrMalformedRef {
				other = ErrInvalidSignature
			}
			if errors.Is(err, other) {
				t.Fatalf("%v also matches %v", err, other)
			}
		})
	}
	if err := base.Validate(key); err != nil {
		t.Fatalf("test cases modified the base ref: %v", err)
	}

	// The non-sequence caveats field, arriving as a value.
	v := parseText(t, "<ref {oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==] caveats: <reject <_>>}>")
	sr, err := SturdyRefFromValue(v)
	if err != nil {
		t.Fatalf("a non-sequence caveats field must parse (and fail validation): %v", err)
	}
	if err := sr.Validate(key); !errors.Is(err, ErrMalformedRef) {
		t.Fatalf("Validate = %v, want ErrMalformedRef", err)
	}
	if !preserves.Equal(sr.ToValue(), v) {
		t.Fatalf("ToValue = %v", sr.ToValue())
	}
	if _, err := sr.Attenuate(); !errors.Is(err, ErrMalformedRef) {
		t.Fatalf("Attenuate of a malformed ref = %v", err)
	}
}

func TestSturdyRefFromValueShapes(t *testing.T) {
	good := []string{
		"<ref {oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>",
		"<ref {oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==] extra: 1}>",
		"<ref {oid: [1 {a: b}] sig: #[] caveats: []}>",
		"<ref {oid: a sig: #[] caveats: [junk <or []>]}>",
		"@ann <ref @x {oid: @y a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>",
	}
	for _, src := range good {
		sr, err := SturdyRefFromValue(parseText(t, src))
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if !preserves.Equal(sr.ToValue(), parseText(t, src)) && !bytes.Contains([]byte(src), []byte("extra")) {
			t.Errorf("%s: ToValue = %v", src, sr.ToValue())
		}
	}
	// Empty but present caveats survive the round trip.
	sr, _ := SturdyRefFromValue(parseText(t, "<ref {oid: x sig: #[] caveats: []}>"))
	if !sr.CaveatsPresent || len(sr.Caveats) != 0 {
		t.Errorf("empty caveats: %#v", sr)
	}
	// Unknown caveats are kept, not errors, and reject everything.
	sr, _ = SturdyRefFromValue(parseText(t, "<ref {oid: a sig: #[] caveats: [junk]}>"))
	if _, ok := sr.Caveats[0].(Unknown); !ok {
		t.Errorf("junk caveat parsed as %T", sr.Caveats[0])
	}

	bad := []string{
		"ref",
		"<ref>",
		"<ref {oid: a sig: #[]} extra>",
		"<sturdy {oid: a sig: #[]}>",
		"<ref [a #[]]>",
		"<ref {sig: #[]}>",
		"<ref {oid: a}>",
		`<ref {oid: a sig: "not bytes"}>`,
	}
	for _, src := range bad {
		if sr, err := SturdyRefFromValue(parseText(t, src)); !errors.Is(err, ErrNotSturdyRef) {
			t.Errorf("%s: got %#v, %v; want ErrNotSturdyRef", src, sr, err)
		}
	}
	if _, err := SturdyRefFromValue(nil); !errors.Is(err, ErrNilValue) {
		t.Errorf("nil: %v", err)
	}

	// The Parameters dictionary on its own (a gatekeeper step's detail).
	params := parseText(t, "{oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==]}")
	sr, err := ParametersFromValue(params)
	if err != nil {
		t.Fatal(err)
	}
	if err := sr.Validate([]byte("hello")); err != nil {
		t.Errorf("parameters: %v", err)
	}
	if !preserves.Equal(sr.Parameters(), params) {
		t.Errorf("Parameters() = %v", sr.Parameters())
	}
	if _, err := ParametersFromValue(parseText(t, "[oid a-service]")); !errors.Is(err, ErrNotSturdyRef) {
		t.Errorf("non-dictionary parameters: %v", err)
	}
	if _, err := ParametersFromValue(nil); !errors.Is(err, ErrNilValue) {
		t.Errorf("nil parameters: %v", err)
	}
}

func TestSturdyAttenuate(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != KeyLen {
		t.Fatalf("key length %d", len(key))
	}
	sr := Mint(rec("service", str("db")), key)
	// Invalid caveats are refused with Validate's errors.
	if _, err := sr.Attenuate(mustParse(t, parseText(t, "<rewrite <bind <_>> <ref 1>>"))); !errors.Is(err, ErrUnboundRef) {
		t.Fatalf("unbound ref: %v", err)
	}
	if _, err := sr.Attenuate(mustParse(t, parseText(t, "<rewrite <not <bind <_>>> <lit 1>>"))); !errors.Is(err, ErrBindingUnderNegation) {
		t.Fatalf("bind under not: %v", err)
	}
	// An embedded value cannot be signed.
	emb := Reject{Pattern: Lit{Value: preserves.NewEmbedded(&fakeCap{})}}
	if _, err := sr.Attenuate(emb); !errors.Is(err, ErrMalformedRef) {
		t.Fatalf("embedded caveat: %v", err)
	}
	// Attenuation needs no key, and only the right key validates.
	a, err := sr.Attenuate(mustParse(t, parseText(t, "<reject <_>>")))
	if err != nil {
		t.Fatal(err)
	}
	if !a.CaveatsPresent || !preserves.Equal(a.OID, sr.OID) {
		t.Fatalf("attenuated ref %#v", a)
	}
	if err := a.Validate(key); err != nil {
		t.Fatal(err)
	}
	other, _ := NewKey()
	if err := a.Validate(other); !errors.Is(err, ErrInvalidSignature) {
		t.Fatalf("other key: %v", err)
	}
	// Zero extra caveats: same signature, a fresh value.
	same, err := sr.Attenuate()
	if err != nil || !bytes.Equal(same.Sig, sr.Sig) || same == sr || same.CaveatsPresent {
		t.Fatalf("empty attenuation = %#v, %v", same, err)
	}
	// Round trip through text keeps validity.
	back, err := SturdyRefFromValue(parseText(t, preserves.FormatText(a.ToValue())))
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(key); err != nil {
		t.Fatalf("after text round trip: %v", err)
	}
}

func TestMintPanicsOnEmbedded(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, ErrMalformedRef) {
			t.Fatalf("recovered %v, want an ErrMalformedRef panic", r)
		}
	}()
	Mint(seq(preserves.NewEmbedded(&fakeCap{})), []byte("k"))
}

func TestMintAnyKeyLength(t *testing.T) {
	// Keys longer than the BLAKE2s block are hashed first by HMAC; they
	// must work, and differ from their prefix.
	long := bytes.Repeat([]byte("passphrase"), 20)
	a := Mint(sym("x"), long)
	b := Mint(sym("x"), long[:64])
	if err := a.Validate(long); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Sig, b.Sig) || len(a.Sig) != SigLen {
		t.Fatalf("sigs %x %x", a.Sig, b.Sig)
	}
}

// FuzzSturdyRef: decoding arbitrary bytes into a ref, validating,
// attenuating and rendering it never panics.
func FuzzSturdyRef(f *testing.F) {
	seed := func(src string) {
		v, err := preserves.ParseText(src)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(preserves.EncodeCanonical(v))
	}
	seed("<ref {oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>")
	seed("<ref {oid: a-service sig: #x\"e7416610af25a4576285e10bdd877776\" caveats: [" + vecCaveat1 + " " + vecCaveat2 + "]}>")
	seed("<ref {oid: a sig: #[] caveats: 3}>")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := preserves.DecodeBinary(data, preserves.DecodeOptions{})
		if err != nil {
			return
		}
		sr, err := SturdyRefFromValue(v)
		if err != nil {
			return
		}
		_ = sr.Validate([]byte("hello"))
		back, err := SturdyRefFromValue(sr.ToValue())
		if err != nil {
			t.Fatalf("re-parse of ToValue failed: %v", err)
		}
		if !preserves.Equal(back.ToValue(), sr.ToValue()) {
			t.Fatalf("ToValue not stable")
		}
		if a, err := sr.Attenuate(Reject{Pattern: PDiscard{}}); err == nil {
			if len(a.Caveats) != len(sr.Caveats)+1 {
				t.Fatalf("attenuate lost caveats")
			}
		}
	})
}

// Errors name the place of the offending part when the value has one.
func TestSturdyRefErrorsNamePositions(t *testing.T) {
	pos := preserves.Pos{File: "ref.pr", Line: 2, Col: 5}
	sig := &preserves.Annotated{Pos: pos, Item: preserves.String("not bytes")}
	v := preserves.NewRecord(sym("ref"), preserves.Dict(sym("oid"), sym("a"), sym("sig"), sig))
	_, err := SturdyRefFromValue(v)
	if !errors.Is(err, ErrNotSturdyRef) {
		t.Fatalf("err = %v, want ErrNotSturdyRef", err)
	}
	if !strings.Contains(err.Error(), "ref.pr:2:5") || !strings.Contains(err.Error(), "sig") {
		t.Errorf("err = %q, want the position and the key", err)
	}
}
