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
//     the outer target. Every Assert, Send, During and OnMessage instruction
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
	// Positions keeps source positions in the values a script asserts and
	// sends: every constant sub-value, and every compound built at run
	// time, is wrapped in a *preserves.Annotated carrying its Pos (comments
	// are dropped), so a service rejecting a value can say where in which
	// script it came from (services spec §0). Equality, order, hashing and
	// pattern matching look through the wrappers; consumers that inspect
	// values must use preserves.Unwrap.
	Positions bool
}

// CompileFile parses and compiles one script file. On error it returns a
// script.ErrorList holding every error (Preserves syntax errors included);
// the returned program is then nil.
func CompileFile(file string, src []byte) (*Program, error) {
	return CompileFileOptions(file, src, Options{})
}

// CompileFileOptions is CompileFile with options.
func CompileFileOptions(file string, src []byte, opts Options) (*Program, error) {
	f, errs := script.ParseFile(file, src)
	if len(errs) > 0 {
		return nil, errs
	}
	return CompileOptions(f, opts), nil
}

// Compile compiles a parsed file. The file must be free of errors.
func Compile(f *script.File) *Program { return CompileOptions(f, Options{}) }

// CompileOptions is Compile with options.
func CompileOptions(f *script.File, opts Options) *Program {
	c := &compiler{pos: opts.Positions}
	body := c.block(f.Body, preserves.Pos{File: f.Name, Line: 1, Col: 1}, DefaultTarget, DefaultTarget)
	return &Program{File: f.Name, Version: Version, Body: body, Instrs: c.n, Positions: opts.Positions}
}

type compiler struct {
	consts []Const // slab: constants are the most common node
	n      int     // instructions emitted
	pos    bool    // Options.Positions, switched off inside caveats
}

func (c *compiler) konst(at preserves.Pos, v preserves.Value) *Const {
	if len(c.consts) == 0 {
		c.consts = make([]Const, 128)
	}
	k := &c.consts[0]
	c.consts = c.consts[1:]
	*k = Const{At: at, Value: v}
	return k
}

func (c *compiler) block(body []script.Instr, at preserves.Pos, target, outer string) *Seq {
	c.n++
	s := &Seq{At: at, Body: make([]Instr, 0, len(body))}
	if len(body) > 0 {
		s.At = body[0].Pos()
	}
	for _, in := range body {
		s.Body = append(s.Body, c.instr(in, target, outer))
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
		return &Assert{At: x.At, Target: target, Value: c.value(x.Value)}
	case *script.Send:
		c.n++
		return &Send{At: x.At, Target: target, Value: c.value(x.Value)}
	case *script.During:
		c.n++
		return &During{At: x.At, Target: target, Pat: c.pattern(x.Pat), Binders: script.Binders(x.Pat),
			Body: c.instr(x.Body, target, outer)}
	case *script.OnMessage:
		c.n++
		return &OnMessage{At: x.At, Target: target, Pat: c.pattern(x.Pat), Binders: script.Binders(x.Pat),
			Body: c.instr(x.Body, target, outer)}
	case *script.OnStop:
		c.n++
		return &OnStop{At: x.At, Body: c.instr(x.Body, target, outer)}
	case *script.Let:
		c.n++
		return &Let{At: x.At, Pat: c.pattern(x.Pat), Binders: script.Binders(x.Pat), Expr: c.value(x.Expr)}
	case *script.Cond:
		c.n++
		at := x.At
		if len(x.Else) > 0 {
			at = x.Else[0].Pos()
		}
		return &Cond{At: x.At, Var: target, Pat: c.pattern(x.Pat), Binders: script.Binders(x.Pat),
			Then: c.instr(x.Then, outer, outer), Else: c.block(x.Else, at, outer, outer)}
	}
	// Unreachable for ASTs built by package script; an empty Seq keeps the
	// tree well-formed for hand-built ones.
	c.n++
	return &Seq{At: in.Pos()}
}

// ---------------------------------------------------------------------------
// Values

