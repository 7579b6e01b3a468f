package caveat

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/blake2s"

	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// SigLen is the length of a sturdy ref signature: HMAC-BLAKE2s-256 output
// truncated to 16 bytes.
const SigLen = 16

// KeyLen is the length of keys made by NewKey. Any key length is accepted
// by Mint and Validate (a passphrase's bytes, say).
const KeyLen = 16

// SturdyRef is a parsed `<ref {oid: …, sig: #[…], caveats: […]}>` (the
// caveats key is optional). It is a macaroon: Sig chains an HMAC over the
// oid and then over each caveat, so anyone holding a ref can attenuate it
// further, but only the holder of the original key can check it.
//
// Treat a SturdyRef as immutable; Attenuate returns a new one.
type SturdyRef struct {
	// OID names the target at the gatekeeper (any value without embeddeds).
	OID preserves.Value
	// Caveats, oldest first; they are applied newest first.
	Caveats []Caveat
	// CaveatsPresent records whether the caveats key was present, so that
	// ToValue reproduces a parsed ref exactly: `{caveats: []}` and a
	// missing key sign the same but are different values.
	CaveatsPresent bool
	// BadCaveats holds a caveats field that is not a sequence (the schema's
	// @invalid case). Such a ref parses, so that a gatekeeper can say
	// "failed validation" rather than "unparsable", but never validates.
	BadCaveats preserves.Value
	// Sig is the signature, SigLen bytes in a well-formed ref.
	Sig []byte
}

