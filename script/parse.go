package script

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/preserves"
)

// ParseValues turns the top-level values of one script file into a File,
// collecting every error (the File is usable even when errors are returned).
// Values may carry positions (*preserves.Annotated, as produced by the text
// reader with Positions set) or be hand-made.
func ParseValues(file string, vals []preserves.Value) (*File, ErrorList) {
	p := &parser{file: file}
	p.presize(len(vals))
	return p.file1(vals), p.errs
}

// ParsePattern reads v as one pattern of the script language (services
// spec §4.7: `_` discards, `?name` and `<?name P>` bind, `=sym` is the
// literal symbol sym, record labels and dictionary keys are literal, sets
// are refused) outside any script, as the command line's PATTERN
// arguments are. A `$var` is read as in a script; compile.Pattern, which
// has no environment, refuses it.
func ParsePattern(file string, v preserves.Value) (Expr, ErrorList) {
	p := &parser{file: file}
	e := p.expr(v, modePattern)
	p.errs.Sort()
	return e, p.errs
}

// file1 parses a file's top-level values: its leading `dialect`
// directives, then its instructions.
func (p *parser) file1(vals []preserves.Value) *File {
	i := 0
	for i < len(vals) && isDirective(vals[i]) {
		i = p.directive(vals, i)
	}
	f := &File{Name: p.file, Body: p.block(vals[i:], true), Dialect: p.dialect}
	if i < len(vals) {
		p.finishDialect(vals[i])
	}
	p.errs.Sort()
	p.warns.Sort()
	f.Warnings = p.warns
	return f
}

type parser struct {
	file string
	arena
	errs  ErrorList
	warns ErrorList
	// dialect is set by a `dialect NAME` directive.
	dialect string
	// caveats are the file's caveat patterns read in this dialect, for
	// the dialect warnings (finishDialect).
	caveats []caveatUse
	// grouping is set by Group: blocks are not parsed inside, a
	// conditional ends after its THEN, and blockToks records the index of
	// every block in instruction position.
	grouping  bool
	blockToks []int
	// truncated is set when the token stream was cut short by a Preserves
	// syntax error; "missing operand" errors at the end of the top level are
	// then artefacts of the cut and are not reported.
	truncated bool
}

func (p *parser) lit(at preserves.Pos, v, src preserves.Value) *Lit {
	l := p.lits.New()
	l.At, l.Value, l.Src = at, v, src
	return l
}

func (p *parser) pos(v preserves.Value) preserves.Pos {
	pos := preserves.PosOf(v)
	if pos.File == "" {
		pos.File = p.file
	}
	return pos
}

func (p *parser) errorf(pos preserves.Pos, format string, args ...any) {
	p.errs.Addf(pos, format, args...)
}

// missing reports an absent operand after the token at pos, unless the top
// level was truncated by a syntax error.
func (p *parser) missing(top bool, pos preserves.Pos, format string, args ...any) {
	if top && p.truncated {
		return
	}
	p.errorf(pos, format, args...)
}

// Group returns the end (exclusive) of the instruction that starts at
// toks[i], as the parser reads it (a token that starts no instruction is a
// group of its own), and for each of its tokens whether it is a block: a
// sequence in instruction position, whose items are instructions. A
// conditional `=~ PAT THEN` ends after THEN here, though the parser gives it
// the rest of the block as ELSE. This is how `syndicate fmt` decides what
// goes on one line, so that its layout follows the grammar exactly.
func Group(toks []preserves.Value, i int) (int, []bool) {
	p := &parser{grouping: true}
	_, end := p.instr(toks, i, false)
	end = max(end, i+1)
	flags := make([]bool, end-i)
	for _, k := range p.blockToks {
		flags[k-i] = true
	}
	return end, flags
}