func (c *compiler) value(e script.Expr) Expr {
	if c.pos {
		if v, ok := constPositioned(e); ok {
			return c.konst(e.Pos(), v)
		}
	} else if v, ok := constValue(e); ok {
		return c.konst(e.Pos(), v)
	}
	switch x := e.(type) {
	case *script.Lit:
		return c.konst(x.At, x.Value)
	case *script.Var:
		return &Ref{At: x.At, Name: x.Name}
	case *script.RecordExpr:
		return mkRecord(x.At, c.value(x.Label), c.values(x.Fields))
	case *script.SeqExpr:
		return mkSeq(x.At, c.values(x.Elems))
	case *script.SetExpr:
		elems := c.values(x.Elems)
		if vs, ok := consts(elems); ok {
			return c.konst(x.At, preserves.NewSet(vs...))
		}
		return &MkSet{At: x.At, Elems: elems}
	case *script.DictExpr:
		keys := make([]Expr, len(x.Entries))
		vals := make([]Expr, len(x.Entries))
		for i, en := range x.Entries {
			keys[i], vals[i] = c.value(en.Key), c.value(en.Value)
		}
		return mkDict(x.At, keys, vals)
	case *script.Attenuate:
		return c.attenuate(x)
	case *script.DataspaceExpr:
		return &NewDataspace{At: x.At}
	case *script.TimestampExpr:
		return &Timestamp{At: x.At}
	case *script.FacetExpr:
		return &FacetHandle{At: x.At}
	case *script.ScriptDirExpr:
		return &ScriptDir{At: x.At}
	case *script.StringifyExpr:
		return &Stringify{At: x.At, X: c.value(x.X)}
	case *script.JoinExpr:
		return &Join{At: x.At, Sep: c.value(x.Sep), Pieces: c.value(x.Pieces)}
	}
	return c.konst(e.Pos(), preserves.Sequence{})
}

// constValue builds the value of an expression that mentions no variable
// directly, without intermediate nodes (most of a typical script is
// constant).
func constValue(e script.Expr) (preserves.Value, bool) {
	switch x := e.(type) {
	case *script.Lit:
		return x.Value, true
	case *script.RecordExpr:
		l, ok := constValue(x.Label)
		if !ok {
			return nil, false
		}
		fs, ok := constValues(x.Fields)
		if !ok {
			return nil, false
		}
		return &preserves.Record{Label: l, Fields: fs}, true
	case *script.SeqExpr:
		fs, ok := constValues(x.Elems)
		if !ok {
			return nil, false
		}
		return preserves.Sequence(fs), true
	case *script.SetExpr:
		fs, ok := constValues(x.Elems)
		if !ok {
			return nil, false
		}
		return preserves.NewSet(fs...), true
	case *script.DictExpr:
		es := make([]preserves.DictEntry, len(x.Entries))
		for i, en := range x.Entries {
			k, ok := constValue(en.Key)
			if !ok {
				return nil, false
			}
			v, ok := constValue(en.Value)
			if !ok {
				return nil, false
			}
			es[i] = preserves.DictEntry{Key: k, Value: v}
		}
		return preserves.NewDictionary(es...), true
	}
	return nil, false
}

// constPositioned is constValue keeping source positions (Options.Positions).
func constPositioned(e script.Expr) (preserves.Value, bool) {
	switch x := e.(type) {
	case *script.Lit:
		if x.Src != nil {
			return keepPositions(x.Src), true
		}
		return positioned(x.At, x.Value), true
	case *script.RecordExpr:
		l, ok := constPositioned(x.Label)
		if !ok {
			return nil, false
		}
		fs := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			if fs[i], ok = constPositioned(f); !ok {
				return nil, false
			}
		}
		return positioned(x.At, &preserves.Record{Label: l, Fields: fs}), true
	case *script.SeqExpr:
		fs := make([]preserves.Value, len(x.Elems))
		for i, f := range x.Elems {
			var ok bool
			if fs[i], ok = constPositioned(f); !ok {
				return nil, false
			}
		}
		return positioned(x.At, preserves.Sequence(fs)), true
	case *script.SetExpr:
		fs := make([]preserves.Value, len(x.Elems))
		for i, f := range x.Elems {
			var ok bool
			if fs[i], ok = constPositioned(f); !ok {
				return nil, false
			}
		}
		return positioned(x.At, preserves.NewSet(fs...)), true
	case *script.DictExpr:
		es := make([]preserves.DictEntry, len(x.Entries))
		for i, en := range x.Entries {
			k, ok := constPositioned(en.Key)
			if !ok {
				return nil, false
			}
			v, ok := constPositioned(en.Value)
			if !ok {
				return nil, false
			}
			es[i] = preserves.DictEntry{Key: k, Value: v}
		}
		return positioned(x.At, preserves.NewDictionary(es...)), true
	}
	return nil, false
}

