// Package compile turns a parsed script (package script's AST) into an
// instruction tree for package script/vm.
//
// # Design
//
// Compilation is a single pass over the AST that does three things the AST
// does not:
//
//   - It resolves the active-target register (services spec §4.2–4.4). The
//     register is purely compile-time: `$x INSTR` compiles INSTR with target
//     x and outer target equal to the previous target, `=~` tests the
//     variable named by the current target and compiles both branches with
//     the outer target. Every Assert, Send and Handler instruction
//     therefore names its target variable explicitly, and the VM never tracks
//     a register.
//   - It folds constants. Value expressions without variables become Const,
//     patterns without variables become a ready-made pattern.Pattern (PConst),
//     so the common configuration script (all constants) evaluates without
//     allocating.
//   - It lowers caveats to value expressions producing their sturdy.prs form
//     (`<rewrite P T>`, `<reject P>`, `<or [...]>`), with script variables
//     substituted as `<lit $x>` and rewrite captures as `<ref n>`. The VM
//     evaluates them like any other value and hands the result to
//     caveat.FromValue.
//
// With Options.Positions, constants are stripped of the reader's wrappers
// once, here, and their places remembered in the side table of package
// preserves (constRemembering); the VM does the same for what it builds,
// so scripts assert plain values that still know where they were written.
//
// The front end (package script) has already reported every static error, so
// compilation itself cannot fail; CompileFile returns the front end's errors.
// Every instruction and every expression that can fail at run time carries
// its source position. Disassemble prints a tree in a stable text form used
// by golden tests and by debugging flags.
package compile

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

// DefaultTarget is the target variable at the start of every file.
const DefaultTarget = "config"

// Options tunes compilation. The zero value is the default.
type Options struct {
	// Positions keeps the source positions of the values a script asserts
	// and sends, so a service rejecting a value can say where in which
	// script it came from (services spec §0). The values stay plain: every
	// constant compound, and every compound the VM builds, is remembered
	// in the position side table of package preserves (preserves.PosOf,
	// preserves.ItemPos) with its own position and its items'. Without
	// the option nothing is remembered and nothing is paid.
	Positions bool
}

// CompileFile parses and compiles one script file. On error it returns a
// script.ErrorList holding every error (Preserves syntax errors included);
// the returned program is then nil.
func CompileFile(file string, src []byte) (*Program, error) {
	return CompileFileOptions(file, src, Options{})
}

// CompileFileOptions is CompileFile with options.
//
// It compiles each top-level instruction as the parser hands it over
// (script.ParseFileEach), so that a big file's tokens and syntax tree are
// never live whole beside its program (issue 28: the peak while loading a
// config file of 300,000 facts was the reader's annotated values, 300 B
// a fact). The program is the one Compile makes of ParseFile's tree.
func CompileFileOptions(file string, src []byte, opts Options) (*Program, error) {
	p, c := newCompiler(file, opts)
	at := preserves.Pos{File: file, Line: 1, Col: 1}
	var body []Instr
	f, errs := script.ParseFileEach(file, src, func(in script.Instr) {
		if body == nil {
			at = in.Pos()
		}
		body = append(body, c.instr(in, DefaultTarget, DefaultTarget))
	})
	if len(errs) > 0 {
		return nil, errs
	}
	c.n++ // the top-level Seq, as block counts it
	s := c.seqs.New()
	s.At, s.Body = at, c.instrs.Slice(len(body))
	if len(body) == 0 {
		s.Body = []Instr{}
	}
	copy(s.Body, body)
	p.Warnings = f.Warnings
	return c.finish(p, s), nil
}

// Compile compiles a parsed file. The file must be free of errors.
func Compile(f *script.File) *Program { return CompileOptions(f, Options{}) }

// CompileOptions is Compile with options.
func CompileOptions(f *script.File, opts Options) *Program {
	p, c := newCompiler(f.Name, opts)
	p.Warnings = f.Warnings
	return c.finish(p, c.block(f.Body, preserves.Pos{File: f.Name, Line: 1, Col: 1}, DefaultTarget, DefaultTarget))
}

// newCompiler returns an empty program for file and its compiler.
func newCompiler(file string, opts Options) (*Program, *compiler) {
	p := &Program{File: file, Version: Version, Positions: opts.Positions}
	c := &compiler{pos: opts.Positions}
	if opts.Positions {
		// The program's Consts own its constants: their positions live
		// as long as it does, on one weak pointer.
		p.Consts = &Constants{owned: preserves.NewOwned()}
		c.owner = p.Consts.owned.Owner()
	}
	return p, c
}