// block parses a token sequence (a file's top level or a `[...]`).
func (p *parser) block(toks []preserves.Value, top bool) []Instr {
	mark := len(p.stack)
	for i := 0; i < len(toks); {
		ins, next := p.instr(toks, i, top)
		if ins != nil {
			p.stack = append(p.stack, ins)
		}
		i = next
	}
	return p.popInstrs(mark)
}

func symbolOf(v preserves.Value) (string, bool) {
	s, ok := preserves.Unwrap(v).(preserves.Symbol)
	return string(s), ok
}

// render gives a short text of a token for error messages.
func render(v preserves.Value) string {
	s := preserves.FormatTextLimit(preserves.Strip(v), 40*utf8.UTFMax) // the cut below still applies
	if r := []rune(s); len(r) > 40 {
		s = string(r[:37]) + "..."
	}
	return s
}

// instr parses the instruction starting at toks[i] and returns it with the
// index of the first token after it. It returns a nil instruction (having
// recorded an error) when the tokens do not form one.
func (p *parser) instr(toks []preserves.Value, i int, top bool) (Instr, int) {
	tok := toks[i]
	pos := p.pos(tok)
	switch x := preserves.Unwrap(tok).(type) {
	case *preserves.Record, *preserves.Dictionary:
		a := p.asserts.New()
		a.At, a.Value = pos, p.expr(tok, modeValue)
		return a, i + 1
	case preserves.Sequence:
		b := p.blocks.New()
		if p.grouping {
			p.blockToks = append(p.blockToks, i)
			return b, i + 1
		}
		b.At, b.Body = pos, p.block(x, false)
		return b, i + 1
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "?" || s == "??":
			pat, ok := p.leadingPattern(toks, i, top, s, "a pattern and an instruction", "an instruction")
			if !ok {
				return nil, len(toks)
			}
			body, next := p.instr(toks, i+2, top)
			if s == "?" {
				d := p.durings.New()
				d.At, d.Pat, d.Body = pos, pat, body
				return d, next
			}
			m := p.onMsgs.New()
			m.At, m.Pat, m.Body = pos, pat, body
			return m, next
		case s == "?-":
			if i+1 >= len(toks) {
				p.missing(top, pos, "?- needs an instruction")
				return nil, i + 1
			}
			body, next := p.instr(toks, i+1, top)
			return &OnStop{At: pos, Body: body}, next
		case s == "!" || s == "+=":
			if i+1 >= len(toks) {
				p.missing(top, pos, "%s needs a value", s)
				return nil, i + 1
			}
			v := p.expr(toks[i+1], modeValue)
			if s == "!" {
				sd := p.sends.New()
				sd.At, sd.Value = pos, v
				return sd, i + 2
			}
			a := p.asserts.New()
			a.At, a.Value = pos, v
			return a, i + 2
		case s == "let":
			return p.let(toks, i, top)
		case s == "=~":
			pat, ok := p.leadingPattern(toks, i, top, s, "a pattern and an instruction", "an instruction")
			if !ok {
				return nil, len(toks)
			}
			then, next := p.instr(toks, i+2, top)
			if p.grouping {
				return nil, next // the rest of the block is instructions of its own
			}
			c := p.conds.New()
			c.At, c.Pat, c.Then, c.Else = pos, pat, then, p.block(toks[next:], top)
			return c, len(toks)
		case s == "_":
			p.errorf(pos, "discard _ is not an instruction")
			return nil, i + 1
		case s == "dialect":
			p.errorf(pos, "dialect applies to the whole file: it must come before every instruction, at the top level")
			return nil, min(i+2, len(toks))
		case s != "" && s[0] == '?':
			p.errorf(pos, "binder %s is not an instruction", s)
			return nil, i + 1
		case s != "" && s[0] == '$':
			if i+1 >= len(toks) {
				p.missing(top, pos, "%s sets the target of the next instruction, but none follows", s)
				return nil, i + 1
			}
			body, next := p.instr(toks, i+1, top)
			rt := p.retargets.New()
			rt.At, rt.Var, rt.Body = pos, s[1:], body
			return rt, next
		}
	}
	p.errorf(pos, "invalid token %s in instruction position", render(tok))
	return nil, i + 1
}

