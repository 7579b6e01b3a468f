package schema

import (
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// ModulePath names a module: the path of its file below the schema
// directory, without ".prs", one symbol per segment.
type ModulePath []string

func (m ModulePath) String() string { return strings.Join(m, ".") }

func (m ModulePath) value() preserves.Value {
	s := make(preserves.Sequence, len(m))
	for i, p := range m {
		s[i] = preserves.Symbol(p)
	}
	return s
}

// Bundle is a set of modules whose references resolve among themselves.
type Bundle struct {
	Modules []*Module
	// Aliases maps a module name used in references to the module it means
	// (schemas/internalServices.prs says TransportAddress.Tcp for the file
	// transportAddress.prs, as upstream resolves by build configuration).
	Aliases map[string]ModulePath
}

// Module is one schema file read into the abstract form.
type Module struct {
	Path ModulePath
	File string
	// EmbeddedType is the declared host type of embedded values, or nil
	// for #f. The Go generator maps every embedded payload to `any`
	// whatever it says; it is kept so the abstract form is complete.
	EmbeddedType *Ref
	Definitions  []*Definition // in source order
}

// Definition is one `Name = body .` clause. Exactly one of Or, And and
// Pattern is set.
type Definition struct {
	Name    string
	Pos     preserves.Pos
	Doc     []string // comments preceding the name
	Or      []Alternative
	And     []NamedPattern
	Pattern Pattern
}

// Alternative is one labelled branch of an alternation.
type Alternative struct {
	Label   string
	Pattern Pattern
	Pos     preserves.Pos
	Doc     []string
}

// NamedPattern is a pattern with an optional binding (Name "" is
// anonymous). A named pattern is always simple.
type NamedPattern struct {
	Name    string
	Pattern Pattern
	Pos     preserves.Pos
}

// Pattern is one node of the abstract form: the simple patterns Any, Atom,
// Embedded, Lit, SeqOf, SetOf, DictOf and *Ref, and the compound patterns
// Rec, Tuple, TuplePrefix and Dict.
type Pattern interface {
	// Value renders the node as the metaschema says, so a module can be
	// compared with the reference toolchain's compiled bundles.
	Value() preserves.Value
	isPattern()
}

// AtomKind is one of the atom kinds of `<atom …>`.
type AtomKind string

// The atom kinds, spelt as in the metaschema.
const (
	Boolean       AtomKind = "Boolean"
	Double        AtomKind = "Double"
	SignedInteger AtomKind = "SignedInteger"
	String        AtomKind = "String"
	ByteString    AtomKind = "ByteString"
	Symbol        AtomKind = "Symbol"
)

type (
	// Any matches every value.
	Any struct{}
	// Atom matches an atom of one kind.
	Atom struct{ Kind AtomKind }
	// Embedded matches an embedded value; Interface documents what the
	// payload answers to and is never checked.
	Embedded struct{ Interface Pattern }
	// Lit matches exactly one value.
	Lit struct{ Literal preserves.Value }
	// SeqOf matches a sequence of elements matching Elem.
	SeqOf struct{ Elem Pattern }
	// SetOf matches a set of elements matching Elem.
	SetOf struct{ Elem Pattern }
	// DictOf matches a dictionary whose keys match Key and values Val.
	DictOf struct{ Key, Val Pattern }
	// Ref matches what the named definition matches. An empty Module is
	// the referring module.
	Ref struct {
		Module ModulePath
		Name   string
		Pos    preserves.Pos
	}
	// Rec matches a record: Label its label, Fields the sequence of its
	// fields.
	Rec struct{ Label, Fields NamedPattern }
	// Tuple matches a sequence of at least len(Elems) elements.
	Tuple struct{ Elems []NamedPattern }
	// TuplePrefix matches a sequence starting with Fixed whose remaining
	// elements, as a sequence, match Variable.
	TuplePrefix struct {
		Fixed    []NamedPattern
		Variable NamedPattern
	}
	// Dict matches a dictionary holding at least the listed keys.
	Dict struct{ Entries []DictEntry }
)

// DictEntry is one key of a Dict pattern.
type DictEntry struct {
	Key     preserves.Value
	Pattern NamedPattern
}

func (Any) isPattern()         {}
func (Atom) isPattern()        {}
func (Embedded) isPattern()    {}
func (Lit) isPattern()         {}
func (SeqOf) isPattern()       {}
func (SetOf) isPattern()       {}
func (DictOf) isPattern()      {}
func (*Ref) isPattern()        {}
func (Rec) isPattern()         {}
func (Tuple) isPattern()       {}
func (TuplePrefix) isPattern() {}
func (Dict) isPattern()        {}

func sym(s string) preserves.Value { return preserves.Symbol(s) }

func (Any) Value() preserves.Value        { return sym("any") }
func (p Atom) Value() preserves.Value     { return preserves.Rec("atom", sym(string(p.Kind))) }
func (p Embedded) Value() preserves.Value { return preserves.Rec("embedded", p.Interface.Value()) }
func (p Lit) Value() preserves.Value      { return preserves.Rec("lit", p.Literal) }
func (p SeqOf) Value() preserves.Value    { return preserves.Rec("seqof", p.Elem.Value()) }
func (p SetOf) Value() preserves.Value    { return preserves.Rec("setof", p.Elem.Value()) }
func (p DictOf) Value() preserves.Value {
	return preserves.Rec("dictof", p.Key.Value(), p.Val.Value())
}
func (p *Ref) Value() preserves.Value {
	return preserves.Rec("ref", p.Module.value(), sym(p.Name))
}
func (p Rec) Value() preserves.Value {
	return preserves.Rec("rec", p.Label.Value(), p.Fields.Value())
}
func (p Tuple) Value() preserves.Value { return preserves.Rec("tuple", namedSeq(p.Elems)) }
func (p TuplePrefix) Value() preserves.Value {
	return preserves.Rec("tuplePrefix", namedSeq(p.Fixed), p.Variable.Value())
}
func (p Dict) Value() preserves.Value {
	es := make([]preserves.DictEntry, len(p.Entries))
	for i, e := range p.Entries {
		es[i] = preserves.DictEntry{Key: e.Key, Value: e.Pattern.Value()}
	}
	return preserves.Rec("dict", preserves.NewDictionary(es...))
}

// Value renders the named pattern: <named n p>, or p when anonymous.
func (n NamedPattern) Value() preserves.Value {
	if n.Name == "" {
		return n.Pattern.Value()
	}
	return preserves.Rec("named", sym(n.Name), n.Pattern.Value())
}

func namedSeq(ns []NamedPattern) preserves.Value {
	s := make(preserves.Sequence, len(ns))
	for i, n := range ns {
		s[i] = n.Value()
	}
	return s
}

// Value renders the definition in the abstract form.
func (d *Definition) Value() preserves.Value {
	switch {
	case d.Or != nil:
		s := make(preserves.Sequence, len(d.Or))
		for i, a := range d.Or {
			s[i] = preserves.Sequence{preserves.String(a.Label), a.Pattern.Value()}
		}
		return preserves.Rec("or", s)
	case d.And != nil:
		return preserves.Rec("and", namedSeq(d.And))
	}
	return d.Pattern.Value()
}

// Value renders the module as `<schema {…}>`.
func (m *Module) Value() preserves.Value {
	var et preserves.Value = preserves.Bool(false)
	if m.EmbeddedType != nil {
		et = m.EmbeddedType.Value()
	}
	defs := make([]preserves.DictEntry, len(m.Definitions))
	for i, d := range m.Definitions {
		defs[i] = preserves.DictEntry{Key: sym(d.Name), Value: d.Value()}
	}
	return preserves.Rec("schema", preserves.Dict(
		sym("version"), preserves.Int(1),
		sym("embeddedType"), et,
		sym("definitions"), preserves.NewDictionary(defs...)))
}

// Value renders the bundle as `<bundle {path: <schema …> …}>`, the form
// the reference toolchain writes.
func (b *Bundle) Value() preserves.Value {
	es := make([]preserves.DictEntry, len(b.Modules))
	for i, m := range b.Modules {
		es[i] = preserves.DictEntry{Key: m.Path.value(), Value: m.Value()}
	}
	return preserves.Rec("bundle", preserves.NewDictionary(es...))
}

// Module returns the module at path p (after aliases), or nil.
func (b *Bundle) Module(p ModulePath) *Module {
	if len(p) == 1 && b.Aliases != nil {
		if a, ok := b.Aliases[p[0]]; ok {
			p = a
		}
	}
	for _, m := range b.Modules {
		if m.Path.String() == p.String() {
			return m
		}
	}
	return nil
}

// Definition returns the named definition, or nil.
func (m *Module) Definition(name string) *Definition {
	for _, d := range m.Definitions {
		if d.Name == name {
			return d
		}
	}
	return nil
}
