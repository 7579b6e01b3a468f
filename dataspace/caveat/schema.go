package caveat

import (
	"fmt"
	"math/big"

	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// The caveat vocabulary is parsed and rendered by the types generated from
// sturdy.prs (package sturdy); this file converts between them and the
// runtime forms of caveat.go, which Apply and Validate walk.

// FromValue parses one caveat. Every value is a caveat (unrecognised ones
// are [Unknown]), so the only error is a nil v. Annotations are ignored;
// literal values are kept without them.
func FromValue(v preserves.Value) (Caveat, error) {
	if v == nil {
		return nil, errorf(ErrNilValue, "caveat expected")
	}
	c, _ := sturdy.ParseCaveat(v) // never fails: `@unknown any`
	return caveatFrom(v, c), nil
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

// The conversions below walk the parsed form together with the value it
// was parsed from, to check what the generated parsers allow (the schema
// language does) and we do not: records with extra fields. A caveat with
// a part we do not understand must fail closed, and a sturdy ref's
// signature covers each caveat as re-encoded from its parsed form, so such
// a caveat is Unknown (its own, inside an `attenuate` template).

// caveatFrom converts c, parsed from v.
func caveatFrom(v preserves.Value, c sturdy.Caveat) Caveat {
	var out Caveat
	ok := false
	switch x := c.(type) {
	case sturdy.CaveatRewrite:
		out, ok = rewriteFrom(v, x.Value)
	case sturdy.CaveatAlts:
		if f, fok := fields(v, 1); fok {
			var alts []Rewrite
			alts, ok = seqFrom(f[0], x.Value.Alternatives, rewriteFrom)
			out = Alts{Alternatives: alts}
		}
	case sturdy.CaveatReject:
		if f, fok := fields(v, 1); fok {
			var p Pattern
			p, ok = patternFrom(f[0], x.Value.Pattern)
			out = Reject{Pattern: p}
		}
	}
	if !ok {
		return Unknown{Value: preserves.Strip(v)}
	}
	return out
}

func rewriteFrom(v preserves.Value, r sturdy.Rewrite) (Rewrite, bool) {
	f, ok := fields(v, 2)
	if !ok {
		return Rewrite{}, false
	}
	p, pok := patternFrom(f[0], r.Pattern)
	t, tok := templateFrom(f[1], r.Template)
	return Rewrite{Pattern: p, Template: t}, pok && tok
}

func patternFrom(v preserves.Value, p sturdy.Pattern) (Pattern, bool) {
	switch x := p.(type) {
	case sturdy.PatternPAtom:
		return PAtom{Kind: atomKinds[x.Value]}, true
	case sturdy.PatternPEmbedded:
		return PEmbedded{}, true
	case sturdy.PatternPDiscard:
		_, ok := fields(v, 0)
		return PDiscard{}, ok
	case sturdy.PatternPBind:
		if f, ok := fields(v, 1); ok {
			q, ok := patternFrom(f[0], x.Value.Pattern)
			return PBind{Pattern: q}, ok
		}
	case sturdy.PatternPAnd:
		if f, ok := fields(v, 1); ok {
			ps, ok := seqFrom(f[0], x.Value.Patterns, patternFrom)
			return PAnd{Patterns: ps}, ok
		}
	case sturdy.PatternPNot:
		if f, ok := fields(v, 1); ok {
			q, ok := patternFrom(f[0], x.Value.Pattern)
			return PNot{Pattern: q}, ok
		}
	case sturdy.PatternLit:
		if f, ok := fields(v, 1); ok {
			return Lit{Value: preserves.Strip(f[0])}, true
		}
	case sturdy.PatternPCompound:
		switch y := x.Value.(type) {
		case sturdy.PCompoundRec:
			if f, ok := fields(v, 2); ok {
				ps, ok := seqFrom(f[1], y.Fields, patternFrom)
				return PRec{Label: preserves.Strip(f[0]), Fields: ps}, ok
			}
		case sturdy.PCompoundAnyRec:
			if f, ok := fields(v, 1); ok {
				return PLabel{Label: preserves.Strip(f[0])}, true
			}
		case sturdy.PCompoundArr:
			if f, ok := fields(v, 1); ok {
				ps, ok := seqFrom(f[0], y.Items, patternFrom)
				return PArr{Items: ps}, ok
			}
		case sturdy.PCompoundDict:
			if f, ok := fields(v, 1); ok {
				es, ok := dictFrom(f[0], y.Entries, func(k preserves.Value, p Pattern) PDictEntry { return PDictEntry{k, p} }, patternFrom)
				return PDict{Entries: es}, ok
			}
		}
	}
	return nil, false
}

func templateFrom(v preserves.Value, t sturdy.Template) (Template, bool) {
	switch x := t.(type) {
	case sturdy.TemplateTAttenuate:
		if f, ok := fields(v, 2); ok {
			u, ok := templateFrom(f[0], x.Value.Template)
			seq, _ := preserves.Unwrap(f[1]).(preserves.Sequence)
			cs := make([]Caveat, len(x.Value.Attenuation))
			for i, c := range x.Value.Attenuation {
				if i < len(seq) {
					cs[i] = caveatFrom(seq[i], c)
				}
			}
			return TAttenuate{Template: u, Caveats: cs}, ok && len(seq) == len(cs)
		}
	case sturdy.TemplateTRef:
		if _, ok := fields(v, 1); ok {
			if b := x.Value.Binding; !b.IsInt64() {
				// Out of every slice's range; remember it for ToValue
				// and keep Binding negative so nothing treats it as bound.
				return TRef{Binding: -1, big: b}, true
			}
			return TRef{Binding: x.Value.Binding.Int64()}, true
		}
	case sturdy.TemplateLit:
		if f, ok := fields(v, 1); ok {
			return Lit{Value: preserves.Strip(f[0])}, true
		}
	case sturdy.TemplateTCompound:
		switch y := x.Value.(type) {
		case sturdy.TCompoundRec:
			if f, ok := fields(v, 2); ok {
				ts, ok := seqFrom(f[1], y.Fields, templateFrom)
				return TRec{Label: preserves.Strip(f[0]), Fields: ts}, ok
			}
		case sturdy.TCompoundArr:
			if f, ok := fields(v, 1); ok {
				ts, ok := seqFrom(f[0], y.Items, templateFrom)
				return TArr{Items: ts}, ok
			}
		case sturdy.TCompoundDict:
			if f, ok := fields(v, 1); ok {
				es, ok := dictFrom(f[0], y.Entries, func(k preserves.Value, t Template) TDictEntry { return TDictEntry{k, t} }, templateFrom)
				return TDict{Entries: es}, ok
			}
		}
	}
	return nil, false
}

// fields returns the fields of v, a record, when it has exactly n.
func fields(v preserves.Value, n int) ([]preserves.Value, bool) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok || len(r.Fields) != n {
		return nil, false
	}
	return r.Fields, true
}

// seqFrom converts each of xs, parsed from the items of v, with from.
func seqFrom[G, R any](v preserves.Value, xs []G, from func(preserves.Value, G) (R, bool)) ([]R, bool) {
	seq, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok || len(seq) != len(xs) {
		return nil, false
	}
	out := make([]R, len(xs))
	for i, x := range xs {
		if out[i], ok = from(seq[i], x); !ok {
			return nil, false
		}
	}
	return out, true
}

// dictFrom converts each of es, parsed from the values of v, with from,
// and makes an entry of it and its key (without annotations).
func dictFrom[G, R, E any](v preserves.Value, es []schema.Pair[preserves.Value, G], entry func(preserves.Value, R) E, from func(preserves.Value, G) (R, bool)) ([]E, bool) {
	d, ok := preserves.Unwrap(v).(*preserves.Dictionary)
	if !ok || d.Len() != len(es) {
		return nil, false
	}
	out := make([]E, len(es))
	for i, e := range d.Entries() { // in the order the parser read them
		r, ok := from(e.Value, es[i].Value)
		if !ok {
			return nil, false
		}
		out[i] = entry(preserves.Strip(e.Key), r)
	}
	return out, true
}

// ToValue renders a caveat in its sturdy.prs form.
func ToValue(c Caveat) preserves.Value { return caveatTo(c).ToValue() }

// ListToValue renders a caveat list as a sequence.
func ListToValue(cs []Caveat) preserves.Sequence {
	out := make(preserves.Sequence, len(cs))
	for i, c := range cs {
		out[i] = ToValue(c)
	}
	return out
}

// PatternToValue renders a pattern in its sturdy.prs form.
func PatternToValue(p Pattern) preserves.Value { return patternTo(p).ToValue() }

// TemplateToValue renders a template in its sturdy.prs form.
func TemplateToValue(t Template) preserves.Value { return templateTo(t).ToValue() }

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
		panic(fmt.Sprintf("caveat: PatternToValue: PAtom of kind %s", x.Kind))
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
	panic(fmt.Sprintf("caveat: PatternToValue: unexpected pattern type %T", p))
}

func templateTo(t Template) sturdy.Template {
	switch x := t.(type) {
	case TAttenuate:
		return sturdy.TemplateTAttenuate{Value: sturdy.TAttenuate{Template: templateTo(x.Template), Attenuation: mapSlice(x.Caveats, caveatTo)}}
	case TRef:
		b := x.big
		if b == nil {
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
	panic(fmt.Sprintf("caveat: TemplateToValue: unexpected template type %T", t))
}

// mapSlice converts each of xs with f.
func mapSlice[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
