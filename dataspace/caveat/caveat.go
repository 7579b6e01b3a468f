// Package caveat implements the attenuation language of sturdy.prs: caveats
// that filter and rewrite the values sent through a capability, and sturdy
// refs (macaroons) that carry a chain of caveats under an HMAC signature.
//
// # Design
//
// A [Caveat] is one of [Rewrite], [Alts], [Reject] or [Unknown]. Caveats are
// parsed from Preserves values by [FromValue] following the schema's
// alternatives in order, and any value that is not a rewrite, an `or` or a
// reject becomes an [Unknown] caveat rather than an error: the schema ends
// with `@unknown any`, and an unknown caveat rejects everything, so a peer
// that sends a caveat we do not understand gets a capability that fails
// closed. Parsing is strict about arity (`<rewrite P T extra>` is unknown,
// not a rewrite) for the same reason: anything unexpected is treated as
// "deny".
//
// Patterns ([Pattern]) and templates ([Template]) are small sealed sum types.
// Unlike dataspace patterns, caveat patterns are not extensible: `<rec L
// [..]>` and `<arr [..]>` match exactly that many fields or items. Only
// dictionaries allow extra keys.
//
// Go deviation: `<rec L>` without a field list parses as [PLabel], any
// record labelled L (the structural reading of scripts in the fork dialect,
// docs/language.md "Dialects"). Elsewhere it is an unknown pattern, so such
// a caveat fails closed on a peer that lacks the extension.
//
// [ToValue] is the exact inverse of [FromValue] on annotation-free values:
// ToValue(FromValue(v)) equals Strip(v) for every v. This matters because a
// sturdy ref's signature is computed over the canonical encoding of each
// caveat as re-encoded from its parsed form, so parsing must not lose or
// normalise anything.
//
// [Apply] runs a caveat list newest (last) first. [Validate] performs the
// checks the reference runs at attenuation time (no binding under `not`,
// every `<ref n>` bound). `<attenuate T [C…]>` templates need the runtime's
// capability type; this package only knows it through the [Attenuable]
// interface, so it stays a pure data package importing nothing but
// preserves.
//
// Sturdy refs live in sturdy.go: [Mint], [SturdyRef.Attenuate] and
// [SturdyRef.Validate] compute and check the signature chain
// f(…f(f(k, e(oid)), e(c1))…, e(cn)) where f is HMAC-BLAKE2s-256 truncated to
// 16 bytes and e is the canonical binary encoding.
package caveat

import (
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
)

// Sentinel errors. Every error this package returns wraps one of them (via
// *Error), so callers test with errors.Is.
var (
	// ErrUnboundRef: a template's `<ref n>` names no binding of its pattern.
	ErrUnboundRef = errors.New("caveat: unbound reference")
	// ErrBindingUnderNegation: a rewrite pattern has a `bind` inside `not`.
	ErrBindingUnderNegation = errors.New("caveat: binding under negation")
	// ErrInvalidSignature: a sturdy ref's signature does not match its
	// contents under the given key.
	ErrInvalidSignature = errors.New("caveat: invalid sturdy ref signature")
	// ErrMalformedRef: a sturdy ref parsed but cannot be validated or
	// attenuated, e.g. its `caveats` field is present but not a sequence,
	// or it contains a value that cannot be signed.
	ErrMalformedRef = errors.New("caveat: malformed sturdy ref")
	// ErrNotSturdyRef: a value does not have the shape `<ref {oid: _, sig:
	// #[..] …}>`.
	ErrNotSturdyRef = errors.New("caveat: not a sturdy ref")
	// ErrNilValue: a nil Value was given where a Preserves value is needed.
	ErrNilValue = errors.New("caveat: nil value")
)

