package validate

// Binds readable through an attenuated capability (issue 12, item 7).
//
// A `<bind DESCRIPTION $target OBSERVER>` asserted into a dataspace is an
// ordinary assertion there: whoever may observe that dataspace reads the
// description, with its key (a sturdy ref's `key`, a Noise `secretKey`),
// and the bound capability itself. A script that also hands the same
// dataspace out attenuated (`<* $config [...]>`) usually means the holder
// to have less than the full capability; unless the caveats reject
// observing `<bind …>`, the holder reads the key and the unattenuated
// capability and escalates. The reference server's documented pattern
// has exactly this shape.
//
// The check is static and spans every file checked together, since
// `$config` (and the other variables a file does not bind itself) is the
// same dataspace in all of them. An attenuation is safe when its caveats,
// applied as the runtime applies them, reject each of a set of probe
// `Observe` assertions that would capture a bind or part of it; caveats
// that are not literal (they use variables) cannot be judged and count as
// unsafe.

import (
	"errors"
	"slices"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
)

// ErrExposedBind is the class of the warning about a bind with a key
// asserted into a dataspace that is also handed out attenuated by caveats
// that let the holder observe it.
var ErrExposedBind = errors.New("validate: bind readable through an attenuated capability")

// exposure is one attenuation of a dataspace that lets binds be observed.
type exposure struct {
	at      preserves.Pos
	literal bool // the caveats were literal (and judged unsafe)
}

// bindUse is one bind with a key.
type bindUse struct {
	at     preserves.Pos
	target string // the variable named in the script
	key    string // scope key of the target (see bindScan.key)
}

type bindScan struct {
	file    string
	local   map[string]bool // variables the file binds itself
	exposed map[string][]exposure
	binds   []bindUse
}

// Binds checks the scripts named by paths (as Check finds them) for binds
// that attenuated holders can read, returning warnings (nil if none).
func Binds(paths ...string) script.ErrorList {
	exposed := map[string][]exposure{}
	var binds []bindUse
	script.WalkScripts(paths, func(path string, src []byte, err error) {
		if err != nil {
			return
		}
		f, errs := script.ParseFile(path, src)
		if len(errs) > 0 {
			return // reported by the compiler's own check
		}
		s := &bindScan{file: path, local: map[string]bool{}, exposed: exposed}
		prog := compile.Compile(f)
		s.locals(prog.Body)
		s.instr(prog.Body, compile.DefaultTarget)
		binds = append(binds, s.binds...)
	})
	var out script.ErrorList
	for _, b := range binds {
		es := exposed[b.key]
		if len(es) == 0 {
			continue
		}
		e := es[0]
		why := "by caveats that let the holder observe it"
		if !e.literal {
			why = "by caveats that are not literal, so whether they hide it cannot be told"
		}
		out.Warnf(b.at, ErrExposedBind,
			"this bind holds a key and is asserted into $%s, which is handed out attenuated at %s %s: "+
				"the holder can read the key and the bound capability; keep binds in a dataspace of their own "+
				"(let ?binds = dataspace, <gatekeeper $binds>), or add <reject <Observe <bind _> _>> and "+
				"<reject <Observe <group <rec bind> _> _>> to the attenuation (docs/services.md)",
			b.target, e.at, why)
	}
	out.Sort()
	return out
}

// key scopes a variable: one the file binds itself is the file's own;
// any other (config, log, gatekeeper, …) is shared by every script.
func (s *bindScan) key(name string) string {
	if s.local[name] {
		return s.file + "\x00" + name
	}
	return name
}

func (s *bindScan) locals(in compile.Instr) {
	mark := func(ns []string) {
		for _, n := range ns {
			s.local[n] = true
		}
	}
	switch x := in.(type) {
	case *compile.Seq:
		for _, i := range x.Body {
			s.locals(i)
		}
	case *compile.During:
		mark(x.Binders)
		s.locals(x.Body)
	case *compile.OnMessage:
		mark(x.Binders)
		s.locals(x.Body)
	case *compile.OnStop:
		s.locals(x.Body)
	case *compile.Let:
		mark(x.Binders)
	case *compile.Cond:
		mark(x.Binders)
		s.locals(x.Then)
		if x.Else != nil {
			s.locals(x.Else)
		}
	}
}

func (s *bindScan) instr(in compile.Instr, target string) {
	switch x := in.(type) {
	case *compile.Seq:
		for _, i := range x.Body {
			s.instr(i, target)
		}
	case *compile.Assert:
		s.expr(x.Value)
		if hasKey(x.Value) {
			s.binds = append(s.binds, bindUse{at: s.pos(x.At), target: x.Target, key: s.key(x.Target)})
		}
	case *compile.Send:
		s.expr(x.Value)
	case *compile.During:
		s.instr(x.Body, x.Target)
	case *compile.OnMessage:
		s.instr(x.Body, x.Target)
	case *compile.OnStop:
		s.instr(x.Body, target)
	case *compile.Let:
		s.expr(x.Expr)
	case *compile.Cond:
		s.instr(x.Then, target)
		if x.Else != nil {
			s.instr(x.Else, target)
		}
	}
}