func (p *parser) let(toks []preserves.Value, i int, top bool) (Instr, int) {
	pos := p.pos(toks[i])
	pat, ok := p.leadingPattern(toks, i, top, "let", "PATTERN = EXPRESSION", "= EXPRESSION")
	if !ok {
		return nil, len(toks)
	}
	if s, ok := symbolOf(toks[i+2]); !ok || s != "=" {
		p.errorf(p.pos(toks[i+2]), "let %s must be followed by =, not %s", render(toks[i+1]), render(toks[i+2]))
		return nil, i + 3
	}
	if i+3 >= len(toks) {
		p.missing(top, p.pos(toks[i+2]), "let %s = needs an expression", render(toks[i+1]))
		return nil, i + 3
	}
	e, next := p.conv(toks, i+3, top)
	if e == nil {
		return nil, next
	}
	l := p.lets.New()
	l.At, l.Pat, l.Expr = pos, pat, e
	l.PatSrc = render(toks[i+1])
	return l, next
}

// leadingPattern reads the pattern after the keyword kw at toks[i], which
// must be followed by more (rest). A missing pattern or rest is reported as
// kw needing all or rest, and ok is false.
func (p *parser) leadingPattern(toks []preserves.Value, i int, top bool, kw, all, rest string) (pat Expr, ok bool) {
	if i+1 >= len(toks) {
		p.missing(top, p.pos(toks[i]), "%s needs %s", kw, all)
		return nil, false
	}
	pat = p.expr(toks[i+1], modePattern)
	if i+2 >= len(toks) {
		p.missing(top, p.pos(toks[i]), "%s %s needs %s", kw, render(toks[i+1]), rest)
		return nil, false
	}
	return pat, true
}

// conv parses a convenience expression (the right-hand side of let): a
// built-in and its operands, each itself a convenience expression, or one
// value.
func (p *parser) conv(toks []preserves.Value, i int, top bool) (Expr, int) {
	tok := toks[i]
	pos := p.pos(tok)
	s, ok := symbolOf(tok)
	if !ok {
		return p.expr(tok, modeValue), i + 1
	}
	b, ok := LookupBuiltin(s)
	if !ok {
		return p.expr(tok, modeValue), i + 1
	}
	n := b.Arity()
	if n == 0 {
		return &CallExpr{At: pos, Builtin: b}, i + 1
	}
	if i+n >= len(toks) {
		p.missing(top, pos, "%s needs %s", s, strings.Join(b.Operands, " and "))
		return nil, len(toks)
	}
	args := make([]Expr, n)
	next, failed := i+1, false
	for k := range n {
		if next >= len(toks) {
			p.missing(top, pos, "%s needs %s after %s", s, b.Operands[k], the(b.Operands[k-1]))
			return nil, next
		}
		args[k], next = p.conv(toks, next, top)
		failed = failed || args[k] == nil
	}
	if failed {
		return nil, next
	}
	if b.Check != nil {
		b.Check(args, p.errorf)
	}
	return &CallExpr{At: pos, Builtin: b, Args: args}, next
}

// mode says which kind of expression is being parsed.
type mode int

const (
	modeValue    mode = iota // ValueExpr: sets allowed, dictionary keys evaluated
	modePattern              // PatternExpr: binders and _ allowed, no sets, literal keys
	modeTemplate             // caveat TemplateExpr: no sets, literal keys, $x may be a capture
	modeLabel                // record label of a pattern: must come out literal
)

// tmplScope is the capture scope of a caveat rewrite template.
type tmplScope struct {
	binders []string
	// outer lists captures of enclosing rewrites, which a nested caveat's
	// template cannot reach.
	outer []string
	// label is set while parsing a record label (the "literal-enough" rule).
	label bool
}

func (p *parser) expr(v preserves.Value, m mode) Expr {
	return p.exprIn(v, m, nil)
}