// Error is the error type of this package: a sentinel class plus detail.
type Error struct {
	Err error  // one of the sentinel errors above
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
	big preserves.Value
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

// Symbols of the schema that label no record (the record labels are
// sturdy.Label…), compared against parsed values.
const (
	symDiscard  = preserves.Symbol("_")
	symEmbedded = preserves.Symbol("Embedded")
)

// atomKinds maps the PAtom symbols to kinds.
var atomKinds = map[preserves.Symbol]preserves.Kind{
	"Boolean":       preserves.KindBoolean,
	"Double":        preserves.KindDouble,
	"SignedInteger": preserves.KindSignedInteger,
	"String":        preserves.KindString,
	"ByteString":    preserves.KindByteString,
	"Symbol":        preserves.KindSymbol,
}

// FromValue parses one caveat. Every value is a caveat (unrecognised ones
// are [Unknown]), so the only error is a nil v. Annotations are ignored;
// literal values are kept without them.
func FromValue(v preserves.Value) (Caveat, error) {
	if v == nil {
		return nil, errorf(ErrNilValue, "caveat expected")
	}
	return parseCaveat(v), nil
}

// ListFromValue parses a sequence of caveats, as found in a sturdy ref's
// `caveats` field, an `attenuate` template or a relay WireRef.
func ListFromValue(v preserves.Value) ([]Caveat, error) {
	if v == nil {
		return nil, errorf(ErrNilValue, "caveat sequence expected")
	}
	seq, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok {
		return nil, errorf(ErrMalformedRef, "caveat sequence expected, got %s", preserves.Unwrap(v).Kind())
	}
	return parseCaveatList(seq), nil
}

func parseCaveatList(seq preserves.Sequence) []Caveat {
	cs, _ := parseSeq(seq, func(v preserves.Value) (Caveat, bool) { return parseCaveat(v), true })
	return cs
}

func parseCaveat(v preserves.Value) Caveat {
	if r, ok := parseRewrite(v); ok {
		return r
	}
	if rec, ok := record(v, sturdy.LabelOr, 1); ok {
		if alts, ok := parseSeq(rec.Fields[0], parseRewrite); ok {
			return Alts{Alternatives: alts}
		}
	}
	if rec, ok := record(v, sturdy.LabelReject, 1); ok {
		if p, ok := parsePattern(rec.Fields[0]); ok {
			return Reject{Pattern: p}
		}
	}
	return Unknown{Value: preserves.Strip(v)}
}

func parseRewrite(v preserves.Value) (Rewrite, bool) {
	rec, ok := record(v, sturdy.LabelRewrite, 2)
	if !ok {
		return Rewrite{}, false
	}
	p, ok := parsePattern(rec.Fields[0])
	if !ok {
		return Rewrite{}, false
	}
	t, ok := parseTemplate(rec.Fields[1])
	if !ok {
		return Rewrite{}, false
	}
	return Rewrite{Pattern: p, Template: t}, true
}

// record returns v as a record labelled label with exactly arity fields.
func record(v preserves.Value, label preserves.Symbol, arity int) (*preserves.Record, bool) {
	rec, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok || len(rec.Fields) != arity {
		return nil, false
	}
	if l, ok := preserves.Unwrap(rec.Label).(preserves.Symbol); !ok || l != label {
		return nil, false
	}
	return rec, true
}

func parsePattern(v preserves.Value) (Pattern, bool) {
	v = preserves.Unwrap(v)
	switch x := v.(type) {
	case preserves.Symbol:
		if k, ok := atomKinds[x]; ok {
			return PAtom{Kind: k}, true
		}
		if x == symEmbedded {
			return PEmbedded{}, true
		}
		return nil, false
	case *preserves.Record:
		label, ok := preserves.Unwrap(x.Label).(preserves.Symbol)
		if !ok {
			return nil, false
		}
		switch {
		case label == symDiscard && len(x.Fields) == 0:
			return PDiscard{}, true
		case label == sturdy.LabelBind && len(x.Fields) == 1:
			p, ok := parsePattern(x.Fields[0])
			if !ok {
				return nil, false
			}
			return PBind{Pattern: p}, true
		case label == sturdy.LabelAnd && len(x.Fields) == 1:
			ps, ok := parseSeq(x.Fields[0], parsePattern)
			if !ok {
				return nil, false
			}
			return PAnd{Patterns: ps}, true
		case label == sturdy.LabelNot && len(x.Fields) == 1:
			p, ok := parsePattern(x.Fields[0])
			if !ok {
				return nil, false
			}
			return PNot{Pattern: p}, true
		case label == sturdy.LabelLit && len(x.Fields) == 1:
			return Lit{Value: preserves.Strip(x.Fields[0])}, true
		case label == sturdy.LabelRec && len(x.Fields) == 1:
			return PLabel{Label: preserves.Strip(x.Fields[0])}, true
		case label == sturdy.LabelRec && len(x.Fields) == 2:
			ps, ok := parseSeq(x.Fields[1], parsePattern)
			if !ok {
				return nil, false
			}
			return PRec{Label: preserves.Strip(x.Fields[0]), Fields: ps}, true
		case label == sturdy.LabelArr && len(x.Fields) == 1:
			ps, ok := parseSeq(x.Fields[0], parsePattern)
			if !ok {
				return nil, false
			}
			return PArr{Items: ps}, true
		case label == sturdy.LabelDict && len(x.Fields) == 1:
			es, ok := parseDict(x.Fields[0], parsePattern, func(k preserves.Value, p Pattern) PDictEntry {
				return PDictEntry{Key: k, Pattern: p}
			})
			if !ok {
				return nil, false
			}
			return PDict{Entries: es}, true
		}
	}
	return nil, false
}

func parseTemplate(v preserves.Value) (Template, bool) {
	rec, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return nil, false
	}
	label, ok := preserves.Unwrap(rec.Label).(preserves.Symbol)
	if !ok {
		return nil, false
	}
	switch {
	case label == sturdy.LabelAttenuate && len(rec.Fields) == 2:
		t, ok := parseTemplate(rec.Fields[0])
		if !ok {
			return nil, false
		}
		seq, ok := preserves.Unwrap(rec.Fields[1]).(preserves.Sequence)
		if !ok {
			return nil, false
		}
		return TAttenuate{Template: t, Caveats: parseCaveatList(seq)}, true
	case label == sturdy.LabelRef && len(rec.Fields) == 1:
		switch n := preserves.Unwrap(rec.Fields[0]).(type) {
		case preserves.Int:
			return TRef{Binding: int64(n)}, true
		case *preserves.BigInt:
			// Out of every slice's range; remember it for ToValue and
			// keep Binding negative so nothing ever treats it as bound.
			return TRef{Binding: -1, big: n}, true
		}
		return nil, false
	case label == sturdy.LabelLit && len(rec.Fields) == 1:
		return Lit{Value: preserves.Strip(rec.Fields[0])}, true
	case label == sturdy.LabelRec && len(rec.Fields) == 2:
		ts, ok := parseSeq(rec.Fields[1], parseTemplate)
		if !ok {
			return nil, false
		}
		return TRec{Label: preserves.Strip(rec.Fields[0]), Fields: ts}, true
	case label == sturdy.LabelArr && len(rec.Fields) == 1:
		ts, ok := parseSeq(rec.Fields[0], parseTemplate)
		if !ok {
			return nil, false
		}
		return TArr{Items: ts}, true
	case label == sturdy.LabelDict && len(rec.Fields) == 1:
		es, ok := parseDict(rec.Fields[0], parseTemplate, func(k preserves.Value, t Template) TDictEntry {
			return TDictEntry{Key: k, Template: t}
		})
		if !ok {
			return nil, false
		}
		return TDict{Entries: es}, true
	}
	return nil, false
}

