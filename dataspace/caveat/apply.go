package caveat

import (
	"sort"

	"github.com/syndicate-go/syndicate/preserves"
)

// Apply runs the caveat list on v, newest (last) caveat first, each one
// seeing the previous one's output. It returns the final value, or false
// when some caveat rejects. An empty list passes v unchanged.
func Apply(cs []Caveat, v preserves.Value) (preserves.Value, bool) {
	for i := len(cs) - 1; i >= 0; i-- {
		var ok bool
		if v, ok = applyOne(cs[i], v); !ok {
			return nil, false
		}
	}
	return v, true
}

func applyOne(c Caveat, v preserves.Value) (preserves.Value, bool) {
	switch x := c.(type) {
	case Rewrite:
		return applyAlts([]Rewrite{x}, v)
	case Alts:
		return applyAlts(x.Alternatives, v)
	case Reject:
		if _, ok := Match(x.Pattern, v); ok {
			return nil, false
		}
		return v, true
	}
	// Unknown caveats (and nil) fail closed.
	return nil, false
}

// applyAlts implements `or`: the first alternative whose pattern matches
// decides. If its template then fails to instantiate, the value is rejected
// without trying later alternatives, as the reference does.
func applyAlts(alts []Rewrite, v preserves.Value) (preserves.Value, bool) {
	for _, r := range alts {
		if bs, ok := Match(r.Pattern, v); ok {
			return Instantiate(r.Template, bs)
		}
	}
	return nil, false
}

// Match matches a caveat pattern against v, returning the bound values in
// binding order (pre-order, left to right; dictionary entries by ascending
// key).
func Match(p Pattern, v preserves.Value) ([]preserves.Value, bool) {
	var bs []preserves.Value
	if !match(p, v, &bs) {
		return nil, false
	}
	return bs, true
}

func match(p Pattern, v preserves.Value, bs *[]preserves.Value) bool {
	v = preserves.Unwrap(v)
	switch x := p.(type) {
	case PDiscard:
		return true
	case PAtom:
		return v.Kind() == x.Kind && x.Kind <= preserves.KindSymbol
	case PEmbedded:
		return v.Kind() == preserves.KindEmbedded
	case PBind:
		*bs = append(*bs, v)
		return match(x.Pattern, v, bs)
	case PAnd:
		for _, q := range x.Patterns {
			if !match(q, v, bs) {
				return false
			}
		}
		return true
	case PNot:
		// Bindings under negation are invalid (Validate), but an
		// unvalidated list must not leak them either: match into scratch.
		var scratch []preserves.Value
		return !match(x.Pattern, v, &scratch)
	case Lit:
		return x.Value != nil && preserves.Equal(x.Value, v)
	case PRec:
		r, ok := v.(*preserves.Record)
		if !ok || len(r.Fields) != len(x.Fields) || x.Label == nil || !preserves.Equal(r.Label, x.Label) {
			return false
		}
		for i, q := range x.Fields {
			if !match(q, r.Fields[i], bs) {
				return false
			}
		}
		return true
	case PLabel:
		r, ok := v.(*preserves.Record)
		return ok && x.Label != nil && preserves.Equal(r.Label, x.Label)
	case PArr:
		s, ok := v.(preserves.Sequence)
		if !ok || len(s) != len(x.Items) {
			return false
		}
		for i, q := range x.Items {
			if !match(q, s[i], bs) {
				return false
			}
		}
		return true
	case PDict:
		d, ok := v.(*preserves.Dictionary)
		if !ok {
			return false
		}
		for _, e := range sortedPDict(x.Entries) {
			if e.Key == nil {
				return false
			}
			w, ok := d.Get(e.Key)
			if !ok || !match(e.Pattern, w, bs) {
				return false
			}
		}
		return true
	}
	return false
}

// sortedPDict returns the entries in ascending key order, copying only when
// a hand-built PDict is out of order, so that bindings follow the order the
// encoded (and signed) form implies.
func sortedPDict(es []PDictEntry) []PDictEntry {
	less := func(a, b PDictEntry) bool {
		if a.Key == nil || b.Key == nil {
			return false
		}
		return preserves.Compare(a.Key, b.Key) < 0
	}
	if sort.SliceIsSorted(es, func(i, j int) bool { return less(es[i], es[j]) }) {
		return es
	}
	out := append([]PDictEntry(nil), es...)
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// Instantiate builds a template's value from bindings. It fails for a
// `<ref n>` outside the bindings and for an `attenuate` whose template does
// not yield an attenuable embedded capability (or whose attenuation fails).
func Instantiate(t Template, bs []preserves.Value) (preserves.Value, bool) {
	switch x := t.(type) {
	case TRef:
		if x.big != nil || x.Binding < 0 || x.Binding >= int64(len(bs)) {
			return nil, false
		}
		return bs[x.Binding], true
	case Lit:
		return x.Value, x.Value != nil
	case TRec:
		if x.Label == nil {
			return nil, false
		}
		fs, ok := instantiateAll(x.Fields, bs)
		if !ok {
			return nil, false
		}
		return preserves.NewRecord(x.Label, fs...), true
	case TArr:
		items, ok := instantiateAll(x.Items, bs)
		if !ok {
			return nil, false
		}
		return preserves.Sequence(items), true
	case TDict:
		es := make([]preserves.DictEntry, len(x.Entries))
		for i, e := range x.Entries {
			w, ok := Instantiate(e.Template, bs)
			if !ok || e.Key == nil {
				return nil, false
			}
			es[i] = preserves.DictEntry{Key: e.Key, Value: w}
		}
		return preserves.NewDictionary(es...), true
	case TAttenuate:
		w, ok := Instantiate(x.Template, bs)
		if !ok {
			return nil, false
		}
		emb, ok := preserves.Unwrap(w).(*preserves.Embedded)
		if !ok {
			return nil, false
		}
		a, ok := emb.Payload.(Attenuable)
		if !ok {
			return nil, false
		}
		p, err := a.AttenuateCaveats(x.Caveats)
		if err != nil || p == nil {
			return nil, false
		}
		return preserves.NewEmbedded(p), true
	}
	return nil, false
}

func instantiateAll(ts []Template, bs []preserves.Value) ([]preserves.Value, bool) {
	out := make([]preserves.Value, len(ts))
	for i, t := range ts {
		var ok bool
		if out[i], ok = Instantiate(t, bs); !ok {
			return nil, false
		}
	}
	return out, true
}
