package caveat

import (
	"fmt"
	"math/big"

	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// The caveat vocabulary is parsed and rendered by the types generated from
// sturdy.prs (package sturdy, generated with -exact: a record with extra
// fields does not match, so a caveat with a part we do not understand is
// `@unknown`, which fails closed, and a sturdy ref's signature, computed
// over each caveat as re-encoded from its parsed form, covers all of it);
// this file converts between them and the runtime forms of caveat.go,
// which Apply and Validate walk.

// FromValue parses one caveat. Every value is a caveat (unrecognised ones
// are [Unknown]), so the only error is a nil v. Annotations are ignored;
// literal values are kept without them.
func FromValue(v preserves.Value) (Caveat, error) {
	if v == nil {
		return nil, errorf(ErrNilValue, "caveat expected")
	}
	c, err := sturdy.ParseCaveat(v)
	if err != nil { // not with `@unknown any` last
		return Unknown{Value: preserves.Strip(v)}, nil
	}
	return caveatFrom(c), nil
}

// ListFromValue parses a sequence of caveats, as found in a sturdy ref's
// `caveats` field, an `attenuate` template or a relay WireRef.
func ListFromValue(v preserves.Value) ([]Caveat, error) {
	if v == nil {
		return nil, errorf(ErrNilValue, "caveat sequence expected")
	}
	seq, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok {
		return nil, errorf(ErrMalformedRef, "%scaveat sequence expected, got %s", preserves.PosOf(v).Prefix(""), preserves.Unwrap(v).Kind())
	}
	out := make([]Caveat, len(seq))
	for i, cv := range seq {
		out[i], _ = FromValue(cv)
	}
	return out, nil
}

func caveatFrom(c sturdy.Caveat) Caveat {
	switch x := c.(type) {
	case sturdy.CaveatRewrite:
		return rewriteFrom(x.Value)
	case sturdy.CaveatAlts:
		return Alts{Alternatives: mapSlice(x.Value.Alternatives, rewriteFrom)}
	case sturdy.CaveatReject:
		return Reject{Pattern: patternFrom(x.Value.Pattern)}
	case sturdy.CaveatUnknown:
		return Unknown{Value: preserves.Strip(x.Value)}
	}
	panic(fmt.Sprintf("caveat: unexpected generated caveat %T", c))
}

func rewriteFrom(r sturdy.Rewrite) Rewrite {
	return Rewrite{Pattern: patternFrom(r.Pattern), Template: templateFrom(r.Template)}
}

func patternFrom(p sturdy.Pattern) Pattern {
	switch x := p.(type) {
	case sturdy.PatternPDiscard:
		return PDiscard{}
	case sturdy.PatternPAtom:
		return PAtom{Kind: atomKinds[x.Value]}
	case sturdy.PatternPEmbedded:
		return PEmbedded{}
	case sturdy.PatternPBind:
		return PBind{Pattern: patternFrom(x.Value.Pattern)}
	case sturdy.PatternPAnd:
		return PAnd{Patterns: mapSlice(x.Value.Patterns, patternFrom)}
	case sturdy.PatternPNot:
		return PNot{Pattern: patternFrom(x.Value.Pattern)}
	case sturdy.PatternLit:
		return Lit{Value: preserves.Strip(x.Value.Value)}
	case sturdy.PatternPCompound:
		switch y := x.Value.(type) {
		case sturdy.PCompoundRec:
			return PRec{Label: preserves.Strip(y.Label), Fields: mapSlice(y.Fields, patternFrom)}
		case sturdy.PCompoundAnyRec:
			return PLabel{Label: preserves.Strip(y.Label)}
		case sturdy.PCompoundArr:
			return PArr{Items: mapSlice(y.Items, patternFrom)}
		case sturdy.PCompoundDict:
			return PDict{Entries: mapSlice(y.Entries, func(e schema.Pair[preserves.Value, sturdy.Pattern]) PDictEntry {
				return PDictEntry{Key: preserves.Strip(e.Key), Pattern: patternFrom(e.Value)}
			})}
		}
	}
	panic(fmt.Sprintf("caveat: unexpected generated pattern %T", p))
}

func templateFrom(t sturdy.Template) Template {
	switch x := t.(type) {
	case sturdy.TemplateTAttenuate:
		return TAttenuate{Template: templateFrom(x.Value.Template), Caveats: mapSlice(x.Value.Attenuation, caveatFrom)}
	case sturdy.TemplateTRef:
		if b := x.Value.Binding; !b.IsInt64() {
			// Out of every slice's range; remember it for ToValue and
			// keep Binding negative so nothing ever treats it as bound.
			return TRef{Binding: -1, big: b}
		}
		return TRef{Binding: x.Value.Binding.Int64()}
	case sturdy.TemplateLit:
		return Lit{Value: preserves.Strip(x.Value.Value)}
	case sturdy.TemplateTCompound:
		switch y := x.Value.(type) {
		case sturdy.TCompoundRec:
			return TRec{Label: preserves.Strip(y.Label), Fields: mapSlice(y.Fields, templateFrom)}
		case sturdy.TCompoundArr:
			return TArr{Items: mapSlice(y.Items, templateFrom)}
		case sturdy.TCompoundDict:
			return TDict{Entries: mapSlice(y.Entries, func(e schema.Pair[preserves.Value, sturdy.Template]) TDictEntry {
				return TDictEntry{Key: preserves.Strip(e.Key), Template: templateFrom(e.Value)}
			})}
		}
	}
	panic(fmt.Sprintf("caveat: unexpected generated template %T", t))
}

// ToValue renders a caveat in its sturdy.prs form.
func ToValue(c Caveat) preserves.Value { return caveatTo(c).ToValue() }

// ListToValue renders a caveat list as a sequence.
func ListToValue(cs []Caveat) preserves.Sequence { return mapSlice(cs, ToValue) }

func caveatTo(c Caveat) sturdy.Caveat {
	switch x := c.(type) {
	case Rewrite:
		return sturdy.CaveatRewrite{Value: rewriteTo(x)}
	case Alts:
		return sturdy.CaveatAlts{Value: sturdy.Alts{Alternatives: mapSlice(x.Alternatives, rewriteTo)}}
	case Reject:
		return sturdy.CaveatReject{Value: sturdy.Reject{Pattern: patternTo(x.Pattern)}}
	case Unknown:
		return sturdy.CaveatUnknown{Value: x.Value}
	}
	panic(fmt.Sprintf("caveat: ToValue: unexpected caveat type %T", c))
}

func rewriteTo(r Rewrite) sturdy.Rewrite {
	return sturdy.Rewrite{Pattern: patternTo(r.Pattern), Template: templateTo(r.Template)}
}

func patternTo(p Pattern) sturdy.Pattern {
	switch x := p.(type) {
	case PDiscard:
		return sturdy.PatternPDiscard{}
	case PAtom:
		for a, k := range atomKinds {
			if k == x.Kind {
				return sturdy.PatternPAtom{Value: sturdy.PAtom(a)}
			}
		}
		panic(fmt.Sprintf("caveat: PAtom of kind %s", x.Kind))
	case PEmbedded:
		return sturdy.PatternPEmbedded{}
	case PBind:
		return sturdy.PatternPBind{Value: sturdy.PBind{Pattern: patternTo(x.Pattern)}}
	case PAnd:
		return sturdy.PatternPAnd{Value: sturdy.PAnd{Patterns: mapSlice(x.Patterns, patternTo)}}
	case PNot:
		return sturdy.PatternPNot{Value: sturdy.PNot{Pattern: patternTo(x.Pattern)}}
	case Lit:
		return sturdy.PatternLit{Value: sturdy.Lit{Value: x.Value}}
	case PRec:
		return sturdy.PatternPCompound{Value: sturdy.PCompoundRec{Label: x.Label, Fields: mapSlice(x.Fields, patternTo)}}
	case PLabel:
		return sturdy.PatternPCompound{Value: sturdy.PCompoundAnyRec{Label: x.Label}}
	case PArr:
		return sturdy.PatternPCompound{Value: sturdy.PCompoundArr{Items: mapSlice(x.Items, patternTo)}}
	case PDict:
		return sturdy.PatternPCompound{Value: sturdy.PCompoundDict{Entries: mapSlice(x.Entries, func(e PDictEntry) schema.Pair[preserves.Value, sturdy.Pattern] {
			return schema.Pair[preserves.Value, sturdy.Pattern]{Key: e.Key, Value: patternTo(e.Pattern)}
		})}}
	}
	panic(fmt.Sprintf("caveat: unexpected pattern type %T", p))
}

func templateTo(t Template) sturdy.Template {
	switch x := t.(type) {
	case TAttenuate:
		return sturdy.TemplateTAttenuate{Value: sturdy.TAttenuate{Template: templateTo(x.Template), Attenuation: mapSlice(x.Caveats, caveatTo)}}
	case TRef:
		b := x.big
		switch {
		case b != nil:
		case x.Binding >= 0 && x.Binding < int64(len(smallInts)):
			b = smallInts[x.Binding] // only read: rendering is on the signing path
		default:
			b = big.NewInt(x.Binding)
		}
		return sturdy.TemplateTRef{Value: sturdy.TRef{Binding: b}}
	case Lit:
		return sturdy.TemplateLit{Value: sturdy.Lit{Value: x.Value}}
	case TRec:
		return sturdy.TemplateTCompound{Value: sturdy.TCompoundRec{Label: x.Label, Fields: mapSlice(x.Fields, templateTo)}}
	case TArr:
		return sturdy.TemplateTCompound{Value: sturdy.TCompoundArr{Items: mapSlice(x.Items, templateTo)}}
	case TDict:
		return sturdy.TemplateTCompound{Value: sturdy.TCompoundDict{Entries: mapSlice(x.Entries, func(e TDictEntry) schema.Pair[preserves.Value, sturdy.Template] {
			return schema.Pair[preserves.Value, sturdy.Template]{Key: e.Key, Value: templateTo(e.Template)}
		})}}
	}
	panic(fmt.Sprintf("caveat: unexpected template type %T", t))
}

// smallInts are the binding indices of most `<ref n>` templates.
var smallInts = func() (bs [16]*big.Int) {
	for i := range bs {
		bs[i] = big.NewInt(int64(i))
	}
	return
}()

// mapSlice converts each of xs with f.
func mapSlice[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
