package main

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/curve25519"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

// mint signs as syndicate-macaroon does: the reference signatures of
// runtime spec §14.5.
func TestMintMatchesReferenceSignatures(t *testing.T) {
	for _, c := range []struct {
		args []string
		sig  string
	}{
		{[]string{"--oid", "a-service", "--phrase", "hello"}, "2534c641e60282884c5d6ff64b65c7f2"},
		{[]string{"--oid", `"syndicate"`, "--hex", "0000 0000 0000 0000\n0000 0000 0000 0000"}, "69ca300c1dbfa08fba692102dd82311a"},
		{[]string{"--oid", "a-service", "--phrase", "hello", "--caveat", "<rewrite <bind <_>> <ref 0>>"}, "fc59c3f944e8119a15316c60d88fd36f"},
		{[]string{"--oid", "a-service", "--phrase", "hello", "--caveat", "<rewrite <bind <_>> <ref 0>>",
			"--caveat", "<reject <rec foo [<_>]>>"}, "e7416610af25a4576285e10bdd877776"},
	} {
		code, out, errs := cliRun(t, append([]string{"mint"}, c.args...)...)
		require.Equal(t, 0, code, errs)
		v, err := preserves.ParseText(strings.TrimSpace(out))
		require.NoError(t, err, out)
		sr, err := caveat.SturdyRefFromValue(v)
		require.NoError(t, err, out)
		require.Equal(t, c.sig, hex.EncodeToString(sr.Sig), "%v", c.args)
	}
	// The same value as the reference's (its text writer spells bytes in
	// base64; both read to the same canonical encoding).
	_, out, _ := cliRun(t, "mint", "--oid", "a-service", "--phrase", "hello")
	got, err := preserves.ParseText(strings.TrimSpace(out))
	require.NoError(t, err)
	want, err := preserves.ParseText("<ref {oid: a-service sig: #[JTTGQeYCgohMXW/2S2XH8g==]}>")
	require.NoError(t, err)
	require.True(t, preserves.Equal(want, got), out)
	for _, bad := range [][]string{{"mint", "--phrase", "x"}, {"mint", "--oid", "a"}, {"mint", "--oid", "a", "--phrase", "x", "--hex", "00"},
		{"mint", "--oid", "a", "--hex", "zz"}, {"mint", "--oid", "a", "--phrase", "x", "--caveat", "<frob>"}} {
		code, _, errs := cliRun(t, bad...)
		require.Equal(t, 2, code, "%v: %s", bad, errs)
	}
}

// attenuate continues the chain without the key: the same signature as
// minting with the caveats.
func TestAttenuate(t *testing.T) {
	_, ref, _ := cliRun(t, "mint", "--oid", "a-service", "--phrase", "hello", "--caveat", "<rewrite <bind <_>> <ref 0>>")
	code, out, errs := cliRun(t, "attenuate", strings.TrimSpace(ref), "--caveat", "<reject <rec foo [<_>]>>")
	require.Equal(t, 0, code, errs)
	v, err := preserves.ParseText(strings.TrimSpace(out))
	require.NoError(t, err)
	sr, err := caveat.SturdyRefFromValue(v)
	require.NoError(t, err)
	require.Equal(t, "e7416610af25a4576285e10bdd877776", hex.EncodeToString(sr.Sig))
	require.NoError(t, sr.Validate([]byte("hello")))
	code, _, _ = cliRun(t, "attenuate", strings.TrimSpace(ref))
	require.Equal(t, 2, code, "at least one caveat")
}

// noise's secret key is the BLAKE2s hash of the text as typed: for --hex,
// its ASCII characters, not the bytes they decode to.
func TestNoiseKeyFromText(t *testing.T) {
	for _, c := range []struct{ flag, text string }{{"--phrase", "correct horse"}, {"--hex", "00ff"}} {
		code, out, errs := cliRun(t, "noise", "--service", `"config"`, c.flag, c.text, "--protocol", "Noise_NK_25519_ChaChaPoly_BLAKE2s")
		require.Equal(t, 0, code, errs)
		secret := blake2s.Sum256([]byte(c.text))
		public, err := curve25519.X25519(secret[:], curve25519.Basepoint)
		require.NoError(t, err)
		want := preserves.FormatText(preserves.Dict(
			preserves.Symbol("service"), preserves.String("config"),
			preserves.Symbol("key"), preserves.ByteStringFrom(public),
			preserves.Symbol("secretKey"), preserves.ByteStringFrom(secret[:]),
			preserves.Symbol("protocol"), preserves.String("Noise_NK_25519_ChaChaPoly_BLAKE2s")))
		require.Equal(t, want+"\n", out, c.flag)
	}
	code, _, _ := cliRun(t, "noise", "--phrase", "a", "--random")
	require.Equal(t, 2, code)
}
