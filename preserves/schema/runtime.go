package schema

import (
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// This file is the run-time support of generated code: the error a parser
// returns, the kind tests, and the helpers that turn host values back
// into Preserves values.

// ErrParse is the class of every *ParseError: a value does not match a
// schema definition.
var ErrParse = errors.New("value does not match the schema")

// ParseError says why a value does not match a definition: where in the
// value (Path, from the value given to Parse… down to the part that
// failed), where in the source (Pos, when the failing part carries a
// position annotation, as values read by the script compiler do), and
// what was expected. For an alternation it keeps why each alternative
// failed. Class, when set, is a finer class the error also wraps: the
// hand-written companions of generated code (the daemon spec's
// elaboration, range checks) sort their errors with it.
type ParseError struct {
	Path         []string
	Pos          preserves.Pos
	Msg          string
	Alternatives []AltError
	Class        error
}

// AltError is why one alternative of an alternation failed.
type AltError struct {
	Label string
	Err   *ParseError
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Pos.IsValid() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	if len(e.Path) > 0 {
		b.WriteString("at ")
		b.WriteString(strings.Join(e.Path, ""))
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if len(e.Alternatives) > 0 {
		b.WriteString(" (")
		for i, a := range e.Alternatives {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(a.Label)
			b.WriteString(": ")
			if len(a.Err.Path) > 0 {
				b.WriteString(strings.Join(a.Err.Path, ""))
				b.WriteString(": ")
			}
			b.WriteString(a.Err.Msg)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns ErrParse and, when set, Class.
func (e *ParseError) Unwrap() []error {
	if e.Class != nil {
		return []error{ErrParse, e.Class}
	}
	return []error{ErrParse}
}

// Deepest returns the error itself or, for an alternation, the failure
// of the alternative that got furthest into the value: usually the one
// the author meant. A wrong record label counts as not getting in.
func (e *ParseError) Deepest() *ParseError {
	best, bestDepth := e, -1
	for _, a := range e.Alternatives {
		d := a.Err.Deepest()
		depth := 2 * len(d.Path)
		if n := len(d.Path); n > 0 && d.Path[n-1] == ".label" {
			depth -= 3
		}
		if depth > bestDepth {
			best, bestDepth = d, depth
		}
	}
	if best == e {
		return e
	}
	c := *best
	c.Path = append(append([]string(nil), e.Path...), best.Path...)
	return &c
}

// Fail returns a ParseError at v.
func Fail(v preserves.Value, format string, args ...any) *ParseError {
	return &ParseError{Pos: preserves.PosOf(v), Msg: fmt.Sprintf(format, args...) + ", got " + Show(v)}
}

// Show is the short text of v for messages; wildcards print as `$…`, as
// a checker's unknown parts are usually script variables.
func Show(v preserves.Value) string {
	// 256 bytes leave 60 after `|$…|` shrinks to `$…` (the cut below).
	s := preserves.FormatTextLimit(preserves.MapEmbedded(v, func(e *preserves.Embedded) preserves.Value {
		if _, ok := e.Payload.(Wildcard); ok {
			return preserves.Symbol("$…")
		}
		return e
	}), 256)
	s = strings.ReplaceAll(s, "|$…|", "$…")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// At prefixes the path of err (a *ParseError) with steps, as the error
// travels out of the compound values it was found in.
func At(err error, steps ...string) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.Path = append(steps[:len(steps):len(steps)], pe.Path...)
	}
	return err
}

// Index is the path step of sequence element i.
func Index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// Key is the path step of dictionary key k.
func Key(k preserves.Value) string { return "[" + Show(k) + "]" }

// NoMatch is the error of an alternation none of whose alternatives
// matched v.
func NoMatch(v preserves.Value, def string, labels []string, errs []error) *ParseError {
	e := &ParseError{Pos: preserves.PosOf(v), Msg: "no alternative of " + def + " matches " + Show(v)}
	for i, err := range errs {
		var pe *ParseError
		if errors.As(err, &pe) {
			e.Alternatives = append(e.Alternatives, AltError{Label: labels[i], Err: pe})
		}
	}
	return e
}

// Wildcard is an embedded payload standing for a part of a value that is
// not known (a script variable, seen by a static checker): it matches
// every pattern, so the generated parsers can check what is known of a
// value. A parsed wildcard gives the zero host value (an embedded field
// gets the Wildcard itself).
type Wildcard struct{}

// IsWildcard reports whether v is an embedded Wildcard.
func IsWildcard(v preserves.Value) bool {
	e, ok := preserves.Unwrap(v).(*preserves.Embedded)
	if !ok {
		return false
	}
	_, ok = e.Payload.(Wildcard)
	return ok
}

func wildcards(n int) []preserves.Value {
	w := make([]preserves.Value, n)
	for i := range w {
		w[i] = preserves.NewEmbedded(Wildcard{})
	}
	return w
}

// SymbolHead and KindOf are what a generated alternation dispatches on,
// found once per parse: the symbol labelling v when v is a record ("" when
// it is not, or its label is no symbol), the kind of v, both behind
// annotations, and whether v (or the record's label) is a Wildcard, which
// may be anything. The guards the generator writes on them
// (`w || h == LabelX`, `w || k == preserves.KindString`) are false only
// when an alternative surely fails, so the alternation tries, and builds
// errors for, only the alternatives that may match.
func SymbolHead(v preserves.Value) (preserves.Symbol, bool) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return "", IsWildcard(v)
	}
	l := preserves.Unwrap(r.Label)
	if s, ok := l.(preserves.Symbol); ok {
		return s, false
	}
	return "", isWildcard(l)
}

// KindOf: see SymbolHead.
func KindOf(v preserves.Value) (preserves.Kind, bool) {
	u := preserves.Unwrap(v)
	return u.Kind(), isWildcard(u)
}

func isWildcard(u preserves.Value) bool {
	e, ok := u.(*preserves.Embedded)
	if !ok {
		return false
	}
	_, ok = e.Payload.(Wildcard)
	return ok
}

// MayBeRecordOf is false only when v surely is not a record labelled
// label; MayEqual only when v surely is not lit; MayBeKind only when v is
// surely not of kind k (a Wildcard may be anything). Generated
// alternations test them to skip, without building its error, an
// alternative that cannot match.
func MayBeRecordOf(v, label preserves.Value) bool {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return IsWildcard(v)
	}
	return preserves.Equal(r.Label, label) || IsWildcard(r.Label)
}

// MayEqual: see MayBeRecordOf.
func MayEqual(v, lit preserves.Value) bool { return preserves.Equal(v, lit) || IsWildcard(v) }

// MayEqualOneOf: see MayBeRecordOf; lits are an enum's literals.
func MayEqualOneOf(v preserves.Value, lits []preserves.Value) bool {
	for _, l := range lits {
		if preserves.Equal(v, l) {
			return true
		}
	}
	return IsWildcard(v)
}

// MayBeKind: see MayBeRecordOf.
func MayBeKind(v preserves.Value, k preserves.Kind) bool {
	return preserves.Unwrap(v).Kind() == k || IsWildcard(v)
}

// AsRecord returns v as a record with at least n fields.
func AsRecord(v preserves.Value, n int) (*preserves.Record, error) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	switch {
	case !ok && IsWildcard(v):
		w := wildcards(n + 1)
		return preserves.NewRecord(w[0], w[1:]...), nil
	case !ok:
		return nil, Fail(v, "expected a record")
	case len(r.Fields) < n:
		return nil, Fail(v, "expected at least %d field%s", n, plural(n))
	}
	return r, nil
}