// NewKey returns KeyLen fresh random bytes for minting.
func NewKey() ([]byte, error) {
	k := make([]byte, KeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// Mint returns a ref to oid, with no caveats, signed with key. The oid must
// not contain embedded values (they have no canonical encoding to sign):
// Mint panics if it does, as that is a programming error.
func Mint(oid preserves.Value, key []byte) *SturdyRef {
	oid = preserves.Strip(oid)
	data, err := signable(oid, "oid")
	if err != nil {
		panic(err)
	}
	return &SturdyRef{OID: oid, Sig: mac(key, data)}
}

// Attenuate returns a new ref with cs appended to the caveats and the
// signature chain continued over them; it needs no key. The caveats are
// checked with Validate first, so the errors are those of Validate, or
// ErrMalformedRef when sr's caveats field is unusable or a caveat contains
// an embedded value.
func (sr *SturdyRef) Attenuate(cs ...Caveat) (*SturdyRef, error) {
	if err := sr.wellFormed(); err != nil {
		return nil, err
	}
	if err := Validate(cs); err != nil {
		return nil, err
	}
	sig, err := chain(sr.Sig, cs, len(sr.Caveats))
	if err != nil {
		return nil, err
	}
	all := make([]Caveat, 0, len(sr.Caveats)+len(cs))
	all = append(append(all, sr.Caveats...), cs...)
	return &SturdyRef{
		OID:            sr.OID,
		Caveats:        all,
		CaveatsPresent: sr.CaveatsPresent || len(cs) > 0,
		Sig:            sig,
	}, nil
}

// ErrInvalidSignature: a sturdy ref's signature does not match its
// contents under the given key.
var ErrInvalidSignature = errors.New("caveat: invalid sturdy ref signature")

// Validate checks sr against key: the signature recomputed from the key,
// the oid and every caveat must equal Sig byte for byte
// (ErrInvalidSignature otherwise). A ref whose caveats field is not a
// sequence, or which contains something unsignable, fails with
// ErrMalformedRef.
//
// Validate does not check the caveats themselves (§14.3); attenuating the
// target capability with them does.
func (sr *SturdyRef) Validate(key []byte) error {
	if err := sr.wellFormed(); err != nil {
		return err
	}
	data, err := signable(sr.OID, "oid")
	if err != nil {
		return err
	}
	want, err := chain(mac(key, data), sr.Caveats, 0)
	if err != nil {
		return err
	}
	// hmac.Equal is constant-time for equal lengths and false for a
	// truncated or extended sig.
	if !hmac.Equal(want, sr.Sig) {
		return errorf(ErrInvalidSignature, "signature does not match oid and caveats under this key")
	}
	return nil
}

// ErrMalformedRef: a sturdy ref parsed but cannot be validated or
// attenuated, e.g. its `caveats` field is present but not a sequence,
// or it contains a value that cannot be signed.
var ErrMalformedRef = errors.New("caveat: malformed sturdy ref")

func (sr *SturdyRef) wellFormed() error {
	switch {
	case sr == nil:
		return errorf(ErrMalformedRef, "nil sturdy ref")
	case sr.BadCaveats != nil:
		return errorf(ErrMalformedRef, "caveats field is a %s, not a sequence", sr.BadCaveats.Kind())
	case sr.OID == nil:
		return errorf(ErrMalformedRef, "missing oid")
	}
	for i, c := range sr.Caveats {
		if c == nil {
			return errorf(ErrMalformedRef, "caveat %d is nil", i)
		}
	}
	return nil
}

// chain continues the HMAC chain from sig over cs; first is the index of
// cs[0] in the whole list, for error messages.
func chain(sig []byte, cs []Caveat, first int) ([]byte, error) {
	for i, c := range cs {
		if c == nil {
			return nil, errorf(ErrMalformedRef, "caveat %d is nil", first+i)
		}
		data, err := signable(ToValue(c), fmt.Sprintf("caveat %d", first+i))
		if err != nil {
			return nil, err
		}
		sig = mac(sig, data)
	}
	return sig, nil
}

// signable returns the canonical encoding of v, refusing embedded values:
// the reference signs with a codec that has no embedded domain, and a
// capability has no meaning inside a ref that outlives it anyway.
func signable(v preserves.Value, what string) ([]byte, error) {
	if v == nil {
		return nil, errorf(ErrMalformedRef, "%s is missing", what)
	}
	if preserves.HasEmbedded(v) {
		return nil, errorf(ErrMalformedRef, "%s contains an embedded value, which cannot be signed", what)
	}
	return preserves.EncodeCanonical(v), nil
}

// mac is f(k, d) of sturdy.prs: HMAC-BLAKE2s-256 truncated to SigLen.
func mac(key, data []byte) []byte {
	m := hmac.New(newBlake2s256, key)
	m.Write(data)
	return m.Sum(nil)[:SigLen]
}

func newBlake2s256() hash.Hash {
	h, err := blake2s.New256(nil)
	if err != nil {
		panic(err) // only possible with a key longer than 32 bytes
	}
	return h
}

// SturdyRefFromValue parses `<ref {oid: any, sig: bytes, caveats: […]}>`.
// Extra dictionary keys are ignored (schema dictionaries are open) and
// annotations are dropped. A caveats field that is not a sequence is kept
// in BadCaveats rather than rejected here; Validate refuses it.
func SturdyRefFromValue(v preserves.Value) (*SturdyRef, error) {
	return parseRef(v, "sturdy ref", sturdy.ParseSturdyRef, func(r sturdy.SturdyRef) sturdy.Parameters { return r.Parameters })
}

// ParametersFromValue parses the Parameters dictionary alone, as found in
// the detail of a gatekeeper `ref` step: `{oid: any, sig: bytes, caveats:
// […]}`.
func ParametersFromValue(v preserves.Value) (*SturdyRef, error) {
	return parseRef(v, "sturdy ref parameters", sturdy.ParseParameters, func(p sturdy.Parameters) sturdy.Parameters { return p })
}

// parseRef parses v with parse and converts the Parameters it holds.
func parseRef[T any](v preserves.Value, what string, parse func(preserves.Value) (T, error), params func(T) sturdy.Parameters) (*SturdyRef, error) {
	if v == nil {
		return nil, errorf(ErrNilValue, "%s expected", what)
	}
	x, err := parse(v)
	if err != nil {
		return nil, notSturdy(err)
	}
	return fromParameters(params(x)), nil
}

// ErrNotSturdyRef: a value does not have the shape `<ref {oid: _, sig:
// #[..] …}>`.
var ErrNotSturdyRef = errors.New("caveat: not a sturdy ref")

// notSturdy classes a parse error, which names the path and position.
func notSturdy(err error) error {
	var pe *schema.ParseError
	if errors.As(err, &pe) {
		err = pe.Deepest()
	}
	return &Error{Err: ErrNotSturdyRef, Msg: err.Error()}
}

func fromParameters(p sturdy.Parameters) *SturdyRef {
	sr := &SturdyRef{OID: preserves.Strip(p.Oid), Sig: p.Sig}
	switch c := p.Caveats.(type) {
	case sturdy.CaveatsFieldPresent:
		sr.CaveatsPresent = true
		sr.Caveats = mapSlice(c.Caveats, caveatFrom)
	case sturdy.CaveatsFieldInvalid:
		sr.CaveatsPresent = true
		sr.BadCaveats = preserves.Strip(c.Caveats)
	}
	return sr
}

// ToValue renders the ref as `<ref {oid: …, sig: …, caveats: […]}>`,
// with the caveats key only when CaveatsPresent (or BadCaveats) says so.
func (sr *SturdyRef) ToValue() preserves.Value {
	return sturdy.SturdyRef{Parameters: sr.parameters()}.ToValue()
}

// Parameters renders the Parameters dictionary alone (ToValue's field).
func (sr *SturdyRef) Parameters() preserves.Value { return sr.parameters().ToValue() }

func (sr *SturdyRef) parameters() sturdy.Parameters {
	p := sturdy.Parameters{Oid: sr.OID, Sig: sr.Sig, Caveats: sturdy.CaveatsFieldAbsent{}}
	switch {
	case sr.BadCaveats != nil:
		p.Caveats = sturdy.CaveatsFieldInvalid{Caveats: sr.BadCaveats}
	case sr.CaveatsPresent || len(sr.Caveats) > 0:
		p.Caveats = sturdy.CaveatsFieldPresent{Caveats: mapSlice(sr.Caveats, caveatTo)}
	}
	return p
}