// positioned wraps v with pos (if known).
func positioned(pos preserves.Pos, v preserves.Value) preserves.Value {
	if !pos.IsValid() {
		return v
	}
	return &preserves.Annotated{Pos: pos, Item: preserves.Unwrap(v)}
}

// keepPositions rebuilds v keeping the reader's positions at every depth
// and dropping annotations proper (comments).
func keepPositions(v preserves.Value) preserves.Value {
	pos := preserves.PosOf(v)
	var out preserves.Value
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Record:
		fs := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			fs[i] = keepPositions(f)
		}
		out = &preserves.Record{Label: keepPositions(x.Label), Fields: fs}
	case preserves.Sequence:
		fs := make([]preserves.Value, len(x))
		for i, f := range x {
			fs[i] = keepPositions(f)
		}
		out = preserves.Sequence(fs)
	case *preserves.Set:
		fs := make([]preserves.Value, 0, x.Len())
		for _, f := range x.Elems() {
			fs = append(fs, keepPositions(f))
		}
		out = preserves.NewSet(fs...)
	case *preserves.Dictionary:
		es := make([]preserves.DictEntry, 0, x.Len())
		for _, e := range x.Entries() {
			es = append(es, preserves.DictEntry{Key: keepPositions(e.Key), Value: keepPositions(e.Value)})
		}
		out = preserves.NewDictionary(es...)
	default:
		out = x
	}
	return positioned(pos, out)
}

