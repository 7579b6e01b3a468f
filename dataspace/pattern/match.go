package pattern

import (
	"fmt"

	"github.com/syndicate-go/syndicate/preserves"
)

// Match reports whether v matches p and, if so, returns the captured values
// in capture order (pre-order, entries by ascending key; §11.3). The result is
// never nil when ok. Captured values are the sub-values of v as they are,
// annotations included; matching itself ignores annotations.
func Match(p Pattern, v preserves.Value) (captures []preserves.Value, ok bool) {
	out, ok := MatchAppend(make([]preserves.Value, 0, 4), p, v)
	if !ok {
		return nil, false
	}
	return out, true
}

// MatchAppend is Match appending the captures to dst, so hot paths can reuse
// a buffer. When v does not match, the returned slice holds dst's elements
// plus an unspecified partial capture list; callers should use dst[:len(dst)]
// again.
func MatchAppend(dst []preserves.Value, p Pattern, v preserves.Value) ([]preserves.Value, bool) {
	if dst == nil {
		dst = []preserves.Value{}
	}
	return match(dst, p, v)
}

func match(dst []preserves.Value, p Pattern, v preserves.Value) ([]preserves.Value, bool) {
	switch x := p.(type) {
	case nil, Discard:
		return dst, true
	case Bind:
		return match(append(dst, v), x.Pattern, v)
	case Lit:
		return dst, x.Value != nil && preserves.Equal(x.Value, v)
	case Group:
		return matchGroup(dst, x, preserves.Unwrap(v))
	}
	panic(fmt.Sprintf("pattern: Match: unexpected pattern type %T", p))
}

func matchGroup(dst []preserves.Value, g Group, v preserves.Value) ([]preserves.Value, bool) {
	var items []preserves.Value
	switch t := g.Type.(type) {
	case RecType:
		r, ok := v.(*preserves.Record)
		if !ok || t.Label == nil || !preserves.Equal(r.Label, t.Label) {
			return dst, false
		}
		items = r.Fields
	case ArrType:
		s, ok := v.(preserves.Sequence)
		if !ok {
			return dst, false
		}
		items = s
	case DictType:
		d, ok := v.(*preserves.Dictionary)
		if !ok {
			return dst, false
		}
		for _, e := range g.Entries {
			w, ok := d.Get(e.Key)
			if !ok {
				return dst, false
			}
			if dst, ok = match(dst, e.Pattern, w); !ok {
				return dst, false
			}
		}
		return dst, true
	default:
		return dst, false
	}
	for _, e := range g.Entries {
		i, ok := Index(e.Key)
		if !ok || i >= len(items) {
			return dst, false
		}
		if dst, ok = match(dst, e.Pattern, items[i]); !ok {
			return dst, false
		}
	}
	return dst, true
}

// Index interprets a rec/arr group key as a position: a non-negative Int.
// Anything else (negative, big, non-integer) is not a position and never
// matches.
func Index(key preserves.Value) (int, bool) {
	n, ok := preserves.Unwrap(key).(preserves.Int)
	if !ok || n < 0 || int64(n) > int64(maxInt) {
		return 0, false
	}
	return int(n), true
}

const maxInt = int(^uint(0) >> 1)

// Lift returns the pattern matching exactly the values equal to v, up to
// extensibility (§11.4): atoms and embedded values become `lit`, compounds
// become groups mentioning every position. Sets cannot be expressed: a v
// containing one gives an *Error wrapping ErrMalformed. Every value from a
// script or a peer goes through Lift, and its caller answers the error.
func Lift(v preserves.Value) (Pattern, error) {
	var g Group
	var err error
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Record:
		g.Type = RecType{Label: preserves.Strip(x.Label)}
		g.Entries, err = liftItems(x.Fields)
	case preserves.Sequence:
		g.Type = ArrType{}
		g.Entries, err = liftItems(x)
	case *preserves.Dictionary:
		g.Type = DictType{}
		g.Entries, err = dictEntries(x, Lift)
	case *preserves.Set:
		return nil, malformed(v, "pattern: a set cannot be expressed as a literal pattern")
	default:
		return Lit{Value: preserves.Strip(x)}, nil
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// MustLift is Lift for values written in Go, which are known to hold no
// set: it panics on an error. Never call it on a value from outside.
func MustLift(v preserves.Value) Pattern {
	p, err := Lift(v)
	if err != nil {
		panic(err)
	}
	return p
}

// dictEntries makes a group entry of each entry of d, its value converted
// by conv. The dictionary is already sorted by key in Preserves order, and
// stripping annotations does not change that order.
func dictEntries(d *preserves.Dictionary, conv func(preserves.Value) (Pattern, error)) ([]Entry, error) {
	es := make([]Entry, d.Len())
	for i, e := range d.Entries() {
		p, err := conv(e.Value)
		if err != nil {
			return nil, err
		}
		es[i] = Entry{Key: preserves.Strip(e.Key), Pattern: p}
	}
	return es, nil
}

func liftItems(vs []preserves.Value) ([]Entry, error) {
	es := make([]Entry, len(vs))
	for i, f := range vs {
		p, err := Lift(f)
		if err != nil {
			return nil, err
		}
		es[i] = Entry{Key: preserves.Int(i), Pattern: p}
	}
	return es, nil
}

// Drop returns the value p matches literally, if there is one (§11.4): `lit`
// gives its value; rec/arr groups give the compound of positions 0..maxKey,
// failing if a position is missing (it counts as `<_>`) or has a non-index
// key; dict groups give the dictionary of their dropped entries. Discard and
// Bind have no literal value.
func Drop(p Pattern) (preserves.Value, bool) {
	switch x := orDiscard(p).(type) {
	case Lit:
		return x.Value, x.Value != nil
	case Group:
		switch t := x.Type.(type) {
		case DictType:
			es := make([]preserves.DictEntry, len(x.Entries))
			for i, e := range x.Entries {
				v, ok := Drop(e.Pattern)
				if !ok {
					return nil, false
				}
				es[i] = preserves.DictEntry{Key: e.Key, Value: v}
			}
			return preserves.NewDictionary(es...), true
		case RecType:
			if t.Label == nil {
				return nil, false
			}
			items, ok := dropItems(x.Entries)
			if !ok {
				return nil, false
			}
			return preserves.NewRecord(t.Label, items...), true
		case ArrType:
			items, ok := dropItems(x.Entries)
			if !ok {
				return nil, false
			}
			return preserves.Sequence(items), true
		}
	}
	return nil, false
}

// dropItems fills positions 0..maxKey from sorted entries; a gap is a `<_>`
// and so has no literal value.
func dropItems(es []Entry) ([]preserves.Value, bool) {
	items := make([]preserves.Value, 0, len(es))
	for i, e := range es {
		k, ok := Index(e.Key)
		if !ok || k != i {
			return nil, false
		}
		v, ok := Drop(e.Pattern)
		if !ok {
			return nil, false
		}
		items = append(items, v)
	}
	return items, true
}
