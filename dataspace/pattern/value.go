package pattern

import (
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace/schemas/dataspacepatterns"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// ErrMalformed is wrapped by every error FromValue and Lift return:
// the value is not a well-formed pattern (or, for Lift, has no literal
// pattern).
var ErrMalformed = errors.New("pattern: malformed pattern")

// Error describes a malformed pattern: what is wrong and, when the offending
// value was read with positions, where it is.
type Error struct {
	Pos preserves.Pos
	Msg string
}

func (e *Error) Error() string {
	return e.Pos.Prefix(e.Msg)
}

// Unwrap returns ErrMalformed.
func (e *Error) Unwrap() error { return ErrMalformed }

func malformed(at preserves.Value, format string, args ...any) *Error {
	return &Error{Pos: preserves.PosOf(at), Msg: fmt.Sprintf(format, args...)}
}

// symDiscard labels the discard pattern `<_>`; the other labels of the
// schema form are dataspacepatterns.Label….
const symDiscard = preserves.Symbol("_")

// FromValue parses the schema form of a pattern with the parser generated
// from dataspacePatterns.prs. Annotations are ignored (the result holds
// plain values) except that their positions are reported in errors.
// Record arities are checked exactly (the schema language allows extra
// fields; a pattern with parts we would silently ignore is refused
// instead); a `lit` must hold an atom or embedded value. Group keys are
// not checked against the group type: a non-index key in a rec/arr group
// is well-formed and simply never matches (§11.2).
func FromValue(v preserves.Value) (Pattern, error) {
	g, err := dataspacepatterns.ParsePattern(v)
	if err != nil {
		var pe *schema.ParseError
		if !errors.As(err, &pe) {
			return nil, &Error{Msg: "pattern: " + err.Error()}
		}
		d := *pe.Deepest()
		pos := d.Pos
		d.Pos = preserves.Pos{}
		return nil, &Error{Pos: pos, Msg: "pattern: " + d.Error()}
	}
	p, at := fromSchema(v, g)
	if at != nil {
		return nil, malformed(at, "pattern: %s has fields the schema does not define", preserves.Show(at))
	}
	return p, nil
}

// fromSchema converts g, parsed from v, to the runtime form. It checks
// what the generated parser allows and we do not, a record with extra
// fields (or, only with a schema.Wildcard, no record at all), and returns
// the offending part of v instead.
func fromSchema(v preserves.Value, g dataspacepatterns.Pattern) (Pattern, preserves.Value) {
	r, _ := preserves.Unwrap(v).(*preserves.Record)
	if r == nil {
		return nil, v
	}
	switch x := g.(type) {
	case dataspacepatterns.PatternDiscard:
		if len(r.Fields) == 0 {
			return Discard{}, nil
		}
	case dataspacepatterns.PatternBind:
		if len(r.Fields) == 1 {
			p, at := fromSchema(r.Fields[0], x.Pattern)
			return Bind{Pattern: p}, at
		}
	case dataspacepatterns.PatternLit:
		if len(r.Fields) == 1 {
			return Lit{Value: preserves.Strip(r.Fields[0])}, nil
		}
	case dataspacepatterns.PatternGroup:
		if len(r.Fields) != 2 {
			return nil, v
		}
		var t GroupType
		arity := 0
		switch y := x.Type.(type) {
		case dataspacepatterns.GroupTypeRec:
			t, arity = RecType{Label: preserves.Strip(y.Label)}, 1
		case dataspacepatterns.GroupTypeArr:
			t = ArrType{}
		case dataspacepatterns.GroupTypeDict:
			t = DictType{}
		}
		if tr, _ := preserves.Unwrap(r.Fields[0]).(*preserves.Record); tr == nil || len(tr.Fields) != arity {
			return nil, r.Fields[0]
		}
		d, _ := preserves.Unwrap(r.Fields[1]).(*preserves.Dictionary)
		if d == nil || d.Len() != len(x.Entries) {
			return nil, r.Fields[1]
		}
		es := make([]Entry, len(x.Entries))
		for i, e := range d.Entries() { // in the order the parser read them
			p, at := fromSchema(e.Value, x.Entries[i].Value)
			if at != nil {
				return nil, at
			}
			es[i] = Entry{Key: preserves.Strip(e.Key), Pattern: p}
		}
		return Group{Type: t, Entries: es}, nil
	}
	return nil, v
}

// ToValue renders p in the schema form FromValue parses. A nil sub-pattern is
// rendered as `<_>`.
func ToValue(p Pattern) preserves.Value {
	switch x := orDiscard(p).(type) {
	case Discard:
		return preserves.Rec(string(symDiscard))
	case Bind:
		return preserves.Rec(string(dataspacepatterns.LabelBind), ToValue(x.Pattern))
	case Lit:
		return preserves.Rec(string(dataspacepatterns.LabelLit), x.Value)
	case Group:
		var t preserves.Value
		switch gt := x.Type.(type) {
		case RecType:
			t = preserves.Rec(string(dataspacepatterns.LabelRec), gt.Label)
		case ArrType:
			t = preserves.Rec(string(dataspacepatterns.LabelArr))
		case DictType:
			t = preserves.Rec(string(dataspacepatterns.LabelDict))
		default:
			panic(fmt.Sprintf("pattern: ToValue: unexpected group type %T", x.Type))
		}
		es := make([]preserves.DictEntry, len(x.Entries))
		for i, e := range x.Entries {
			es[i] = preserves.DictEntry{Key: e.Key, Value: ToValue(e.Pattern)}
		}
		return preserves.Rec(string(dataspacepatterns.LabelGroup), t, preserves.NewDictionary(es...))
	}
	panic(fmt.Sprintf("pattern: ToValue: unexpected pattern type %T", p))
}