// finish completes p with its top-level body.
func (c *compiler) finish(p *Program, body *Seq) *Program {
	p.Body = body
	p.Instrs = c.n
	c.owner.Compact()
	return p
}

type compiler struct {
	arena
	n     int             // instructions emitted
	pos   bool            // Options.Positions, switched off inside caveats
	owner preserves.Owner // with Options.Positions, the program's Consts
}

func (c *compiler) block(body []script.Instr, at preserves.Pos, target, outer string) *Seq {
	c.n++
	s := c.seqs.New()
	s.At, s.Body = at, c.instrs.Slice(len(body))
	if len(body) > 0 {
		s.At = body[0].Pos()
	} else {
		s.Body = []Instr{}
	}
	for i, in := range body {
		s.Body[i] = c.instr(in, target, outer)
	}
	return s
}

func (c *compiler) instr(in script.Instr, target, outer string) Instr {
	if in == nil {
		// Only a file with errors has missing instructions; keep the
		// tree well-formed anyway.
		c.n++
		return &Seq{}
	}
	switch x := in.(type) {
	case *script.Block:
		s := c.block(x.Body, x.At, target, outer)
		s.At = x.At
		return s
	case *script.Retarget:
		return c.instr(x.Body, x.Var, target)
	case *script.Assert:
		c.n++
		a := c.asserts.New()
		a.At, a.Target, a.Value = x.At, target, c.value(x.Value)
		return a
	case *script.Send:
		c.n++
		sd := c.sends.New()
		sd.At, sd.Target, sd.Value = x.At, target, c.value(x.Value)
		return sd
	case *script.During:
		return c.handler(During, x.At, x.Pat, x.Body, target, outer)
	case *script.OnMessage:
		return c.handler(OnMessage, x.At, x.Pat, x.Body, target, outer)
	case *script.OnStop:
		c.n++
		return &OnStop{At: x.At, Body: c.instr(x.Body, target, outer)}
	case *script.Let:
		c.n++
		l := c.lets.New()
		l.At, l.Pat, l.Binders, l.Expr = x.At, c.pattern(x.Pat), c.bindersOf(x.Pat), c.value(x.Expr)
		l.PatSrc = x.PatSrc
		return l
	case *script.Cond:
		c.n++
		at := x.At
		if len(x.Else) > 0 {
			at = x.Else[0].Pos()
		}
		k := c.conds.New()
		k.At, k.Var, k.Pat, k.Binders = x.At, target, c.pattern(x.Pat), c.bindersOf(x.Pat)
		k.Then = c.instr(x.Then, outer, outer)
		k.Else = c.block(x.Else, at, outer, outer)
		return k
	}
	// Unreachable for ASTs built by package script; an empty Seq keeps the
	// tree well-formed for hand-built ones.
	c.n++
	return &Seq{At: in.Pos()}
}

// handler compiles `?` and `??`: the pattern, its binders and the body, on
// target.
func (c *compiler) handler(kind HandlerKind, at preserves.Pos, pat script.Expr, body script.Instr, target, outer string) *Handler {
	c.n++
	h := c.handlers.New()
	h.At, h.Kind, h.Target = at, kind, target
	h.Pat, h.Binders, h.Body = c.pattern(pat), c.bindersOf(pat), c.instr(body, target, outer)
	return h
}

// ---------------------------------------------------------------------------
// Values
//
// Each expression is converted once: isConst decides, without building
// anything, whether a whole sub-tree folds into one constant; if not, the
// node is built from its children, and only those children are considered
// again.