// AsRecordOf returns v as a record labelled label with at least n fields.
// The label is tested before the fields are counted, so a record of
// another kind is reported as such (at path ".label").
func AsRecordOf(v, label preserves.Value, n int) (*preserves.Record, error) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if ok && !preserves.Equal(r.Label, label) && !IsWildcard(r.Label) {
		e := Fail(v, "expected <%s …>", Show(label))
		e.Path = []string{".label"}
		return nil, e
	}
	return AsRecord(v, n)
}

// AsExactRecordOf is AsRecordOf for the modules generated with
// Options.Exact: the record has exactly n fields.
func AsExactRecordOf(v, label preserves.Value, n int) (*preserves.Record, error) {
	r, err := AsRecordOf(v, label, n)
	if err == nil && len(r.Fields) != n {
		return nil, Fail(v, "expected exactly %d field%s", n, plural(n))
	}
	return r, err
}

// AsSeq returns v as a sequence of at least n elements.
func AsSeq(v preserves.Value, n int) (preserves.Sequence, error) {
	s, ok := preserves.Unwrap(v).(preserves.Sequence)
	switch {
	case !ok && IsWildcard(v):
		return wildcards(n), nil
	case !ok:
		return nil, Fail(v, "expected a sequence")
	case len(s) < n:
		return nil, Fail(v, "expected at least %d element%s", n, plural(n))
	}
	return s, nil
}

// AsSet returns the elements of v, a set.
func AsSet(v preserves.Value) ([]preserves.Value, error) {
	s, ok := preserves.Unwrap(v).(*preserves.Set)
	if !ok {
		return nil, failUnlessWildcard(v, "expected a set")
	}
	return s.Elems(), nil
}