func (p *parser) exprIn(v preserves.Value, m mode, sc *tmplScope) Expr {
	pos := p.pos(v)
	switch preserves.Unwrap(v).(type) {
	case *preserves.Record, preserves.Sequence, *preserves.Set, *preserves.Dictionary:
		// Most of a configuration script is plain data: take a compound
		// without sigils as one literal instead of a tree of nodes.
		if plain(v, m) {
			return p.lit(pos, p.strip(v), v)
		}
	}
	uv := preserves.Unwrap(v) // reused below: re-boxing x would allocate
	switch x := uv.(type) {
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "_":
			if m == modePattern {
				return p.discard(pos)
			}
			p.errorf(pos, "discard _ is not allowed in %s (write =_ for the symbol)", m.what())
		case s != "" && s[0] == '?':
			if m == modePattern {
				return p.bind(pos, s[1:], p.discard(pos))
			}
			p.errorf(pos, "binder %s is not allowed in %s (write =%s for the symbol)", s, m.what(), s)
		case s != "" && s[0] == '$':
			return p.varRef(pos, s[1:], m, sc)
		case s != "" && s[0] == '=':
			return p.lit(pos, preserves.Symbol(s[1:]), nil)
		default:
			return p.lit(pos, uv, nil)
		}
		return p.lit(pos, uv, nil)
	case *preserves.Record:
		if s, ok := symbolOf(x.Label); ok {
			if s == "*" {
				return p.attenuate(pos, x, m, sc)
			}
			if len(s) > 0 && s[0] == '?' && m == modePattern {
				if len(x.Fields) != 1 {
					p.errorf(pos, "binder record <%s PATTERN> must have exactly one field, not %d", s, len(x.Fields))
					return &Bind{At: pos, Name: s[1:], Pat: &Discard{At: pos}}
				}
				return p.bind(pos, s[1:], p.exprIn(x.Fields[0], m, sc))
			}
		}
		r := p.recs.New()
		r.At, r.Fields = pos, p.exprs.Slice(len(x.Fields))[:0]
		switch m {
		case modePattern:
			r.Label = p.exprIn(x.Label, modeLabel, sc)
		case modeTemplate:
			r.Label = p.exprIn(x.Label, m, &tmplScope{binders: sc.binders, outer: sc.outer, label: true})
		default:
			r.Label = p.exprIn(x.Label, m, sc)
		}
		for _, f := range x.Fields {
			r.Fields = append(r.Fields, p.exprIn(f, m, sc))
		}
		return r
	case preserves.Sequence:
		s := p.seqs.New()
		s.At, s.Elems = pos, p.exprs.Slice(len(x))[:0]
		for _, e := range x {
			s.Elems = append(s.Elems, p.exprIn(e, m, sc))
		}
		return s
	case *preserves.Set:
		if m != modeValue {
			p.errorf(pos, "sets are not allowed in %s", m.what())
		}
		s := &SetExpr{At: pos}
		for _, e := range x.Elems() {
			s.Elems = append(s.Elems, p.exprIn(e, m, sc))
		}
		return s
	case *preserves.Dictionary:
		d := p.dicts.New()
		d.At, d.Entries = pos, p.entries.Slice(x.Len())[:0]
		for _, en := range x.Entries() {
			var k Expr
			if m == modeValue {
				k = p.exprIn(en.Key, m, sc)
			} else {
				// Pattern and template dictionary keys are taken literally
				// (services spec §4.7).
				k = p.lit(p.pos(en.Key), p.strip(en.Key), nil)
			}
			d.Entries = append(d.Entries, DictEntry{Key: k, Value: p.exprIn(en.Value, m, sc)})
		}
		return d
	}
	if uv == v {
		return p.lit(pos, uv, nil)
	}
	return p.lit(pos, p.strip(v), v)
}

func (p *parser) discard(pos preserves.Pos) *Discard {
	d := p.discards.New()
	d.At = pos
	return d
}

