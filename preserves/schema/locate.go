package schema

import (
	"errors"
	"strconv"

	"github.com/syndicate-go/syndicate/preserves"
)

// Positions of failing atoms.
//
// A ParseError's Pos comes from the failing part itself when that part
// carries one: an *Annotated (values read with positions) or a compound
// remembered in the position side table of package preserves (values a
// script built, preserves.Remember). An atom has no identity, so plain
// atoms have no position of their own: their parent compound remembers
// where each item was written (preserves.ItemPos). Generated parsers
// therefore report errors with AtIn, which walks the error's path from
// the value being parsed and takes the most specific position known
// along it.

// AtIn is At for a generated parser of v: it prefixes the path of err (a
// *ParseError) with steps and, when the error has no position yet, gives
// it the most specific position known along its path from v (Locate).
func AtIn(err error, v preserves.Value, steps ...string) error {
	err = At(err, steps...)
	var pe *ParseError
	if errors.As(err, &pe) && !pe.Pos.IsValid() {
		pe.Pos = Locate(v, pe.Path)
	}
	return err
}

// Locate returns the source position of the part of v that path (the
// steps of a ParseError) leads to: the position of the deepest part along
// the path whose position is known, the zero Pos when none is.
func Locate(v preserves.Value, path []string) preserves.Pos {
	best := preserves.PosOf(v)
	cur := v
	for _, step := range path {
		if step == ".fields" {
			continue // the next step indexes the record's fields
		}
		cur = preserves.Unwrap(cur)
		i, alt := stepItem(cur, step)
		if i < 0 {
			break
		}
		p := preserves.ItemPos(cur, i)
		if !p.IsValid() && alt >= 0 {
			p = preserves.ItemPos(cur, alt)
		}
		if p.IsValid() {
			best = p
		}
		next, ok := preserves.ItemOf(cur, i)
		if !ok {
			break
		}
		cur = next
	}
	return best
}

// stepItem is the item (numbered as preserves.Remember numbers them) that
// step leads to in v, -1 if none; alt is a fallback item naming the same
// place (a dictionary entry's key), -1 if none.
func stepItem(v preserves.Value, step string) (i, alt int) {
	switch x := v.(type) {
	case *preserves.Record:
		if step == ".label" {
			return 0, -1
		}
		if n, ok := index(step); ok && n < len(x.Fields) {
			return n + 1, -1
		}
	case preserves.Sequence:
		if n, ok := index(step); ok && n < len(x) {
			return n, -1
		}
	case *preserves.Set:
		if n, ok := index(step); ok && n < x.Len() {
			return n, -1
		}
	case *preserves.Dictionary:
		for j, e := range x.Entries() {
			// Generated code writes a key step with Key, or as the
			// key's text for the literal keys of a dictionary pattern.
			if step == Key(e.Key) || step == "["+preserves.FormatText(e.Key)+"]" {
				return 2*j + 1, 2 * j
			}
		}
	}
	return -1, -1
}

func index(step string) (int, bool) {
	if len(step) < 3 || step[0] != '[' || step[len(step)-1] != ']' {
		return 0, false
	}
	n, err := strconv.Atoi(step[1 : len(step)-1])
	return n, err == nil && n >= 0
}

// FailAt is Fail for the part of v that step (a path step: "[i]",
// ".label") leads to, for the hand-written checks beside generated code:
// the error's Path is step, and its Pos the part's own or the place v
// remembers for it (Locate).
func FailAt(v preserves.Value, step string, format string, args ...any) *ParseError {
	path := []string{step}
	part := v
	if i, _ := stepItem(preserves.Unwrap(v), step); i >= 0 {
		part, _ = preserves.ItemOf(preserves.Unwrap(v), i)
	}
	e := Fail(part, format, args...)
	e.Path = path
	if !e.Pos.IsValid() {
		e.Pos = Locate(v, path)
	}
	return e
}
