package preserves

// MapEmbedded returns v without annotations and with every embedded value
// replaced by f of it, at every depth: the one walker behind displays that
// hide capabilities (`#:ref`) or mark unknown parts.
func MapEmbedded(v Value, f func(*Embedded) Value) Value {
	switch x := Unwrap(v).(type) {
	case *Embedded:
		return f(x)
	case *Record:
		fs := make([]Value, len(x.Fields))
		for i, e := range x.Fields {
			fs[i] = MapEmbedded(e, f)
		}
		return NewRecord(MapEmbedded(x.Label, f), fs...)
	case Sequence:
		out := make(Sequence, len(x))
		for i, e := range x {
			out[i] = MapEmbedded(e, f)
		}
		return out
	case *Set:
		out := make([]Value, len(x.elems))
		for i, e := range x.elems {
			out[i] = MapEmbedded(e, f)
		}
		return NewSet(out...)
	case *Dictionary:
		es := make([]DictEntry, len(x.entries))
		for i, e := range x.entries {
			es[i] = DictEntry{Key: MapEmbedded(e.Key, f), Value: MapEmbedded(e.Value, f)}
		}
		return NewDictionary(es...)
	default:
		return x
	}
}
