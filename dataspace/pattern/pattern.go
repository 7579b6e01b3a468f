// Package pattern implements dataspace patterns (dataspacePatterns.prs): the
// language observers use to say which assertions and messages they want, and
// which parts of them to capture.
//
// # Design
//
// A [Pattern] is one of four immutable Go values mirroring the schema:
//
//	Discard{}                   <_>          any value (the position must exist)
//	Bind{Pattern}               <bind P>     capture the value here, then match P
//	Lit{Value}                  <lit atom>   equal to an atom or embedded value
//	Group{Type, Entries}        <group T {k: P ...}>
//
// with GroupType RecType{Label}, ArrType{} or DictType{}. A group lists only
// the positions it constrains: patterns are extensible, so records with more
// fields, sequences with more items and dictionaries with more keys still
// match (runtime spec §11.2). Entries are kept sorted by key in Preserves
// order, which is also the capture order (§11.3): integer keys therefore run
// numerically (2 before 10), dictionary keys by kind and then value. The
// builders ([Rec], [Arr], [Dict], [NewGroup]) and [FromValue] establish that
// order; code that builds a Group literal by hand must keep it.
//
// [FromValue] parses the schema form strictly (exact record arities, `lit`
// holding only atoms or embedded values) and reports malformed input as an
// *[Error] wrapping [ErrMalformed], with the source position when the value
// was read with positions. [ToValue] is its inverse. Both are written by
// hand although dataspacePatterns.prs is generated (package
// dataspace/schemas/dataspacepatterns, with -exact): the dataspace parses
// the pattern of every Observe asserted and retracted, and the generated
// parser plus a conversion takes three times as long. The tests and fuzz
// targets hold this copy to the generated parser: the same values are
// accepted, and render alike (docs/architecture.md, "Known second copies"). [Match] and
// [MatchAppend] test a value and collect captures in pre-order; they look
// through annotation wrappers, so annotated values match like their plain
// items. [Lift] and [Drop] convert between literal values and the patterns
// that match exactly them (§11.4).
//
// The package is pure: no goroutines, no shared state.
package pattern

import (
	"sort"

	"github.com/syndicate-go/syndicate/preserves"
)

// Pattern is a dataspace pattern. The interface is sealed: only [Discard],
// [Bind], [Lit] and [Group] implement it. A nil Pattern inside a Bind or a
// group entry is treated as Discard.
type Pattern interface {
	isPattern()
}

// Discard matches any value: `<_>`.
type Discard struct{}

// Bind captures the value at its position and matches it against Pattern:
// `<bind P>`.
type Bind struct {
	Pattern Pattern
}

// Lit matches values equal to Value, which is an atom or an embedded value:
// `<lit v>`.
type Lit struct {
	Value preserves.Value
}

// Group matches a record, sequence or dictionary whose mentioned positions
// match: `<group T {k: P ...}>`. Entries are sorted by key in Preserves order
// without duplicates.
type Group struct {
	Type    GroupType
	Entries []Entry
}

// Entry is one constrained position of a Group: a field/item index (an Int)
// for records and sequences, any value for dictionaries.
type Entry struct {
	Key     preserves.Value
	Pattern Pattern
}

// GroupType says which kind of compound a Group matches. The interface is
// sealed: only [RecType], [ArrType] and [DictType] implement it.
type GroupType interface {
	isGroupType()
}

// RecType matches records whose label equals Label (of any arity): `<rec L>`.
type RecType struct {
	Label preserves.Value
}

// ArrType matches sequences: `<arr>`.
type ArrType struct{}

// DictType matches dictionaries: `<dict>`.
type DictType struct{}

func (Discard) isPattern() {}
func (Bind) isPattern()    {}
func (Lit) isPattern()     {}
func (Group) isPattern()   {}

func (RecType) isGroupType()  {}
func (ArrType) isGroupType()  {}
func (DictType) isGroupType() {}

// NewGroup returns a group of type t with the given entries sorted by key in
// Preserves order; when a key repeats, the last entry wins. It takes
// ownership of the slice.
func NewGroup(t GroupType, entries ...Entry) Group {
	sort.SliceStable(entries, func(i, j int) bool {
		return preserves.Compare(entries[i].Key, entries[j].Key) < 0
	})
	out := entries[:0]
	for _, e := range entries {
		if len(out) > 0 && preserves.Equal(out[len(out)-1].Key, e.Key) {
			out[len(out)-1] = e
			continue
		}
		out = append(out, e)
	}
	return Group{Type: t, Entries: out}
}

// Rec returns a group matching records labelled label whose first fields match
// fields (further fields are allowed, by extensibility).
func Rec(label preserves.Value, fields ...Pattern) Group {
	return Group{Type: RecType{Label: label}, Entries: indexed(fields)}
}

// Arr returns a group matching sequences whose first items match items.
func Arr(items ...Pattern) Group {
	return Group{Type: ArrType{}, Entries: indexed(items)}
}

// Dict returns a group matching dictionaries holding every entry's key with a
// value matching the entry's pattern.
func Dict(entries ...Entry) Group {
	return NewGroup(DictType{}, entries...)
}

// Capture returns `<bind <_>>`, the pattern capturing whatever is at its
// position.
func Capture() Bind { return Bind{Pattern: Discard{}} }

func indexed(ps []Pattern) []Entry {
	es := make([]Entry, len(ps))
	for i, p := range ps {
		es[i] = Entry{Key: preserves.Int(i), Pattern: p}
	}
	return es
}

// orDiscard maps the nil pattern to Discard, so hand-built patterns with
// missing sub-patterns behave like `<_>` instead of panicking.
func orDiscard(p Pattern) Pattern {
	if p == nil {
		return Discard{}
	}
	return p
}

// Equal reports whether p and q are the same pattern (values compared with
// preserves.Equal; a nil sub-pattern equals Discard).
func Equal(p, q Pattern) bool {
	p, q = orDiscard(p), orDiscard(q)
	switch x := p.(type) {
	case Discard:
		_, ok := q.(Discard)
		return ok
	case Bind:
		y, ok := q.(Bind)
		return ok && Equal(x.Pattern, y.Pattern)
	case Lit:
		y, ok := q.(Lit)
		return ok && x.Value != nil && y.Value != nil && preserves.Equal(x.Value, y.Value)
	case Group:
		y, ok := q.(Group)
		if !ok || len(x.Entries) != len(y.Entries) || !equalType(x.Type, y.Type) {
			return false
		}
		for i := range x.Entries {
			if !preserves.Equal(x.Entries[i].Key, y.Entries[i].Key) ||
				!Equal(x.Entries[i].Pattern, y.Entries[i].Pattern) {
				return false
			}
		}
		return true
	}
	return false
}

func equalType(a, b GroupType) bool {
	switch x := a.(type) {
	case RecType:
		y, ok := b.(RecType)
		return ok && x.Label != nil && y.Label != nil && preserves.Equal(x.Label, y.Label)
	case ArrType:
		_, ok := b.(ArrType)
		return ok
	case DictType:
		_, ok := b.(DictType)
		return ok
	}
	return false
}

// isAtomic reports whether v (already unwrapped) may appear in a `lit`:
// an atom or an embedded value, never a compound.
func isAtomic(v preserves.Value) bool {
	switch v.Kind() {
	case preserves.KindRecord, preserves.KindSequence, preserves.KindSet, preserves.KindDictionary:
		return false
	}
	return true
}