func (c *compiler) value(e script.Expr) Expr {
	if isConst(e) {
		if c.pos {
			return c.konst(e.Pos(), c.constRemembering(e))
		}
		return c.konst(e.Pos(), c.constValue(e))
	}
	switch x := e.(type) {
	case *script.Var:
		return c.ref(x.At, x.Name)
	case *script.RecordExpr:
		return c.mkRecord(x.At, c.value(x.Label), c.values(x.Fields))
	case *script.SeqExpr:
		return c.mkSeq(x.At, c.values(x.Elems))
	case *script.SetExpr:
		elems := c.values(x.Elems)
		if vs, ok := c.consts(elems); ok {
			return c.konst(x.At, preserves.NewSet(vs...))
		}
		return &MkSet{At: x.At, Elems: elems}
	case *script.DictExpr:
		keys := c.exprs.Slice(len(x.Entries))
		vals := c.exprs.Slice(len(x.Entries))
		for i, en := range x.Entries {
			keys[i], vals[i] = c.value(en.Key), c.value(en.Value)
		}
		return c.mkDict(x.At, keys, vals)
	case *script.Attenuate:
		return c.attenuate(x)
	case *script.CallExpr:
		return &Call{At: x.At, Builtin: x.Builtin, Args: c.values(x.Args)}
	}
	return c.konst(e.Pos(), preserves.Sequence{})
}