func (s *bindScan) pos(p preserves.Pos) preserves.Pos {
	if p.File == "" {
		p.File = s.file
	}
	return p
}

// expr records the attenuations inside e.
func (s *bindScan) expr(e compile.Expr) {
	compile.EachSubExpr(e, s.expr)
	x, ok := e.(*compile.MkAttenuate)
	if !ok {
		return
	}
	c, ok := x.Caveats.(*compile.Const)
	var cs []caveat.Caveat
	var err error
	if ok {
		cs, err = caveat.ListFromValue(c.Value)
	}
	switch {
	case !ok:
		s.exposed[s.key(x.Var)] = append(s.exposed[s.key(x.Var)], exposure{at: s.pos(x.At)})
	case err != nil:
		// A caveat list the runtime refuses fails the attenuation
		// itself (reported at run time); nothing is handed out.
	case revealsBinds(cs):
		s.exposed[s.key(x.Var)] = append(s.exposed[s.key(x.Var)], exposure{at: s.pos(x.At), literal: true})
	}
}

// bindProbes are Observe assertions that would capture a bind, or its
// key, or its capability.
var bindProbes = func() []preserves.Value {
	capture := pattern.Bind{Pattern: pattern.Discard{}}
	bind := gatekeeper.LabelBind
	obs := func(p pattern.Pattern) preserves.Value {
		return preserves.NewRecord(dsschema.LabelObserve, pattern.ToValue(p), preserves.NewEmbedded(unknown{}))
	}
	keyed := pattern.Rec(sturdy.LabelRef, pattern.Group{Type: pattern.DictType{}, Entries: []pattern.Entry{
		{Key: preserves.Symbol("key"), Pattern: capture}}})
	return []preserves.Value{
		obs(capture),
		obs(pattern.Rec(bind, capture, capture, capture)),
		obs(pattern.Rec(bind, pattern.Discard{}, capture)),
		obs(pattern.Rec(bind, keyed)),
	}
}()

// revealsBinds reports whether an attenuation by cs lets any probe
// through still as an observation (a rewrite into another kind of
// record, `<rewrite ?v <from-untrusted $v>>`, observes nothing).
func revealsBinds(cs []caveat.Caveat) bool {
	return slices.ContainsFunc(bindProbes, func(p preserves.Value) bool {
		r, ok := caveat.Apply(cs, p)
		rec, isRec := r.(*preserves.Record)
		return ok && isRec && preserves.Equal(rec.Label, dsschema.LabelObserve)
	})
}

// hasKey reports whether v is `<bind DESCRIPTION …>` whose description
// holds a secret: `<ref {… key: …}>` or `<noise {… secretKey: …}>`.
func hasKey(v compile.Expr) bool {
	label, fields, ok := recordOf(v)
	if !ok || label != gatekeeper.LabelBind || len(fields) < 1 {
		return false
	}
	dl, df, ok := recordOf(fields[0])
	if !ok || len(df) < 1 {
		return false
	}
	var secret preserves.Symbol
	switch dl {
	case sturdy.LabelRef:
		secret = "key"
	case preserves.Symbol("noise"):
		secret = "secretKey"
	default:
		return false
	}
	switch d := df[0].(type) {
	case *compile.Const:
		dict, ok := d.Value.(*preserves.Dictionary)
		if !ok {
			return false
		}
		_, has := dict.Get(secret)
		return has
	case *compile.MkDict:
		for _, k := range d.Keys {
			if c, ok := k.(*compile.Const); ok && preserves.Equal(c.Value, secret) {
				return true
			}
		}
	}
	return false
}

// recordOf splits a record expression, literal or built, into its label
// and field expressions.
func recordOf(e compile.Expr) (preserves.Value, []compile.Expr, bool) {
	switch x := e.(type) {
	case *compile.Const:
		r, ok := x.Value.(*preserves.Record)
		if !ok {
			return nil, nil, false
		}
		fs := make([]compile.Expr, len(r.Fields))
		for i, f := range r.Fields {
			fs[i] = &compile.Const{At: x.At, Value: f}
		}
		return r.Label, fs, true
	case *compile.MkRecord:
		l, ok := x.Label.(*compile.Const)
		if !ok {
			return nil, nil, false
		}
		return l.Value, x.Fields, true
	}
	return nil, nil, false
}
