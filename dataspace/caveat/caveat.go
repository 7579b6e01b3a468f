// Package caveat implements the attenuation language of sturdy.prs: caveats
// that filter and rewrite the values sent through a capability, and sturdy
// refs (macaroons) that carry a chain of caveats under an HMAC signature.
//
// # Design
//
// A [Caveat] is one of [Rewrite], [Alts], [Reject] or [Unknown]. The
// vocabulary is defined once, in sturdy.prs: [FromValue] parses with the
// generated package dataspace/schemas/sturdy, which tries the schema's
// alternatives in order, and converts the result into these runtime forms
// (schema.go), which [Apply] and [Validate] walk. Any value that is not a
// rewrite, an `or` or a reject becomes an [Unknown] caveat rather than an
// error: the schema ends with `@unknown any`, and an unknown caveat rejects
// everything, so a peer that sends a caveat we do not understand gets a
// capability that fails closed. Parsing is strict about arity where the
// schema language is not (`<rewrite P T extra>` is unknown, not a rewrite;
// the module is generated with -exact) for the same reason: anything
// unexpected is treated as "deny". Each caveat is judged on its own, so a
// malformed caveat inside an `attenuate` template is unknown there, not
// the caveat around it.
//
// Patterns ([Pattern]) and templates ([Template]) are small sealed sum types.
// Unlike dataspace patterns, caveat patterns are not extensible: `<rec L
// [..]>` and `<arr [..]>` match exactly that many fields or items. Only
// dictionaries allow extra keys.
//
// Go deviation: `<rec L>` without a field list is [PLabel], any record
// labelled L (the structural reading of scripts in the fork dialect,
// docs/language.md "Dialects"). Our sturdy.prs declares it (PCompound's
// `anyRec` alternative); a peer without it reads the caveat as unknown, so
// it fails closed there.
//
// [ToValue] renders through the generated types too, and is the exact
// inverse of [FromValue] on annotation-free values: ToValue(FromValue(v))
// equals Strip(v) for every v. This matters because a sturdy ref's
// signature is computed over the canonical encoding of each caveat as
// re-encoded from its parsed form, so parsing must not lose or normalise
// anything.
//
// [Apply] runs a caveat list newest (last) first. [Validate] performs the
// checks the reference runs at attenuation time (no binding under `not`,
// every `<ref n>` bound). `<attenuate T [C…]>` templates need the runtime's
// capability type; this package only knows it through the [Attenuable]
// interface, so it stays a pure data package importing nothing but
// preserves and the generated schema packages.
//
// Sturdy refs live in sturdy.go: [Mint], [SturdyRef.Attenuate] and
// [SturdyRef.Validate] compute and check the signature chain
// f(…f(f(k, e(oid)), e(c1))…, e(cn)) where f is HMAC-BLAKE2s-256 truncated to
// 16 bytes and e is the canonical binary encoding.
package caveat

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
)

// ErrNilValue: a nil Value was given where a Preserves value is needed.
var ErrNilValue = errors.New("caveat: nil value")

// Error is the error type of this package: a sentinel class plus detail.
// Every error this package returns is one, so callers test the class with
// errors.Is. The classes stand beside the code that returns them:
// ErrNilValue above, ErrBindingUnderNegation and ErrUnboundRef in
// validate.go, ErrInvalidSignature, ErrMalformedRef and ErrNotSturdyRef in
// sturdy.go.
type Error struct {
	Err error  // the class: one of the sentinel errors named above
	Msg string // what exactly went wrong

	named bool // Msg already quotes the offending rewrite
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Msg
}

// Unwrap returns the sentinel class.
func (e *Error) Unwrap() error { return e.Err }

func errorf(class error, format string, args ...any) error {
	return &Error{Err: class, Msg: fmt.Sprintf(format, args...)}
}

// Caveat is one attenuation step: [Rewrite], [Alts], [Reject] or [Unknown].
type Caveat interface {
	isCaveat()
}

// Rewrite is `<rewrite P T>`: values matching P are replaced by T
// instantiated with P's bindings; other values are rejected.
type Rewrite struct {
	Pattern  Pattern
	Template Template
}

// Alts is `<or [R…]>`: the first alternative whose pattern matches decides.
type Alts struct {
	Alternatives []Rewrite
}

// Reject is `<reject P>`: values matching P are rejected, others pass
// unchanged.
type Reject struct {
	Pattern Pattern
}

// Unknown is any other value in caveat position. It rejects everything.
type Unknown struct {
	Value preserves.Value
}

func (Rewrite) isCaveat() {}
func (Alts) isCaveat()    {}
func (Reject) isCaveat()  {}
func (Unknown) isCaveat() {}

// Pattern is a caveat pattern: [PDiscard], [PAtom], [PEmbedded], [PBind],
// [PAnd], [PNot], [Lit], [PRec], [PLabel], [PArr] or [PDict].
type Pattern interface {
	isPattern()
}

// PDiscard is `<_>`: matches anything.
type PDiscard struct{}