// ToValue renders a caveat in its sturdy.prs form.
func ToValue(c Caveat) preserves.Value {
	switch x := c.(type) {
	case Rewrite:
		return rewriteValue(x)
	case Alts:
		return preserves.NewRecord(sturdy.LabelOr, seqValue(x.Alternatives, rewriteValue))
	case Reject:
		return preserves.NewRecord(sturdy.LabelReject, PatternToValue(x.Pattern))
	case Unknown:
		return x.Value
	}
	panic(fmt.Sprintf("caveat: ToValue: unexpected caveat type %T", c))
}

// ListToValue renders a caveat list as a sequence.
func ListToValue(cs []Caveat) preserves.Sequence { return seqValue(cs, ToValue) }

func rewriteValue(r Rewrite) preserves.Value {
	return preserves.NewRecord(sturdy.LabelRewrite, PatternToValue(r.Pattern), TemplateToValue(r.Template))
}

// PatternToValue renders a pattern in its sturdy.prs form.
func PatternToValue(p Pattern) preserves.Value {
	switch x := p.(type) {
	case PDiscard:
		return preserves.NewRecord(symDiscard)
	case PAtom:
		return preserves.Symbol(x.Kind.String())
	case PEmbedded:
		return symEmbedded
	case PBind:
		return preserves.NewRecord(sturdy.LabelBind, PatternToValue(x.Pattern))
	case PAnd:
		return preserves.NewRecord(sturdy.LabelAnd, seqValue(x.Patterns, PatternToValue))
	case PNot:
		return preserves.NewRecord(sturdy.LabelNot, PatternToValue(x.Pattern))
	case Lit:
		return preserves.NewRecord(sturdy.LabelLit, x.Value)
	case PRec:
		return preserves.NewRecord(sturdy.LabelRec, x.Label, seqValue(x.Fields, PatternToValue))
	case PLabel:
		return preserves.NewRecord(sturdy.LabelRec, x.Label)
	case PArr:
		return preserves.NewRecord(sturdy.LabelArr, seqValue(x.Items, PatternToValue))
	case PDict:
		return preserves.NewRecord(sturdy.LabelDict, dictValue(x.Entries, func(e PDictEntry) preserves.DictEntry {
			return preserves.DictEntry{Key: e.Key, Value: PatternToValue(e.Pattern)}
		}))
	}
	panic(fmt.Sprintf("caveat: PatternToValue: unexpected pattern type %T", p))
}