// AsDict returns v as a dictionary.
func AsDict(v preserves.Value) (*preserves.Dictionary, error) {
	d, ok := preserves.Unwrap(v).(*preserves.Dictionary)
	if !ok {
		return preserves.NewDictionary(), failUnlessWildcard(v, "expected a dictionary")
	}
	return d, nil
}

// Entry returns the value at key k of d, the dictionary v.
func Entry(v preserves.Value, d *preserves.Dictionary, k preserves.Value) (preserves.Value, error) {
	x, ok := d.Get(k)
	if !ok {
		if IsWildcard(v) {
			return v, nil
		}
		return nil, Fail(v, "expected key %s", Show(k))
	}
	return x, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// failUnlessWildcard is the error of a failed kind test, nil for a
// Wildcard.
func failUnlessWildcard(v preserves.Value, msg string) error {
	if IsWildcard(v) {
		return nil
	}
	return Fail(v, "%s", msg)
}

// AsBool returns v as a Boolean.
func AsBool(v preserves.Value) (bool, error) {
	b, ok := preserves.Unwrap(v).(preserves.Bool)
	if !ok {
		return false, failUnlessWildcard(v, "expected a boolean")
	}
	return bool(b), nil
}

// AsDouble returns v as a Double (an integer is not a Double).
func AsDouble(v preserves.Value) (float64, error) {
	d, ok := preserves.Unwrap(v).(preserves.Double)
	if !ok {
		return 0, failUnlessWildcard(v, "expected a double (write 1.0, not 1)")
	}
	return d.Float64(), nil
}

// AsInt returns v as an integer of any size.
func AsInt(v preserves.Value) (*big.Int, error) {
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Int:
		return newInt(int64(x)), nil
	case *preserves.BigInt:
		return x.Big(), nil
	}
	return new(big.Int), failUnlessWildcard(v, "expected an integer")
}

// newInt is big.NewInt(x) in one allocation instead of two: the Int's
// word lives beside it (an Int that grows gets a new array, as usual).
func newInt(x int64) *big.Int {
	if bits.UintSize < 64 {
		return big.NewInt(x)
	}
	s := new(struct {
		n big.Int
		w [1]big.Word
	})
	u := uint64(x)
	if x < 0 {
		u = -u
	}
	s.w[0] = big.Word(u)
	s.n.SetBits(s.w[:])
	if x < 0 {
		s.n.Neg(&s.n)
	}
	return &s.n
}

// AsString returns v as a String (a Symbol is not a String).
func AsString(v preserves.Value) (string, error) {
	s, ok := preserves.Unwrap(v).(preserves.String)
	if !ok {
		return "", failUnlessWildcard(v, "expected a string")
	}
	return string(s), nil
}

// AsBytes returns v as a ByteString.
func AsBytes(v preserves.Value) ([]byte, error) {
	s, ok := preserves.Unwrap(v).(preserves.ByteString)
	if !ok {
		return nil, failUnlessWildcard(v, "expected a byte string")
	}
	return []byte(s), nil
}

// AsSymbol returns v as a Symbol.
func AsSymbol(v preserves.Value) (preserves.Symbol, error) {
	s, ok := preserves.Unwrap(v).(preserves.Symbol)
	if !ok {
		return "", failUnlessWildcard(v, "expected a symbol")
	}
	return s, nil
}

// AsEmbedded returns the payload of v, an embedded value (a capability,
// in Syndicate).
func AsEmbedded(v preserves.Value) (any, error) {
	e, ok := preserves.Unwrap(v).(*preserves.Embedded)
	if !ok {
		return nil, Fail(v, "expected an embedded value (a capability)")
	}
	return e.Payload, nil
}

// CheckLit checks that v equals want.
func CheckLit(v, want preserves.Value) error {
	if !preserves.Equal(v, want) {
		return failUnlessWildcard(v, "expected "+Show(want))
	}
	return nil
}

// LitIndex is the index of the literal v equals among lits (the
// alternatives of an enum); a Wildcard is the first.
func LitIndex(v preserves.Value, lits []preserves.Value) (int, error) {
	for i, l := range lits {
		if preserves.Equal(v, l) {
			return i, nil
		}
	}
	if IsWildcard(v) {
		return 0, nil
	}
	texts := make([]string, len(lits))
	for i, l := range lits {
		texts[i] = Show(l)
	}
	return 0, Fail(v, "expected one of %s", strings.Join(texts, ", "))
}

// IntValue is the Preserves integer n (0 for nil).
func IntValue(n *big.Int) preserves.Value {
	if n == nil {
		return preserves.Int(0)
	}
	return preserves.NewBigInt(n)
}