// PAtom is one of the bare symbols Boolean, Double, SignedInteger, String,
// ByteString, Symbol: matches any atom of that kind. Kind must be one of
// preserves.KindBoolean … preserves.KindSymbol.
type PAtom struct {
	Kind preserves.Kind
}

// PEmbedded is the bare symbol Embedded: matches any embedded value.
type PEmbedded struct{}

// PBind is `<bind P>`: captures the value, then matches P against it.
type PBind struct {
	Pattern Pattern
}

// PAnd is `<and [P…]>`: every pattern must match, left to right.
type PAnd struct {
	Patterns []Pattern
}

// PNot is `<not P>`: matches when P does not. P must not bind.
type PNot struct {
	Pattern Pattern
}

// Lit is `<lit V>`, both a pattern (matches values equal to V, compound or
// not) and a template (yields V).
type Lit struct {
	Value preserves.Value
}

// PRec is `<rec L [P…]>`: a record labelled L with exactly len(Fields)
// fields, each matching its pattern.
type PRec struct {
	Label  preserves.Value
	Fields []Pattern
}

// PLabel is `<rec L>`: any record labelled L, whatever its fields. It is a
// Go extension of sturdy.prs, the structural reading of the fork dialect's
// `<rec L>` in scripts (docs/language.md, "Dialects"). A server without it
// parses `<rec L>` as an unknown caveat, which rejects everything: a
// capability carrying it across the wire fails closed, never open.
type PLabel struct {
	Label preserves.Value
}

// PArr is `<arr [P…]>`: a sequence of exactly len(Items) items.
type PArr struct {
	Items []Pattern
}

// PDictEntry is one key of a [PDict].
type PDictEntry struct {
	Key     preserves.Value
	Pattern Pattern
}

// PDict is `<dict {K: P …}>`: a dictionary holding every key K with a value
// matching P; extra keys are allowed. Entries are matched (and so bind) in
// ascending key order whatever order the slice has; [FromValue] returns them
// sorted.
type PDict struct {
	Entries []PDictEntry
}

func (PDiscard) isPattern()  {}
func (PAtom) isPattern()     {}
func (PEmbedded) isPattern() {}
func (PBind) isPattern()     {}
func (PAnd) isPattern()      {}
func (PNot) isPattern()      {}
func (Lit) isPattern()       {}
func (PRec) isPattern()      {}
func (PLabel) isPattern()    {}
func (PArr) isPattern()      {}
func (PDict) isPattern()     {}

// Template builds the replacement value of a rewrite: [TAttenuate], [TRef],
// [Lit], [TRec], [TArr] or [TDict].
type Template interface {
	isTemplate()
}

// TAttenuate is `<attenuate T [C…]>`: T must yield an embedded capability,
// which is returned attenuated with C… appended.
type TAttenuate struct {
	Template Template
	Caveats  []Caveat
}

// TRef is `<ref n>`: the n-th (0-based) binding of the pattern.
type TRef struct {
	Binding int64
	// big keeps a binding index outside the int64 range (the schema's `int`
	// is unbounded) so that ToValue reproduces it; such a ref is never
	// bound.
	big *big.Int
}

// TRec is `<rec L [T…]>`: builds a record labelled L.
type TRec struct {
	Label  preserves.Value
	Fields []Template
}

// TArr is `<arr [T…]>`: builds a sequence.
type TArr struct {
	Items []Template
}

// TDictEntry is one entry of a [TDict]; the key is literal.
type TDictEntry struct {
	Key      preserves.Value
	Template Template
}

// TDict is `<dict {K: T …}>`: builds a dictionary with literal keys.
type TDict struct {
	Entries []TDictEntry
}

func (TAttenuate) isTemplate() {}
func (TRef) isTemplate()       {}
func (Lit) isTemplate()        {}
func (TRec) isTemplate()       {}
func (TArr) isTemplate()       {}
func (TDict) isTemplate()      {}

// Attenuable is implemented by embedded payloads (the runtime's capability
// type) that an `<attenuate T [C…]>` template can attenuate.
// AttenuateCaveats returns the new payload, which is wrapped in a fresh
// *preserves.Embedded. The method is not called Attenuate so that the
// runtime's *Ref can keep its typed `Attenuate(cs ...Caveat) (*Ref, error)`
// alongside it.
type Attenuable interface {
	AttenuateCaveats(cs []Caveat) (any, error)
}

// atomKinds maps the PAtom symbols to kinds.
var atomKinds = [...]preserves.Kind{
	sturdy.PAtomBoolean:       preserves.KindBoolean,
	sturdy.PAtomDouble:        preserves.KindDouble,
	sturdy.PAtomSignedInteger: preserves.KindSignedInteger,
	sturdy.PAtomString:        preserves.KindString,
	sturdy.PAtomByteString:    preserves.KindByteString,
	sturdy.PAtomSymbol:        preserves.KindSymbol,
}

// Compare orders caveat lists by their Preserves forms (-1, 0, +1). The
// runtime uses it to order and compare capabilities, whose identity includes
// their attenuation.
func Compare(a, b []Caveat) int {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	return preserves.Compare(ListToValue(a), ListToValue(b))
}
