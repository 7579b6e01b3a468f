package pattern

import (
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace/schemas/dataspacepatterns"
	"github.com/syndicate-go/syndicate/preserves"
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

// FromValue parses the schema form of a pattern. Annotations are ignored (the
// result holds plain values) except that their positions are reported in
// errors. Record arities are checked exactly, as the schema requires; a
// `lit` must hold an atom or embedded value. Group keys are not checked
// against the group type: a non-index key in a rec/arr group is well-formed
// and simply never matches (§11.2).
func FromValue(v preserves.Value) (Pattern, error) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return nil, malformed(v, "pattern: expected a pattern record, found %s", preserves.Unwrap(v).Kind())
	}
	label, _ := preserves.Unwrap(r.Label).(preserves.Symbol)
	n := arity(label)
	if n < 0 {
		return nil, malformed(v, "pattern: unknown pattern record label %v", labelText(r.Label))
	}
	if len(r.Fields) != n {
		return nil, malformed(v, "pattern: <%s> takes %d field(s), found %d", string(label), n, len(r.Fields))
	}
	switch label {
	case dataspacepatterns.LabelBind:
		p, err := FromValue(r.Fields[0])
		if err != nil {
			return nil, err
		}
		return Bind{Pattern: p}, nil
	case dataspacepatterns.LabelLit:
		a := preserves.Unwrap(r.Fields[0])
		if !isAtomic(a) {
			return nil, malformed(r.Fields[0], "pattern: <lit> cannot hold a %s", a.Kind())
		}
		return Lit{Value: preserves.Strip(a)}, nil
	case dataspacepatterns.LabelGroup:
		t, err := groupTypeFromValue(r.Fields[0])
		if err != nil {
			return nil, err
		}
		d, ok := preserves.Unwrap(r.Fields[1]).(*preserves.Dictionary)
		if !ok {
			return nil, malformed(r.Fields[1], "pattern: group entries must be a dictionary, found %s",
				preserves.Unwrap(r.Fields[1]).Kind())
		}
		es, err := dictEntries(d, FromValue)
		if err != nil {
			return nil, err
		}
		return Group{Type: t, Entries: es}, nil
	}
	return Discard{}, nil
}

// arity is the number of fields of the pattern record labelled label, -1
// for a label that is no pattern's.
func arity(label preserves.Symbol) int {
	switch label {
	case symDiscard:
		return 0
	case dataspacepatterns.LabelBind, dataspacepatterns.LabelLit:
		return 1
	case dataspacepatterns.LabelGroup:
		return 2
	}
	return -1
}

func groupTypeFromValue(v preserves.Value) (GroupType, error) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return nil, malformed(v, "pattern: expected a group type record, found %s", preserves.Unwrap(v).Kind())
	}
	label, _ := preserves.Unwrap(r.Label).(preserves.Symbol)
	want := 0
	var t GroupType
	switch label {
	case dataspacepatterns.LabelRec:
		want = 1
		if len(r.Fields) == 1 {
			t = RecType{Label: preserves.Strip(r.Fields[0])}
		}
	case dataspacepatterns.LabelArr:
		t = ArrType{}
	case dataspacepatterns.LabelDict:
		t = DictType{}
	default:
		return nil, malformed(v, "pattern: unknown group type label %v", labelText(r.Label))
	}
	if len(r.Fields) != want {
		return nil, malformed(v, "pattern: <%s> takes %d field(s), found %d", string(label), want, len(r.Fields))
	}
	return t, nil
}

// labelText describes a record label for an error message without depending
// on the text writer.
func labelText(l preserves.Value) string {
	switch x := preserves.Unwrap(l).(type) {
	case preserves.Symbol:
		return preserves.ShowString(string(x))
	case preserves.String:
		return fmt.Sprintf("%q", preserves.ShowString(string(x)))
	}
	return "of kind " + preserves.Unwrap(l).Kind().String()
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