// Pair is one entry of a dictionary whose keys have no Go equality that
// matches Preserves equality; Pairs keep the dictionary's key order.
type Pair[K, V any] struct {
	Key   K
	Value V
}

// SeqValue unparses a list.
func SeqValue[T any](xs []T, f func(T) preserves.Value) preserves.Value {
	out := make(preserves.Sequence, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// SetValue unparses a set kept as a list.
func SetValue[T any](xs []T, f func(T) preserves.Value) preserves.Value {
	out := make([]preserves.Value, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return preserves.NewSet(out...)
}

// MapValue unparses a dictionary kept as a Go map (keyed by string,
// symbol or bool: the map keys are distinct Preserves keys). The entries
// are sorted once, in place and without reflection, and the dictionary is
// built on them without a second check.
func MapValue[K comparable, V any](m map[K]V, kf func(K) preserves.Value, vf func(V) preserves.Value) preserves.Value {
	es := make([]preserves.DictEntry, 0, len(m))
	for k, v := range m {
		es = append(es, preserves.DictEntry{Key: kf(k), Value: vf(v)})
	}
	slices.SortFunc(es, compareKeys)
	return preserves.NewSortedDictionary(es)
}

func compareKeys(a, b preserves.DictEntry) int { return preserves.Compare(a.Key, b.Key) }

// PairsValue unparses a dictionary kept as pairs.
func PairsValue[K, V any](ps []Pair[K, V], kf func(K) preserves.Value, vf func(V) preserves.Value) preserves.Value {
	es := make([]preserves.DictEntry, len(ps))
	for i, p := range ps {
		es[i] = preserves.DictEntry{Key: kf(p.Key), Value: vf(p.Value)}
	}
	return preserves.NewDictionary(es...)
}

// Fields returns the elements of v, the unparsed fields part of a
// record; a host value that is no sequence there is a programming error.
func Fields(v preserves.Value) []preserves.Value {
	s, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok {
		panic(fmt.Sprintf("schema: record fields must be a sequence, not %s", Show(v)))
	}
	return s
}

// Concat appends tail, a sequence, to fixed.
func Concat(fixed preserves.Sequence, tail preserves.Value) preserves.Value {
	return append(fixed, Fields(tail)...)
}

// ErrMerge is the class of a failed intersection unparse.
var ErrMerge = errors.New("schema: the parts of an intersection disagree")

// Merge combines the unparsed parts of an intersection: equal values
// merge to themselves, sequences and records of equal shape element by
// element, dictionaries by key union.
func Merge(a, b preserves.Value) (preserves.Value, error) {
	a, b = preserves.Unwrap(a), preserves.Unwrap(b)
	if preserves.Equal(a, b) {
		return a, nil
	}
	switch x := a.(type) {
	case preserves.Sequence:
		if y, ok := b.(preserves.Sequence); ok && len(x) == len(y) {
			return mergeAll(x, y)
		}
	case *preserves.Record:
		if y, ok := b.(*preserves.Record); ok && len(x.Fields) == len(y.Fields) {
			l, err := Merge(x.Label, y.Label)
			if err != nil {
				return nil, err
			}
			fs, err := mergeAll(x.Fields, y.Fields)
			if err != nil {
				return nil, err
			}
			return preserves.NewRecord(l, fs...), nil
		}
	case *preserves.Dictionary:
		if y, ok := b.(*preserves.Dictionary); ok {
			es := append([]preserves.DictEntry(nil), x.Entries()...)
			for _, e := range y.Entries() {
				if old, ok := x.Get(e.Key); ok {
					m, err := Merge(old, e.Value)
					if err != nil {
						return nil, err
					}
					e.Value = m
				}
				es = append(es, e)
			}
			return preserves.NewDictionary(es...), nil
		}
	}
	return nil, fmt.Errorf("%w: %s and %s", ErrMerge, Show(a), Show(b))
}

func mergeAll(xs, ys []preserves.Value) (preserves.Sequence, error) {
	out := make(preserves.Sequence, len(xs))
	for i := range xs {
		m, err := Merge(xs[i], ys[i])
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// MustMerge merges the parts of an intersection for ToValue. A value
// parsed from Preserves always merges; a hand-built one whose parts
// disagree is a programming error, so it panics naming the definition.
func MustMerge(def string, parts ...preserves.Value) preserves.Value {
	v := parts[0]
	for _, p := range parts[1:] {
		m, err := Merge(v, p)
		if err != nil {
			panic(fmt.Sprintf("%s.ToValue: %v", def, err))
		}
		v = m
	}
	return v
}

// MustBigInt is the integer written in decimal s, for generated literals.
func MustBigInt(s string) preserves.Value {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("schema: bad integer literal " + s)
	}
	return preserves.NewBigInt(n)
}