// TemplateToValue renders a template in its sturdy.prs form.
func TemplateToValue(t Template) preserves.Value {
	switch x := t.(type) {
	case TAttenuate:
		return preserves.NewRecord(sturdy.LabelAttenuate, TemplateToValue(x.Template), ListToValue(x.Caveats))
	case TRef:
		if x.big != nil {
			return preserves.NewRecord(sturdy.LabelRef, x.big)
		}
		return preserves.NewRecord(sturdy.LabelRef, preserves.Int(x.Binding))
	case Lit:
		return preserves.NewRecord(sturdy.LabelLit, x.Value)
	case TRec:
		return preserves.NewRecord(sturdy.LabelRec, x.Label, seqValue(x.Fields, TemplateToValue))
	case TArr:
		return preserves.NewRecord(sturdy.LabelArr, seqValue(x.Items, TemplateToValue))
	case TDict:
		return preserves.NewRecord(sturdy.LabelDict, dictValue(x.Entries, func(e TDictEntry) preserves.DictEntry {
			return preserves.DictEntry{Key: e.Key, Value: TemplateToValue(e.Template)}
		}))
	}
	panic(fmt.Sprintf("caveat: TemplateToValue: unexpected template type %T", t))
}

// parseSeq parses each item of v, a sequence, with parse.
func parseSeq[T any](v preserves.Value, parse func(preserves.Value) (T, bool)) ([]T, bool) {
	seq, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok {
		return nil, false
	}
	out := make([]T, len(seq))
	for i, e := range seq {
		if out[i], ok = parse(e); !ok {
			return nil, false
		}
	}
	return out, true
}

// parseDict parses each value of v, a dictionary, with parse, and makes an
// entry of it and its key (without annotations).
func parseDict[E, T any](v preserves.Value, parse func(preserves.Value) (T, bool), entry func(preserves.Value, T) E) ([]E, bool) {
	d, ok := preserves.Unwrap(v).(*preserves.Dictionary)
	if !ok {
		return nil, false
	}
	out := make([]E, d.Len())
	for i, e := range d.Entries() {
		x, ok := parse(e.Value)
		if !ok {
			return nil, false
		}
		out[i] = entry(preserves.Strip(e.Key), x)
	}
	return out, true
}

// seqValue renders each of xs with toValue.
func seqValue[T any](xs []T, toValue func(T) preserves.Value) preserves.Sequence {
	out := make(preserves.Sequence, len(xs))
	for i, x := range xs {
		out[i] = toValue(x)
	}
	return out
}

// dictValue renders es as a dictionary, entry rendering each.
func dictValue[E any](es []E, entry func(E) preserves.DictEntry) *preserves.Dictionary {
	out := make([]preserves.DictEntry, len(es))
	for i, e := range es {
		out[i] = entry(e)
	}
	return preserves.NewDictionary(out...)
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