func (p *parser) bind(pos preserves.Pos, name string, pat Expr) *Bind {
	b := p.binds.New()
	b.At, b.Name, b.Pat = pos, name, pat
	return b
}

// plain reports whether v means itself in mode m: no symbol in it carries a
// sigil, it holds no attenuation record, and (outside values) no set, whose
// rejection the structural parse reports.
func plain(v preserves.Value, m mode) bool {
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Symbol:
		s := string(x)
		return s != "_" && (s == "" || (s[0] != '$' && s[0] != '?' && s[0] != '='))
	case *preserves.Record:
		if s, ok := symbolOf(x.Label); ok && s == "*" {
			return false
		}
		if !plain(x.Label, m) {
			return false
		}
		for _, f := range x.Fields {
			if !plain(f, m) {
				return false
			}
		}
	case preserves.Sequence:
		for _, f := range x {
			if !plain(f, m) {
				return false
			}
		}
	case *preserves.Set:
		if m != modeValue {
			return false
		}
		for _, f := range x.Elems() {
			if !plain(f, m) {
				return false
			}
		}
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			if !plain(e.Key, m) || !plain(e.Value, m) {
				return false
			}
		}
	}
	return true
}

func (m mode) what() string {
	switch m {
	case modePattern:
		return "a pattern"
	case modeTemplate:
		return "a rewrite template"
	case modeLabel:
		return "a record pattern label (it must be literal)"
	}
	return "a value"
}

func (p *parser) varRef(pos preserves.Pos, name string, m mode, sc *tmplScope) Expr {
	if m == modeTemplate && sc != nil {
		for i := len(sc.binders) - 1; i >= 0; i-- {
			if sc.binders[i] != name || name == "" {
				continue
			}
			if sc.label {
				p.errorf(pos, "record label of a rewrite template must be literal-enough: $%s is a capture of the rewrite pattern", name)
			}
			return &Capture{At: pos, Name: name, Index: i}
		}
		if slices.Contains(sc.outer, name) {
			p.errorf(pos, "$%s is a capture of an enclosing rewrite and is not visible in a nested caveat", name)
		}
	}
	v := p.vars.New()
	v.At, v.Name = pos, name
	return v
}

// attenuate parses `<* $var [CAVEAT ...]>`.
func (p *parser) attenuate(pos preserves.Pos, r *preserves.Record, m mode, sc *tmplScope) Expr {
	a := &Attenuate{At: pos}
	if len(r.Fields) != 2 {
		p.errorf(pos, "attenuation <* $var [CAVEAT ...]> needs exactly two fields, not %d", len(r.Fields))
		a.Target = &Var{At: pos, Name: ""}
		return a
	}
	if s, ok := symbolOf(r.Fields[0]); ok && len(s) > 0 && s[0] == '$' {
		tm := modeValue
		if m == modeTemplate {
			tm = modeTemplate
		}
		a.Target = p.varRef(p.pos(r.Fields[0]), s[1:], tm, sc)
	} else {
		p.errorf(p.pos(r.Fields[0]), "attenuation target must be a variable reference $var, not %s", render(r.Fields[0]))
		a.Target = &Var{At: p.pos(r.Fields[0]), Name: ""}
	}
	cs, ok := preserves.Unwrap(r.Fields[1]).(preserves.Sequence)
	if !ok {
		p.errorf(p.pos(r.Fields[1]), "attenuation caveats must be a sequence [CAVEAT ...], not %s", render(r.Fields[1]))
		return a
	}
	// Captures of an enclosing rewrite are out of reach of nested caveats.
	var outer []string
	if sc != nil {
		outer = append(append(outer, sc.outer...), sc.binders...)
	}
	for _, c := range cs {
		if cv := p.caveat(c, outer, true); cv != nil {
			a.Caveats = append(a.Caveats, cv)
		}
	}
	return a
}

