package compile

import (
	"fmt"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// Disassemble renders a program as indented text, one instruction per line
// prefixed by its line:col. Values are printed in script syntax (`$x` is a
// variable reference; a literal symbol that would read as a sigil is written
// `=$x`), patterns in dataspacePatterns.prs syntax with `<lift E>` for a
// literal computed at run time, caveats in sturdy.prs syntax. The format is
// stable: golden tests compare it.
func Disassemble(p *Program) string {
	var b strings.Builder
	fmt.Fprintf(&b, "program %q version %d instructions %d\n", p.File, p.Version, p.Instrs)
	d := &disasm{b: &b}
	for _, in := range p.Body.Body {
		d.instr(in, 0)
	}
	return b.String()
}

type disasm struct{ b *strings.Builder }

func (d *disasm) line(at preserves.Pos, depth int, format string, args ...any) {
	loc := "-"
	if at.IsValid() {
		loc = fmt.Sprintf("%d:%d", at.Line, at.Col)
	}
	fmt.Fprintf(d.b, "%-8s%s", loc, strings.Repeat("  ", depth))
	fmt.Fprintf(d.b, format, args...)
	d.b.WriteByte('\n')
}

func binders(bs []string) string {
	if len(bs) == 0 {
		return ""
	}
	return " -> [" + strings.Join(bs, " ") + "]"
}

func (d *disasm) instr(in Instr, depth int) {
	switch x := in.(type) {
	case *Seq:
		d.line(x.At, depth, "seq")
		for _, y := range x.Body {
			d.instr(y, depth+1)
		}
	case *Assert:
		d.line(x.At, depth, "assert $%s %s", x.Target, ExprString(x.Value))
	case *Send:
		d.line(x.At, depth, "send $%s %s", x.Target, ExprString(x.Value))
	case *Handler:
		d.line(x.At, depth, "%s $%s %s%s", x.Kind, x.Target, PatString(x.Pat), binders(x.Binders))
		d.instr(x.Body, depth+1)
	case *OnStop:
		d.line(x.At, depth, "on-stop")
		d.instr(x.Body, depth+1)
	case *Let:
		d.line(x.At, depth, "let %s%s = %s", PatString(x.Pat), binders(x.Binders), ExprString(x.Expr))
	case *Cond:
		d.line(x.At, depth, "if $%s =~ %s%s", x.Var, PatString(x.Pat), binders(x.Binders))
		d.instr(x.Then, depth+1)
		d.line(x.Else.At, depth, "else")
		for _, y := range x.Else.Body {
			d.instr(y, depth+1)
		}
	default:
		d.line(in.Pos(), depth, "?%T", in)
	}
}

// ExprString renders a value expression in script syntax. Caveats inside
// an attenuation are sturdy.prs data and print as plain Preserves text (so
// `<_>` is the discard pattern), with `$x` marking a substituted variable.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e, false)
	return b.String()
}

// list writes open, then each(i) for every i < n separated by sep, then
// close: the shape of every compound the disassembler prints.
func list(b *strings.Builder, open, sep, close string, n int, each func(i int)) {
	b.WriteString(open)
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		each(i)
	}
	b.WriteString(close)
}

func writeExpr(b *strings.Builder, e Expr, raw bool) {
	switch x := e.(type) {
	case *Const:
		if raw {
			b.WriteString(preserves.FormatText(x.Value))
		} else {
			writeValue(b, x.Value)
		}
	case *Ref:
		b.WriteString("$" + x.Name)
	case *MkRecord:
		b.WriteByte('<')
		writeExpr(b, x.Label, raw)
		for _, f := range x.Fields {
			b.WriteByte(' ')
			writeExpr(b, f, raw)
		}
		b.WriteByte('>')
	case *MkSeq:
		list(b, "[", " ", "]", len(x.Elems), func(i int) { writeExpr(b, x.Elems[i], raw) })
	case *MkSet:
		list(b, "#{", " ", "}", len(x.Elems), func(i int) { writeExpr(b, x.Elems[i], raw) })
	case *MkDict:
		list(b, "{", ", ", "}", len(x.Keys), func(i int) {
			writeExpr(b, x.Keys[i], raw)
			b.WriteString(": ")
			writeExpr(b, x.Vals[i], raw)
		})
	case *MkAttenuate:
		b.WriteString("<* $" + x.Var + " ")
		writeExpr(b, x.Caveats, true)
		b.WriteByte('>')
	case *Call:
		b.WriteString(x.Builtin.Name)
		for _, a := range x.Args {
			b.WriteByte(' ')
			writeExpr(b, a, raw)
		}
	default:
		fmt.Fprintf(b, "?%T", e)
	}
}

// writeValue prints a constant in script syntax: symbols that the front end
// would read as sigils get the `=` escape, everything else is Preserves text.
func writeValue(b *strings.Builder, v preserves.Value) {
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Symbol:
		s := string(x)
		if s == "_" || s == "*" || (s != "" && strings.ContainsRune("$?=", rune(s[0]))) {
			b.WriteByte('=')
		}
		b.WriteString(preserves.FormatText(x))
	case *preserves.Record:
		b.WriteByte('<')
		writeValue(b, x.Label)
		for _, f := range x.Fields {
			b.WriteByte(' ')
			writeValue(b, f)
		}
		b.WriteByte('>')
	case preserves.Sequence:
		list(b, "[", " ", "]", len(x), func(i int) { writeValue(b, x[i]) })
	case *preserves.Set:
		list(b, "#{", " ", "}", x.Len(), func(i int) { writeValue(b, x.Elems()[i]) })
	case *preserves.Dictionary:
		list(b, "{", ", ", "}", x.Len(), func(i int) {
			en := x.Entries()[i]
			writeValue(b, en.Key)
			b.WriteString(": ")
			writeValue(b, en.Value)
		})
	default:
		b.WriteString(preserves.FormatText(x))
	}
}

// PatString renders a pattern expression.
func PatString(p Pat) string {
	var b strings.Builder
	writePat(&b, p)
	return b.String()
}

func writePat(b *strings.Builder, p Pat) {
	switch x := p.(type) {
	case *PConst:
		b.WriteString(preserves.FormatText(pattern.ToValue(x.Pattern)))
	case *PLift:
		b.WriteString("<lift ")
		writeExpr(b, x.Value, false)
		b.WriteByte('>')
	case *PBind:
		b.WriteString("<bind ")
		writePat(b, x.Sub)
		b.WriteByte('>')
	case *PRec:
		b.WriteString("<group <rec ")
		writeExpr(b, x.Label, false)
		writeGroup(b, "> {", x.Fields, func(i int) string { return fmt.Sprint(i) })
	case *PArr:
		writeGroup(b, "<group <arr> {", x.Items, func(i int) string { return fmt.Sprint(i) })
	case *PDict:
		writeGroup(b, "<group <dict> {", x.Vals, func(i int) string { return preserves.FormatText(x.Keys[i]) })
	default:
		fmt.Fprintf(b, "?%T", p)
	}
}

// writeGroup writes the entries of a group pattern, key(i) naming the i-th
// of ps, and closes the group.
func writeGroup(b *strings.Builder, open string, ps []Pat, key func(i int) string) {
	list(b, open, ", ", "}>", len(ps), func(i int) {
		b.WriteString(key(i))
		b.WriteString(": ")
		writePat(b, ps[i])
	})
}