func constValues(es []script.Expr) ([]preserves.Value, bool) {
	if len(es) == 0 {
		return nil, true
	}
	out := make([]preserves.Value, len(es))
	for i, e := range es {
		v, ok := constValue(e)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func (c *compiler) values(es []script.Expr) []Expr {
	out := make([]Expr, len(es))
	for i, e := range es {
		out[i] = c.value(e)
	}
	return out
}

func consts(es []Expr) ([]preserves.Value, bool) {
	vs := make([]preserves.Value, len(es))
	for i, e := range es {
		k, ok := e.(*Const)
		if !ok {
			return nil, false
		}
		vs[i] = k.Value
	}
	return vs, true
}

func mkRecord(at preserves.Pos, label Expr, fields []Expr) Expr {
	if l, ok := label.(*Const); ok {
		if fs, ok := consts(fields); ok {
			return &Const{At: at, Value: preserves.NewRecord(l.Value, fs...)}
		}
	}
	return &MkRecord{At: at, Label: label, Fields: fields}
}

func mkSeq(at preserves.Pos, elems []Expr) Expr {
	if vs, ok := consts(elems); ok {
		return &Const{At: at, Value: preserves.Sequence(vs)}
	}
	return &MkSeq{At: at, Elems: elems}
}

func mkDict(at preserves.Pos, keys, vals []Expr) Expr {
	ks, ok1 := consts(keys)
	vs, ok2 := consts(vals)
	if ok1 && ok2 {
		es := make([]preserves.DictEntry, len(ks))
		for i := range ks {
			es[i] = preserves.DictEntry{Key: ks[i], Value: vs[i]}
		}
		return &Const{At: at, Value: preserves.NewDictionary(es...)}
	}
	return &MkDict{At: at, Keys: keys, Vals: vals}
}

func sym(s string) Expr { return &Const{Value: preserves.Symbol(s)} }

// rec builds `<label fields...>` with a symbol label.
func rec(at preserves.Pos, label string, fields ...Expr) Expr {
	return mkRecord(at, sym(label), fields)
}

// ---------------------------------------------------------------------------
// Patterns

func (c *compiler) pattern(e script.Expr) Pat {
	if p, ok := constPattern(e); ok {
		return &PConst{At: e.Pos(), Pattern: p}
	}
	switch x := e.(type) {
	case *script.Discard:
		return &PConst{At: x.At, Pattern: pattern.Discard{}}
	case *script.Bind:
		sub := c.pattern(x.Pat)
		if k, ok := sub.(*PConst); ok {
			return &PConst{At: x.At, Pattern: pattern.Bind{Pattern: k.Pattern}}
		}
		return &PBind{At: x.At, Sub: sub}
	case *script.Lit:
		p, err := pattern.LiftChecked(x.Value)
		if err != nil {
			return &PLift{At: x.At, Value: c.konst(x.At, x.Value)}
		}
		return &PConst{At: x.At, Pattern: p}
	case *script.Var:
		return &PLift{At: x.At, Value: &Ref{At: x.At, Name: x.Name}}
	case *script.Attenuate:
		return &PLift{At: x.At, Value: c.attenuate(x)}
	case *script.RecordExpr:
		label := c.value(x.Label)
		fields := make([]Pat, len(x.Fields))
		for i, f := range x.Fields {
			fields[i] = c.pattern(f)
		}
		if l, ok := label.(*Const); ok {
			if ps, ok := constPats(fields); ok {
				return &PConst{At: x.At, Pattern: pattern.Rec(l.Value, ps...)}
			}
		}
		return &PRec{At: x.At, Label: label, Fields: fields}
	case *script.SeqExpr:
		items := make([]Pat, len(x.Elems))
		for i, f := range x.Elems {
			items[i] = c.pattern(f)
		}
		if ps, ok := constPats(items); ok {
			return &PConst{At: x.At, Pattern: pattern.Arr(ps...)}
		}
		return &PArr{At: x.At, Items: items}
	case *script.DictExpr:
		d := &PDict{At: x.At}
		for _, en := range x.Entries {
			d.Keys = append(d.Keys, litValue(en.Key))
			d.Vals = append(d.Vals, c.pattern(en.Value))
		}
		if ps, ok := constPats(d.Vals); ok {
			es := make([]pattern.Entry, len(ps))
			for i := range ps {
				es[i] = pattern.Entry{Key: d.Keys[i], Pattern: ps[i]}
			}
			return &PConst{At: x.At, Pattern: pattern.Dict(es...)}
		}
		return d
	}
	return &PConst{At: e.Pos(), Pattern: pattern.Discard{}}
}

// constPattern builds the pattern of an expression that mentions no
// variable directly, without intermediate nodes.
func constPattern(e script.Expr) (pattern.Pattern, bool) {
	switch x := e.(type) {
	case *script.Discard:
		return pattern.Discard{}, true
	case *script.Bind:
		sub, ok := constPattern(x.Pat)
		if !ok {
			return nil, false
		}
		return pattern.Bind{Pattern: sub}, true
	case *script.Lit:
		p, err := pattern.LiftChecked(x.Value)
		return p, err == nil
	case *script.RecordExpr:
		l, ok := constValue(x.Label)
		if !ok {
			return nil, false
		}
		fs, ok := constPatterns(x.Fields)
		if !ok {
			return nil, false
		}
		return pattern.Rec(l, fs...), true
	case *script.SeqExpr:
		fs, ok := constPatterns(x.Elems)
		if !ok {
			return nil, false
		}
		return pattern.Arr(fs...), true
	case *script.DictExpr:
		es := make([]pattern.Entry, len(x.Entries))
		for i, en := range x.Entries {
			sub, ok := constPattern(en.Value)
			if !ok {
				return nil, false
			}
			es[i] = pattern.Entry{Key: litValue(en.Key), Pattern: sub}
		}
		return pattern.Dict(es...), true
	}
	return nil, false
}

func constPatterns(es []script.Expr) ([]pattern.Pattern, bool) {
	out := make([]pattern.Pattern, len(es))
	for i, e := range es {
		p, ok := constPattern(e)
		if !ok {
			return nil, false
		}
		out[i] = p
	}
	return out, true
}

func constPats(ps []Pat) ([]pattern.Pattern, bool) {
	out := make([]pattern.Pattern, len(ps))
	for i, p := range ps {
		k, ok := p.(*PConst)
		if !ok {
			return nil, false
		}
		out[i] = k.Pattern
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
	return mkSeq(at, out)
}

func (c *compiler) caveat(cv script.Caveat) Expr {
	switch x := cv.(type) {
	case *script.Rewrite:
		return c.rewrite(x)
	case *script.Reject:
		return rec(x.At, "reject", c.spat(x.Pat))
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
		return rec(x.At, "or", mkSeq(x.At, alts))
	}
	return rec(cv.Pos(), "or", &Const{Value: preserves.Sequence{}})
}

func (c *compiler) rewrite(r *script.Rewrite) Expr {
	if r.Accept {
		// <accept P> is <rewrite <bind P> <ref 0>>.
		return rec(r.At, "rewrite", rec(r.At, "bind", c.spat(r.Pat)), rec(r.At, "ref", &Const{Value: preserves.Int(0)}))
	}
	return rec(r.At, "rewrite", c.spat(r.Pat), c.stmpl(r.Template))
}

// spat lowers a pattern to a sturdy.prs Pattern expression. Unlike dataspace
// patterns these have exact arity (services spec §4.8).
func (c *compiler) spat(e script.Expr) Expr {
	switch x := e.(type) {
	case *script.Discard:
		return rec(x.At, "_")
	case *script.Bind:
		return rec(x.At, "bind", c.spat(x.Pat))
	case *script.Lit:
		return rec(x.At, "lit", c.konst(x.At, x.Value))
	case *script.Var:
		return rec(x.At, "lit", &Ref{At: x.At, Name: x.Name})
	case *script.Attenuate:
		return rec(x.At, "lit", c.attenuate(x))
	case *script.RecordExpr:
		fs := make([]Expr, len(x.Fields))
		for i, f := range x.Fields {
			fs[i] = c.spat(f)
		}
		return rec(x.At, "rec", c.value(x.Label), mkSeq(x.At, fs))
	case *script.SeqExpr:
		fs := make([]Expr, len(x.Elems))
		for i, f := range x.Elems {
			fs[i] = c.spat(f)
		}
		return rec(x.At, "arr", mkSeq(x.At, fs))
	case *script.DictExpr:
		keys := make([]Expr, len(x.Entries))
		vals := make([]Expr, len(x.Entries))
		for i, en := range x.Entries {
			keys[i] = c.konst(en.Key.Pos(), litValue(en.Key))
			vals[i] = c.spat(en.Value)
		}
		return rec(x.At, "dict", mkDict(x.At, keys, vals))
	}
	return rec(e.Pos(), "_")
}

// stmpl lowers a rewrite template to a sturdy.prs Template expression.
func (c *compiler) stmpl(e script.Expr) Expr {
	switch x := e.(type) {
	case *script.Lit:
		return rec(x.At, "lit", c.konst(x.At, x.Value))
	case *script.Var:
		return rec(x.At, "lit", &Ref{At: x.At, Name: x.Name})
	case *script.Capture:
		return rec(x.At, "ref", c.konst(x.At, preserves.Int(x.Index)))
	case *script.Attenuate:
		if cp, ok := x.Target.(*script.Capture); ok {
			return rec(x.At, "attenuate", rec(cp.At, "ref", &Const{Value: preserves.Int(cp.Index)}), c.caveats(x.At, x.Caveats))
		}
		return rec(x.At, "lit", c.attenuate(x))
	case *script.RecordExpr:
		fs := make([]Expr, len(x.Fields))
		for i, f := range x.Fields {
			fs[i] = c.stmpl(f)
		}
		return rec(x.At, "rec", c.value(x.Label), mkSeq(x.At, fs))
	case *script.SeqExpr:
		fs := make([]Expr, len(x.Elems))
		for i, f := range x.Elems {
			fs[i] = c.stmpl(f)
		}
		return rec(x.At, "arr", mkSeq(x.At, fs))
	case *script.DictExpr:
		keys := make([]Expr, len(x.Entries))
		vals := make([]Expr, len(x.Entries))
		for i, en := range x.Entries {
			keys[i] = c.konst(en.Key.Pos(), litValue(en.Key))
			vals[i] = c.stmpl(en.Value)
		}
		return rec(x.At, "dict", mkDict(x.At, keys, vals))
	}
	return rec(e.Pos(), "lit", &Const{Value: preserves.Sequence{}})
}