// caveat parses one caveat; allowOr is false inside an <or [...]>.
func (p *parser) caveat(v preserves.Value, outer []string, allowOr bool) Caveat {
	pos := p.pos(v)
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	label := ""
	if ok {
		label, _ = symbolOf(r.Label)
	}
	arity := func(n int) bool {
		if len(r.Fields) != n {
			p.errorf(pos, "caveat <%s ...> needs exactly %d field(s), not %d", label, n, len(r.Fields))
			return false
		}
		return true
	}
	switch label {
	case "or":
		if !allowOr {
			break
		}
		if !arity(1) {
			return nil
		}
		alts, ok := preserves.Unwrap(r.Fields[0]).(preserves.Sequence)
		if !ok {
			p.errorf(p.pos(r.Fields[0]), "<or ...> needs a sequence of <accept ...>/<rewrite ...>, not %s", render(r.Fields[0]))
			return nil
		}
		o := &Or{At: pos}
		for _, alt := range alts {
			c := p.caveat(alt, outer, false)
			if rw, ok := c.(*Rewrite); ok {
				o.Alts = append(o.Alts, rw)
			}
		}
		return o
	case "reject":
		if !allowOr {
			break
		}
		if !arity(1) {
			return nil
		}
		return &Reject{At: pos, Pat: p.caveatPattern(v, r.Fields[0], outer, label)}
	case "accept":
		if !arity(1) {
			return nil
		}
		pat := p.caveatPattern(v, r.Fields[0], outer, label)
		return &Rewrite{At: pos, Accept: true, Pat: pat, Binders: Binders(pat)}
	case "rewrite":
		if !arity(2) {
			return nil
		}
		pat := p.caveatPattern(v, r.Fields[0], outer, label)
		b := Binders(pat)
		t := p.exprIn(r.Fields[1], modeTemplate, &tmplScope{binders: b, outer: outer})
		return &Rewrite{At: pos, Pat: pat, Template: t, Binders: b}
	}
	if allowOr {
		p.errorf(pos, "unknown caveat %s (expected <accept P>, <rewrite P T>, <reject P> or <or [...]>)", render(v))
	} else {
		p.errorf(pos, "alternative of <or ...> must be <accept P> or <rewrite P T>, not %s", render(v))
	}
	return nil
}

// caveatPattern parses the pattern v of caveat cv, of kind reject, accept
// or rewrite, structurally under `dialect sturdy-caveats`; `$x` there names
// a script variable, and must not name a capture of an enclosing rewrite.
func (p *parser) caveatPattern(cv, v preserves.Value, outer []string, kind string) Expr {
	var e Expr
	if p.dialect == DialectSturdyCaveats {
		e = p.sturdyPattern(v)
	} else {
		p.notePattern(cv, v, kind)
		e = p.expr(v, modePattern)
	}
	if len(outer) > 0 {
		walkVars(e, func(x *Var) {
			if slices.Contains(outer, x.Name) {
				p.errorf(x.At, "$%s is a capture of an enclosing rewrite and is not visible in a nested caveat", x.Name)
			}
		})
	}
	return e
}

// walkVars calls f for each Var in e outside nested attenuations' caveats.
func walkVars(e Expr, f func(*Var)) {
	switch x := e.(type) {
	case *Var:
		f(x)
	case *Bind:
		walkVars(x.Pat, f)
	case *RecordExpr:
		walkVars(x.Label, f)
		for _, y := range x.Fields {
			walkVars(y, f)
		}
	case *SeqExpr:
		for _, y := range x.Elems {
			walkVars(y, f)
		}
	case *SetExpr:
		for _, y := range x.Elems {
			walkVars(y, f)
		}
	case *DictExpr:
		for _, en := range x.Entries {
			walkVars(en.Key, f)
			walkVars(en.Value, f)
		}
	case *Attenuate:
		walkVars(x.Target, f)
	case *SturdyPat:
		walkVars(x.Value, f)
	}
}
