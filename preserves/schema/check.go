package schema

import (
	"errors"
	"fmt"
)

// Check performs the static checks that need the whole bundle: every
// reference resolves (inside #:p too), and no definition refers to
// itself without consuming input (the parser would loop). Mistakes local
// to one clause are reported by the reader; those that depend on host
// types (anonymous patterns that would lose what they match, duplicate
// bindings, Go name collisions) by Generate.
func Check(b *Bundle) error {
	var errs []error
	for _, m := range b.Modules {
		for _, d := range m.Definitions {
			walkDef(d, func(r *Ref) {
				if _, _, err := b.resolve(m, r); err != nil {
					errs = append(errs, err)
				}
			})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, m := range b.Modules {
		for _, d := range m.Definitions {
			if err := b.cycle(m, d, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *Bundle) resolve(from *Module, r *Ref) (*Module, *Definition, error) {
	m := from
	if len(r.Module) > 0 {
		m = b.Module(r.Module)
	}
	if m == nil {
		return nil, nil, &Error{Pos: r.Pos, Msg: fmt.Sprintf("no module %s for the reference %s.%s", r.Module, r.Module, r.Name)}
	}
	d := m.Definition(r.Name)
	if d == nil {
		return nil, nil, &Error{Pos: r.Pos, Msg: fmt.Sprintf("module %s has no definition %s", m.Path, r.Name)}
	}
	return m, d, nil
}

// headRefs are the references a definition tries on its input before
// consuming any of it.
func headRefs(d *Definition) []*Ref {
	var out []*Ref
	for _, p := range topPatterns(d) {
		if r, ok := p.(*Ref); ok {
			out = append(out, r)
		}
	}
	return out
}

// topPatterns are d's alternatives, the parts of its intersection, or its
// one pattern.
func topPatterns(d *Definition) []Pattern {
	var out []Pattern
	for _, a := range d.Or {
		out = append(out, a.Pattern)
	}
	for _, n := range d.And {
		out = append(out, n.Pattern)
	}
	if d.Pattern != nil {
		out = append(out, d.Pattern)
	}
	return out
}

func (b *Bundle) cycle(m *Module, d *Definition, path []*Definition) error {
	for _, p := range path {
		if p == d {
			return &Error{Pos: d.Pos, Msg: fmt.Sprintf("%s refers to itself without consuming input", d.Name)}
		}
	}
	for _, r := range headRefs(d) {
		rm, rd, err := b.resolve(m, r)
		if err != nil {
			return err
		}
		if err := b.cycle(rm, rd, append(path, d)); err != nil {
			return err
		}
	}
	return nil
}

func walkDef(d *Definition, f func(*Ref)) {
	for _, p := range topPatterns(d) {
		walk(p, f)
	}
}

func walk(p Pattern, f func(*Ref)) {
	switch x := p.(type) {
	case *Ref:
		f(x)
	case Embedded:
		walk(x.Interface, f)
	case SeqOf:
		walk(x.Elem, f)
	case SetOf:
		walk(x.Elem, f)
	case DictOf:
		walk(x.Key, f)
		walk(x.Val, f)
	case Rec:
		walk(x.Label.Pattern, f)
		walk(x.Fields.Pattern, f)
	case Tuple:
		for _, e := range x.Elems {
			walk(e.Pattern, f)
		}
	case TuplePrefix:
		for _, e := range x.Fixed {
			walk(e.Pattern, f)
		}
		walk(x.Variable.Pattern, f)
	case Dict:
		for _, e := range x.Entries {
			walk(e.Pattern.Pattern, f)
		}
	}
}