// isConst reports whether e mentions no variable: a literal, or a compound
// of constants (most of a typical script).
func isConst(e script.Expr) bool {
	switch x := e.(type) {
	case *script.Lit:
		return true
	case *script.RecordExpr:
		return isConst(x.Label) && all(x.Fields, isConst)
	case *script.SeqExpr:
		return all(x.Elems, isConst)
	case *script.SetExpr:
		return all(x.Elems, isConst)
	case *script.DictExpr:
		for _, en := range x.Entries {
			if !isConst(en.Key) || !isConst(en.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// all reports whether every expression of es satisfies ok.
func all(es []script.Expr, ok func(script.Expr) bool) bool {
	for _, e := range es {
		if !ok(e) {
			return false
		}
	}
	return true
}

// constValue builds the value of an expression for which isConst holds,
// without intermediate nodes.
func (c *compiler) constValue(e script.Expr) preserves.Value {
	switch x := e.(type) {
	case *script.Lit:
		return x.Value
	case *script.RecordExpr:
		r := c.records.New()
		r.Label = c.constValue(x.Label)
		r.Fields = c.constValues(x.Fields)
		return r
	case *script.SeqExpr:
		return preserves.Sequence(c.constValues(x.Elems))
	case *script.SetExpr:
		return preserves.NewSet(c.constValues(x.Elems)...)
	case *script.DictExpr:
		es := make([]preserves.DictEntry, len(x.Entries))
		for i, en := range x.Entries {
			es[i] = preserves.DictEntry{Key: c.constValue(en.Key), Value: c.constValue(en.Value)}
		}
		return preserves.NewDictionary(es...)
	}
	return nil
}

func (c *compiler) constValues(es []script.Expr) []preserves.Value {
	out := c.vals.Slice(len(es))
	for i, e := range es {
		out[i] = c.constValue(e)
	}
	return out
}

// constRemembering is constValue for Options.Positions: the value is built
// plain, and each of its compounds is remembered in the position side table
// (preserves.Remember) with its own position and its items', owned by the
// program (which holds the constant as long as it lives).
func (c *compiler) constRemembering(e script.Expr) preserves.Value {
	switch x := e.(type) {
	case *script.Lit:
		if x.Src != nil {
			return c.owner.StripRemembering(x.Src)
		}
		return x.Value
	case *script.RecordExpr:
		items := make([]preserves.Pos, 1+len(x.Fields))
		items[0] = x.Label.Pos()
		fs := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			fs[i], items[i+1] = c.constRemembering(f), f.Pos()
		}
		r := preserves.NewRecord(c.constRemembering(x.Label), fs...)
		c.owner.Remember(r, x.At, items)
		return r
	case *script.SeqExpr:
		fs, ps := c.constsRemembering(x.Elems)
		c.owner.Remember(preserves.Sequence(fs), x.At, ps)
		return preserves.Sequence(fs)
	case *script.SetExpr:
		fs, ps := c.constsRemembering(x.Elems)
		return c.owner.NewSetAt(x.At, fs, ps)
	case *script.DictExpr:
		es := make([]preserves.DictEntry, len(x.Entries))
		kps := make([]preserves.Pos, len(x.Entries))
		vps := make([]preserves.Pos, len(x.Entries))
		for i, en := range x.Entries {
			es[i] = preserves.DictEntry{Key: c.constRemembering(en.Key), Value: c.constRemembering(en.Value)}
			kps[i], vps[i] = en.Key.Pos(), en.Value.Pos()
		}
		return c.owner.NewDictionaryAt(x.At, es, kps, vps)
	}
	return nil
}

func (c *compiler) constsRemembering(es []script.Expr) ([]preserves.Value, []preserves.Pos) {
	vs := make([]preserves.Value, len(es))
	ps := make([]preserves.Pos, len(es))
	for i, e := range es {
		vs[i], ps[i] = c.constRemembering(e), e.Pos()
	}
	return vs, ps
}

func (c *compiler) values(es []script.Expr) []Expr {
	out := c.exprs.Slice(len(es))
	for i, e := range es {
		out[i] = c.value(e)
	}
	return out
}

// consts returns the values of es if every one is a Const.
func (c *compiler) consts(es []Expr) ([]preserves.Value, bool) {
	for _, e := range es {
		if _, ok := e.(*Const); !ok {
			return nil, false
		}
	}
	if len(es) == 0 {
		return []preserves.Value{}, true
	}
	vs := c.vals.Slice(len(es))
	for i, e := range es {
		vs[i] = e.(*Const).Value
	}
	return vs, true
}

func (c *compiler) mkRecord(at preserves.Pos, label Expr, fields []Expr) Expr {
	if l, ok := label.(*Const); ok {
		if fs, ok := c.consts(fields); ok {
			return c.konst(at, preserves.NewRecord(l.Value, fs...))
		}
	}
	r := c.mkRecs.New()
	r.At, r.Label, r.Fields = at, label, fields
	return r
}

func (c *compiler) mkSeq(at preserves.Pos, elems []Expr) Expr {
	if vs, ok := c.consts(elems); ok {
		return c.konst(at, preserves.Sequence(vs))
	}
	s := c.mkSeqs.New()
	s.At, s.Elems = at, elems
	return s
}

func (c *compiler) mkDict(at preserves.Pos, keys, vals []Expr) Expr {
	ks, ok1 := c.consts(keys)
	vs, ok2 := c.consts(vals)
	if ok1 && ok2 {
		es := make([]preserves.DictEntry, len(ks))
		for i := range ks {
			es[i] = preserves.DictEntry{Key: ks[i], Value: vs[i]}
		}
		return c.konst(at, preserves.NewDictionary(es...))
	}
	d := c.mkDicts.New()
	d.At, d.Keys, d.Vals = at, keys, vals
	return d
}

func (c *compiler) sym(s string) Expr { return c.konst(preserves.Pos{}, preserves.Symbol(s)) }

// rec builds `<label fields...>` with a symbol label.
func (c *compiler) rec(at preserves.Pos, label string, fields ...Expr) Expr {
	return c.mkRecord(at, c.sym(label), fields)
}

// ---------------------------------------------------------------------------
// Patterns

func (c *compiler) pattern(e script.Expr) Pat {
	if isConstPat(e) {
		if p, ok := c.constPattern(e); ok {
			return c.pconst(e.Pos(), p)
		}
	}
	switch x := e.(type) {
	case *script.Discard:
		return c.pconst(x.At, pattern.Discard{})
	case *script.Bind:
		sub := c.pattern(x.Pat)
		if k, ok := sub.(*PConst); ok {
			return c.pconst(x.At, bindOf(k.Pattern))
		}
		b := c.pbinds.New()
		b.At, b.Sub = x.At, sub
		return b
	case *script.Lit:
		p, ok := c.lift(x.Value)
		if !ok {
			l := c.plifts.New()
			l.At, l.Value = x.At, c.konst(x.At, x.Value)
			return l
		}
		return c.pconst(x.At, p)
	case *script.Var:
		l := c.plifts.New()
		l.At, l.Value = x.At, c.ref(x.At, x.Name)
		return l
	case *script.Attenuate:
		return &PLift{At: x.At, Value: c.attenuate(x)}
	case *script.RecordExpr:
		label := c.value(x.Label)
		fields := c.pats.Slice(len(x.Fields))
		for i, f := range x.Fields {
			fields[i] = c.pattern(f)
		}
		if l, ok := label.(*Const); ok {
			if ps, ok := c.constPats(fields); ok {
				return c.pconst(x.At, c.group(pattern.RecType{Label: l.Value}, ps))
			}
		}
		r := c.precs.New()
		r.At, r.Label, r.Fields = x.At, label, fields
		return r
	case *script.SeqExpr:
		items := c.pats.Slice(len(x.Elems))
		for i, f := range x.Elems {
			items[i] = c.pattern(f)
		}
		if ps, ok := c.constPats(items); ok {
			return c.pconst(x.At, c.group(pattern.ArrType{}, ps))
		}
		a := c.parrs.New()
		a.At, a.Items = x.At, items
		return a
	case *script.DictExpr:
		d := c.pdicts.New()
		d.At, d.Keys, d.Vals = x.At, c.vals.Slice(len(x.Entries)), c.pats.Slice(len(x.Entries))
		for i, en := range x.Entries {
			d.Keys[i] = litValue(en.Key)
			d.Vals[i] = c.pattern(en.Value)
		}
		if ps, ok := c.constPats(d.Vals); ok {
			es := make([]pattern.Entry, len(ps))
			for i := range ps {
				es[i] = pattern.Entry{Key: d.Keys[i], Pattern: ps[i]}
			}
			return c.pconst(x.At, pattern.Dict(es...))
		}
		return d
	}
	return c.pconst(e.Pos(), pattern.Discard{})
}

// Pattern compiles a pattern read on its own (script.ParsePattern) to a
// dataspace pattern, as the script's handlers compile theirs: the one
// pattern syntax of scripts and of the command line. Outside a script
// there is no environment, so a variable reference (or an attenuation of
// one) is an error: a *script.Error of class script.ErrScript at its
// position.
func Pattern(e script.Expr) (pattern.Pattern, error) {
	if v := firstVariable(e); v != nil {
		return nil, &script.Error{Pos: v.Pos(), Msg: "a variable has no value in a pattern outside a script", Err: script.ErrScript}
	}
	var c compiler
	p, ok := c.constPattern(e)
	if !ok {
		return nil, &script.Error{Pos: e.Pos(), Msg: "sets are not allowed in a pattern", Err: script.ErrScript}
	}
	return p, nil
}

// firstVariable is the first node of the pattern e, in pre-order, that
// needs an environment, or nil.
func firstVariable(e script.Expr) script.Expr {
	switch x := e.(type) {
	case *script.Discard, *script.Lit:
		return nil
	case *script.Bind:
		return firstVariable(x.Pat)
	case *script.RecordExpr:
		if !isConst(x.Label) {
			return x.Label
		}
		return firstIn(x.Fields)
	case *script.SeqExpr:
		return firstIn(x.Elems)
	case *script.DictExpr:
		for _, en := range x.Entries {
			if v := firstVariable(en.Value); v != nil {
				return v
			}
		}
		return nil
	}
	return e
}

func firstIn(es []script.Expr) script.Expr {
	for _, e := range es {
		if v := firstVariable(e); v != nil {
			return v
		}
	}
	return nil
}

// captureAny is `<bind <_>>` (a bare `?x`), the most common pattern of all,
// boxed once: patterns are immutable values, so every use can share it.
var captureAny pattern.Pattern = pattern.Bind{Pattern: pattern.Discard{}}

func bindOf(sub pattern.Pattern) pattern.Pattern {
	if _, ok := sub.(pattern.Discard); ok {
		return captureAny
	}
	return pattern.Bind{Pattern: sub}
}

// isConstPat reports whether the pattern e mentions no variable, so that
// constPattern can build it in one go.
func isConstPat(e script.Expr) bool { return firstVariable(e) == nil }

// constPattern builds the pattern of an expression for which isConstPat
// holds, without intermediate nodes. It fails only when a literal holds a
// set, which no pattern can match literally.
func (c *compiler) constPattern(e script.Expr) (pattern.Pattern, bool) {
	switch x := e.(type) {
	case *script.Discard:
		return pattern.Discard{}, true
	case *script.Bind:
		sub, ok := c.constPattern(x.Pat)
		if !ok {
			return nil, false
		}
		return bindOf(sub), true
	case *script.Lit:
		return c.lift(x.Value)
	case *script.RecordExpr:
		fs, ok := c.constPatterns(x.Fields)
		if !ok {
			return nil, false
		}
		return c.group(pattern.RecType{Label: c.constValue(x.Label)}, fs), true
	case *script.SeqExpr:
		fs, ok := c.constPatterns(x.Elems)
		if !ok {
			return nil, false
		}
		return c.group(pattern.ArrType{}, fs), true
	case *script.DictExpr:
		es := make([]pattern.Entry, len(x.Entries))
		for i, en := range x.Entries {
			sub, ok := c.constPattern(en.Value)
			if !ok {
				return nil, false
			}
			es[i] = pattern.Entry{Key: litValue(en.Key), Pattern: sub}
		}
		return pattern.Dict(es...), true
	}
	return nil, false
}

func (c *compiler) constPatterns(es []script.Expr) ([]pattern.Pattern, bool) {
	out := c.patterns.Slice(len(es))
	for i, e := range es {
		p, ok := c.constPattern(e)
		if !ok {
			return nil, false
		}
		out[i] = p
	}
	return out, true
}

// group is pattern.Rec or pattern.Arr (by t) of items, its entries carved
// from the arena.
func (c *compiler) group(t pattern.GroupType, items []pattern.Pattern) pattern.Group {
	es := c.entries.Slice(len(items))
	for i, p := range items {
		es[i] = pattern.Entry{Key: preserves.Int(i), Pattern: p}
	}
	if es == nil {
		es = []pattern.Entry{}
	}
	return pattern.Group{Type: t, Entries: es}
}

// lift is pattern.Lift, its group entries carved from the arena
// (literal patterns are the bulk of a script's patterns); false when v holds
// a set. v is a literal's plain value (script.Lit.Value).
func (c *compiler) lift(v preserves.Value) (pattern.Pattern, bool) {
	switch x := v.(type) {
	case *preserves.Record:
		es, ok := c.liftItems(x.Fields)
		if !ok {
			return nil, false
		}
		return pattern.Group{Type: pattern.RecType{Label: x.Label}, Entries: es}, true
	case preserves.Sequence:
		es, ok := c.liftItems(x)
		if !ok {
			return nil, false
		}
		return pattern.Group{Type: pattern.ArrType{}, Entries: es}, true
	case *preserves.Dictionary:
		es := c.entries.Slice(x.Len())
		if es == nil {
			es = []pattern.Entry{}
		}
		for i, e := range x.Entries() {
			p, ok := c.lift(e.Value)
			if !ok {
				return nil, false
			}
			es[i] = pattern.Entry{Key: e.Key, Pattern: p}
		}
		return pattern.Group{Type: pattern.DictType{}, Entries: es}, true
	case *preserves.Set:
		return nil, false
	default:
		return pattern.Lit{Value: x}, true
	}
}

func (c *compiler) liftItems(vs []preserves.Value) ([]pattern.Entry, bool) {
	es := c.entries.Slice(len(vs))
	if es == nil {
		es = []pattern.Entry{}
	}
	for i, f := range vs {
		p, ok := c.lift(f)
		if !ok {
			return nil, false
		}
		es[i] = pattern.Entry{Key: preserves.Int(i), Pattern: p}
	}
	return es, true
}

// constPats returns the patterns of ps if every one is a PConst.
func (c *compiler) constPats(ps []Pat) ([]pattern.Pattern, bool) {
	for _, p := range ps {
		if _, ok := p.(*PConst); !ok {
			return nil, false
		}
	}
	out := c.patterns.Slice(len(ps))
	for i, p := range ps {
		out[i] = p.(*PConst).Pattern
	}
	return out, true
}

func litValue(e script.Expr) preserves.Value {
	if l, ok := e.(*script.Lit); ok {
		return l.Value
	}
	return preserves.Symbol("")
}

// ---------------------------------------------------------------------------
// Attenuation and caveats (sturdy.prs)

func (c *compiler) attenuate(a *script.Attenuate) Expr {
	// Caveats are capability machinery, not data a service reports on:
	// build them without position wrappers.
	saved := c.pos
	c.pos = false
	defer func() { c.pos = saved }()
	name := ""
	if v, ok := a.Target.(*script.Var); ok {
		name = v.Name
	}
	return &MkAttenuate{At: a.At, Var: name, Caveats: c.caveats(a.At, a.Caveats)}
}

func (c *compiler) caveats(at preserves.Pos, cs []script.Caveat) Expr {
	out := make([]Expr, 0, len(cs))
	for _, cv := range cs {
		out = append(out, c.caveat(cv))
	}
	return c.mkSeq(at, out)
}

func (c *compiler) caveat(cv script.Caveat) Expr {
	switch x := cv.(type) {
	case *script.Rewrite:
		return c.rewrite(x)
	case *script.Reject:
		return c.rec(x.At, "reject", c.spat(x.Pat))
	case *script.Or:
		// A one-alternative <or> is the same as its alternative
		// (services spec §4.8).
		if len(x.Alts) == 1 {
			return c.rewrite(x.Alts[0])
		}
		alts := make([]Expr, len(x.Alts))
		for i, r := range x.Alts {
			alts[i] = c.rewrite(r)
		}
		return c.rec(x.At, "or", c.mkSeq(x.At, alts))
	}
	return c.rec(cv.Pos(), "or", &Const{Value: preserves.Sequence{}})
}

func (c *compiler) rewrite(r *script.Rewrite) Expr {
	if r.Accept {
		// <accept P> is <rewrite <bind P> <ref 0>>.
		return c.rec(r.At, "rewrite", c.rec(r.At, "bind", c.spat(r.Pat)), c.rec(r.At, "ref", &Const{Value: preserves.Int(0)}))
	}
	return c.rec(r.At, "rewrite", c.spat(r.Pat), c.stmpl(r.Template))
}

// spat lowers a pattern to a sturdy.prs Pattern expression. Unlike dataspace
// patterns these have exact arity (services spec §4.8).
func (c *compiler) spat(e script.Expr) Expr {
	switch x := e.(type) {
	case *script.Discard:
		return c.rec(x.At, "_")
	case *script.Bind:
		return c.rec(x.At, "bind", c.spat(x.Pat))
	case *script.Lit:
		return c.rec(x.At, "lit", c.konst(x.At, x.Value))
	case *script.Var:
		return c.rec(x.At, "lit", &Ref{At: x.At, Name: x.Name})
	case *script.Attenuate:
		return c.rec(x.At, "lit", c.attenuate(x))
	case *script.RecordExpr, *script.SeqExpr, *script.DictExpr:
		return c.sturdyCompound(x, c.spat)
	case *script.SturdyPat:
		// Read structurally: the value already is the sturdy.prs form.
		return c.value(x.Value)
	}
	return c.rec(e.Pos(), "_")
}

// sturdyCompound lowers a record, sequence or dictionary expression to the
// sturdy.prs `<rec …>`/`<arr …>`/`<dict …>` form shared by caveat patterns
// and templates, lowering the parts with sub (spat or stmpl).
func (c *compiler) sturdyCompound(e script.Expr, sub func(script.Expr) Expr) Expr {
	switch x := e.(type) {
	case *script.RecordExpr:
		fs := make([]Expr, len(x.Fields))
		for i, f := range x.Fields {
			fs[i] = sub(f)
		}
		return c.rec(x.At, "rec", c.value(x.Label), c.mkSeq(x.At, fs))
	case *script.SeqExpr:
		fs := make([]Expr, len(x.Elems))
		for i, f := range x.Elems {
			fs[i] = sub(f)
		}
		return c.rec(x.At, "arr", c.mkSeq(x.At, fs))
	case *script.DictExpr:
		keys := make([]Expr, len(x.Entries))
		vals := make([]Expr, len(x.Entries))
		for i, en := range x.Entries {
			keys[i] = c.konst(en.Key.Pos(), litValue(en.Key))
			vals[i] = sub(en.Value)
		}
		return c.rec(x.At, "dict", c.mkDict(x.At, keys, vals))
	}
	panic("sturdyCompound: not a compound expression")
}

// stmpl lowers a rewrite template to a sturdy.prs Template expression.
func (c *compiler) stmpl(e script.Expr) Expr {
	switch x := e.(type) {
	case *script.Lit:
		return c.rec(x.At, "lit", c.konst(x.At, x.Value))
	case *script.Var:
		return c.rec(x.At, "lit", &Ref{At: x.At, Name: x.Name})
	case *script.Capture:
		return c.rec(x.At, "ref", c.konst(x.At, preserves.Int(x.Index)))
	case *script.Attenuate:
		if cp, ok := x.Target.(*script.Capture); ok {
			return c.rec(x.At, "attenuate", c.rec(cp.At, "ref", &Const{Value: preserves.Int(cp.Index)}), c.caveats(x.At, x.Caveats))
		}
		return c.rec(x.At, "lit", c.attenuate(x))
	case *script.RecordExpr, *script.SeqExpr, *script.DictExpr:
		return c.sturdyCompound(x, c.stmpl)
	}
	return c.rec(e.Pos(), "lit", &Const{Value: preserves.Sequence{}})
}
