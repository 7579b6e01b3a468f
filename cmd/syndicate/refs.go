package main

// mint, attenuate and noise: sturdy refs and Noise keys from the command
// line, as syndicate-rs's syndicate-macaroon makes them (runtime spec
// §14.5): `mint` signs an oid with a key (a phrase's UTF-8 bytes, or hex
// digits with whitespace ignored) and adds caveats; `attenuate` adds
// caveats to an existing ref, needing no key; `noise` prints a
// NoiseServiceSpec whose secret key is the BLAKE2s hash of the text as
// typed.

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	"github.com/syndicate-go/syndicate/preserves"
)

// refOpts are the flags of mint, attenuate and noise.
type refOpts struct {
	oid, phrase, hexKey, service, protocol string
	random                                 bool
	caveats                                []string
}

func (cl *cli) mint(_ context.Context, o refOpts) error {
	if o.oid == "" {
		return usagef("mint needs --oid VALUE")
	}
	key, err := o.key("mint")
	if err != nil {
		return err
	}
	oid, err := parseValue(o.oid)
	if err != nil {
		return usagef("--oid: %v", err)
	}
	sr, err := caveat.Mint(oid, key).Attenuate()
	if err != nil {
		return err
	}
	return cl.printRef(sr, o.caveats)
}

func (cl *cli) attenuate(_ context.Context, o refOpts, args []string) error {
	v, err := parseValue(args[0])
	if err != nil {
		return usagef("REF: %v", err)
	}
	sr, err := caveat.SturdyRefFromValue(v)
	if err != nil {
		return usagef("REF: %v", err)
	}
	if len(o.caveats) == 0 {
		return usagef("attenuate needs at least one --caveat")
	}
	return cl.printRef(sr, o.caveats)
}

// printRef adds the caveats to sr and prints it in text form.
func (cl *cli) printRef(sr *caveat.SturdyRef, texts []string) error {
	var cs []caveat.Caveat
	for _, text := range texts {
		v, err := parseValue(text)
		if err != nil {
			return usagef("--caveat: %v", err)
		}
		c, err := caveat.FromValue(v)
		if err != nil {
			return usagef("--caveat %s: %v", text, err)
		}
		if _, unknown := c.(caveat.Unknown); unknown {
			// It would parse, and make a ref that grants nothing.
			return usagef("--caveat %s: not a caveat (<rewrite P T>, <or [C …]> or <reject P>)", text)
		}
		cs = append(cs, c)
	}
	if err := caveat.Validate(cs); err != nil {
		return usagef("--caveat: %v", err)
	}
	if len(cs) > 0 {
		var err error
		if sr, err = sr.Attenuate(cs...); err != nil {
			return usagef("--caveat: %v", err)
		}
	}
	fmt.Fprintln(cl.stdout, preserves.FormatText(sr.ToValue()))
	return nil
}

// key is mint's key: --phrase's UTF-8 bytes, or --hex's digits.
func (o refOpts) key(cmd string) ([]byte, error) {
	switch {
	case (o.phrase != "") == (o.hexKey != ""):
		return nil, usagef("%s needs one of --phrase TEXT and --hex KEY", cmd)
	case o.phrase != "":
		return []byte(o.phrase), nil
	}
	k, err := hex.DecodeString(strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, o.hexKey))
	if err != nil {
		return nil, usagef("--hex: %v", err)
	}
	return k, nil
}

// noise prints a NoiseServiceSpec: {service, key, secretKey[, protocol]}.
// The key pair comes from --phrase or --hex (hashed as typed, as the
// reference does) or is random (--random, and noise-key's default).
func (cl *cli) noise(_ context.Context, o refOpts, args []string) error {
	if len(args) == 1 {
		if o.service != "" {
			return usagef("noise: give the service once (--service or SERVICE)")
		}
		o.service = args[0]
	}
	var secret, public []byte
	var err error
	switch n := btoi(o.phrase != "") + btoi(o.hexKey != "") + btoi(o.random); {
	case n > 1:
		return usagef("noise takes one of --phrase, --hex and --random")
	case o.phrase != "":
		secret, public, err = noisesession.KeyFromText([]byte(o.phrase))
	case o.hexKey != "":
		secret, public, err = noisesession.KeyFromText([]byte(o.hexKey))
	default:
		secret, public, err = noisesession.GenerateKey()
	}
	if err != nil {
		return err
	}
	var kvs []preserves.Value
	if o.service != "" {
		service, err := parseValue(o.service)
		if err != nil {
			return usagef("--service: %v", err)
		}
		kvs = append(kvs, noisesession.SymService, service)
	}
	kvs = append(kvs, noisesession.SymKey, preserves.ByteStringFrom(public),
		noisesession.SymSecretKey, preserves.ByteStringFrom(secret))
	if o.protocol != "" {
		kvs = append(kvs, noisesession.SymProtocol, preserves.String(o.protocol))
	}
	fmt.Fprintln(cl.stdout, preserves.FormatText(preserves.Dict(kvs...)))
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
