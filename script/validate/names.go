package validate

// Templated names (issue 25): a declaration asserted inside a handler is
// built from the handler's captures, `? <run-service <daemon <worker ?n>>>
// [ <daemon <worker $n> {argv: …}> ]`, and declares every name its pattern
// can produce. The analysis therefore reads every asserted value as a
// template: its literal parts as they are, every part computed at run time
// (a variable, a built-in, an attenuation) as a wildcard that stands for any
// value. Two templates may name the same service when they unify; a
// dataspace pattern may observe a template when it matches some value the
// template can produce.

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
)

// template converts a value expression to a value whose run-time parts are
// wildcards (unknown{}). Compounds keep their literal parts; a dictionary
// with a computed key is a wildcard as a whole (any key could be meant).
func template(e compile.Expr) preserves.Value {
	switch x := e.(type) {
	case *compile.Const:
		return x.Value
	case *compile.MkRecord:
		fields := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			fields[i] = template(f)
		}
		return preserves.NewRecord(template(x.Label), fields...)
	case *compile.MkSeq:
		elems := make(preserves.Sequence, len(x.Elems))
		for i, f := range x.Elems {
			elems[i] = template(f)
		}
		return elems
	case *compile.MkDict:
		entries := make([]preserves.DictEntry, len(x.Keys))
		for i := range x.Keys {
			k := template(x.Keys[i])
			if hasWildcard(k) {
				return wildcard
			}
			entries[i] = preserves.DictEntry{Key: k, Value: template(x.Vals[i])}
		}
		return preserves.NewDictionary(entries...)
	}
	return wildcard
}

// wildcard is the run-time part of a template.
var wildcard = preserves.NewEmbedded(unknown{})

// hasWildcard reports whether v is a template rather than a literal.
func hasWildcard(v preserves.Value) bool {
	switch x := v.(type) {
	case *preserves.Embedded:
		return isUnknown(x)
	case *preserves.Record:
		if hasWildcard(x.Label) {
			return true
		}
		for _, f := range x.Fields {
			if hasWildcard(f) {
				return true
			}
		}
	case preserves.Sequence:
		for _, f := range x {
			if hasWildcard(f) {
				return true
			}
		}
	case *preserves.Dictionary:
		for _, en := range x.Entries() {
			if hasWildcard(en.Value) {
				return true
			}
		}
	}
	return false
}

// unify reports whether the templates a and b can produce the same value.
func unify(a, b preserves.Value) bool {
	if isUnknown(a) || isUnknown(b) {
		return true
	}
	switch x := a.(type) {
	case *preserves.Record:
		y, ok := b.(*preserves.Record)
		return ok && len(x.Fields) == len(y.Fields) && unify(x.Label, y.Label) && unifyAll(x.Fields, y.Fields)
	case preserves.Sequence:
		y, ok := b.(preserves.Sequence)
		return ok && len(x) == len(y) && unifyAll(x, y)
	case *preserves.Dictionary:
		y, ok := b.(*preserves.Dictionary)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, en := range x.Entries() {
			w, ok := y.Get(en.Key)
			if !ok || !unify(en.Value, w) {
				return false
			}
		}
		return true
	}
	return preserves.Equal(a, b)
}

func unifyAll(a, b []preserves.Value) bool {
	for i := range a {
		if !unify(a[i], b[i]) {
			return false
		}
	}
	return true
}

// mayMatch reports whether p matches some value the template v can produce.
func mayMatch(p pattern.Pattern, v preserves.Value) bool {
	if isUnknown(v) {
		return true
	}
	switch x := p.(type) {
	case nil, pattern.Discard:
		return true
	case pattern.Bind:
		return mayMatch(x.Pattern, v)
	case pattern.Lit:
		return preserves.Equal(x.Value, v)
	case pattern.Group:
		return mayMatchGroup(x, v)
	}
	return false
}

func mayMatchGroup(g pattern.Group, v preserves.Value) bool {
	var items []preserves.Value
	switch t := g.Type.(type) {
	case pattern.RecType:
		r, ok := v.(*preserves.Record)
		if !ok || !unify(t.Label, r.Label) {
			return false
		}
		items = r.Fields
	case pattern.ArrType:
		s, ok := v.(preserves.Sequence)
		if !ok {
			return false
		}
		items = s
	case pattern.DictType:
		d, ok := v.(*preserves.Dictionary)
		if !ok {
			return false
		}
		for _, e := range g.Entries {
			w, ok := d.Get(e.Key)
			if !ok || !mayMatch(e.Pattern, w) {
				return false
			}
		}
		return true
	default:
		return false
	}
	for _, e := range g.Entries {
		i, ok := pattern.Index(e.Key)
		if !ok || i >= len(items) || !mayMatch(e.Pattern, items[i]) {
			return false
		}
	}
	return true
}

// patternOf is the dataspace pattern p subscribes to, with every part
// computed at run time (`$x` in a pattern) read as a discard: it then
// matches at least what p can match.
func patternOf(p compile.Pat) pattern.Pattern {
	switch x := p.(type) {
	case *compile.PConst:
		return x.Pattern
	case *compile.PBind:
		return pattern.Bind{Pattern: patternOf(x.Sub)}
	case *compile.PRec:
		c, ok := x.Label.(*compile.Const)
		if !ok {
			return pattern.Discard{}
		}
		fields := make([]pattern.Pattern, len(x.Fields))
		for i, f := range x.Fields {
			fields[i] = patternOf(f)
		}
		return pattern.Rec(c.Value, fields...)
	case *compile.PArr:
		items := make([]pattern.Pattern, len(x.Items))
		for i, f := range x.Items {
			items[i] = patternOf(f)
		}
		return pattern.Arr(items...)
	case *compile.PDict:
		entries := make([]pattern.Entry, len(x.Keys))
		for i, k := range x.Keys {
			entries[i] = pattern.Entry{Key: k, Pattern: patternOf(x.Vals[i])}
		}
		return pattern.NewGroup(pattern.DictType{}, entries...)
	}
	return pattern.Discard{}
}

// show renders a template for a message, its run-time parts as `_`.
func show(v preserves.Value) string {
	return preserves.FormatText(blank(v))
}

func blank(v preserves.Value) preserves.Value {
	switch x := v.(type) {
	case *preserves.Embedded:
		if isUnknown(x) {
			return preserves.Symbol("_")
		}
	case *preserves.Record:
		fields := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			fields[i] = blank(f)
		}
		return preserves.NewRecord(blank(x.Label), fields...)
	case preserves.Sequence:
		out := make(preserves.Sequence, len(x))
		for i, f := range x {
			out[i] = blank(f)
		}
		return out
	case *preserves.Dictionary:
		entries := make([]preserves.DictEntry, 0, x.Len())
		for _, en := range x.Entries() {
			entries = append(entries, preserves.DictEntry{Key: en.Key, Value: blank(en.Value)})
		}
		return preserves.NewDictionary(entries...)
	}
	return v
}
