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
// whose shape is computed at run time cannot be judged and count as
// unsafe; a caveat whose values use variables is judged with the values
// that let the most through (judgeable), and exposes binds only where it
// has a way in (revealsBinds).

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
	case *compile.Handler:
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
	case *compile.Handler:
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
	cs, literal, err := judgeable(x.Caveats)
	switch {
	case err != nil && literal:
		// A caveat list the runtime refuses fails the attenuation
		// itself (reported at run time); nothing is handed out.
	case err != nil:
		s.exposed[s.key(x.Var)] = append(s.exposed[s.key(x.Var)], exposure{at: s.pos(x.At)})
	case revealsBinds(cs):
		s.exposed[s.key(x.Var)] = append(s.exposed[s.key(x.Var)], exposure{at: s.pos(x.At), literal: true})
	}
}

// judgeable reads an attenuation's caveats as the runtime would, when
// their shape is literal. Variables may fill in values (issue 25), read as
// the most permissive values they could be: a variable in a rewrite's
// pattern matches anything; one in a reject's pattern matches nothing (the
// reject then blocks the least); one in a template is a value the script
// chose, which the holder cannot turn into an observation. literal
// reports a caveat list without variables; err, one that cannot be read.
func judgeable(e compile.Expr) (cs []caveat.Caveat, literal bool, err error) {
	v := template(e)
	literal = !hasWildcard(v)
	if seq, ok := v.(preserves.Sequence); ok && len(seq) > 0 && !literal && isUnknown(seq[0]) {
		return nil, false, errors.New("caveats computed at run time")
	}
	cs, err = caveat.ListFromValue(v)
	if err != nil {
		return nil, literal, err
	}
	for i, c := range cs {
		switch x := c.(type) {
		case caveat.Rewrite:
			cs[i] = caveat.Rewrite{Pattern: permissive(x.Pattern), Template: x.Template}
		case caveat.Alts:
			alts := make([]caveat.Rewrite, len(x.Alternatives))
			for j, r := range x.Alternatives {
				alts[j] = caveat.Rewrite{Pattern: permissive(r.Pattern), Template: r.Template}
			}
			cs[i] = caveat.Alts{Alternatives: alts}
		case caveat.Unknown:
			if hasWildcard(x.Value) {
				return nil, false, errors.New("caveat computed at run time")
			}
		}
	}
	return cs, literal, nil
}

// permissive replaces a variable's value in a pattern by a discard.
func permissive(p caveat.Pattern) caveat.Pattern {
	switch x := p.(type) {
	case caveat.Lit:
		if isUnknown(x.Value) {
			return caveat.PDiscard{}
		}
	case caveat.PBind:
		return caveat.PBind{Pattern: permissive(x.Pattern)}
	case caveat.PAnd:
		return caveat.PAnd{Patterns: permissiveAll(x.Patterns)}
	case caveat.PRec:
		return caveat.PRec{Label: x.Label, Fields: permissiveAll(x.Fields)}
	case caveat.PArr:
		return caveat.PArr{Items: permissiveAll(x.Items)}
	case caveat.PDict:
		es := make([]caveat.PDictEntry, len(x.Entries))
		for i, en := range x.Entries {
			es[i] = caveat.PDictEntry{Key: en.Key, Pattern: permissive(en.Pattern)}
		}
		return caveat.PDict{Entries: es}
	}
	return p // a PNot stays: a variable under it can only narrow it
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

func permissiveAll(ps []caveat.Pattern) []caveat.Pattern {
	out := make([]caveat.Pattern, len(ps))
	for i, q := range ps {
		out[i] = permissive(q)
	}
	return out
}

// revealsBinds reports whether an attenuation by cs lets a holder observe
// a bind. There must be a way in: a probe that passes still as an
// observation (a rewrite into another kind of record, `<rewrite ?v
// <from-untrusted $v>>`, observes nothing), or a rewrite whose template
// can turn a value the holder chooses into an observation (it yields a
// captured part of its input, `<rewrite <wrap ?o> $o>`, or builds an
// Observe record from captures), since the holder can then wrap any
// Observe it likes.
func revealsBinds(cs []caveat.Caveat) bool {
	for i, c := range cs {
		// Caveats apply last first: what c yields then meets cs[:i].
		if unwraps(c) && probesPass(cs[:i]) {
			return true
		}
	}
	return probesPass(cs)
}

// probesPass reports whether a probe passes cs still as an observation.
func probesPass(cs []caveat.Caveat) bool {
	return slices.ContainsFunc(bindProbes, func(p preserves.Value) bool {
		r, ok := caveat.Apply(cs, p)
		rec, isRec := r.(*preserves.Record)
		return ok && isRec && preserves.Equal(rec.Label, dsschema.LabelObserve)
	})
}

// unwraps reports whether a rewrite of c can yield an observation the
// holder chose without its input being that observation.
func unwraps(c caveat.Caveat) bool {
	var rs []caveat.Rewrite
	switch x := c.(type) {
	case caveat.Rewrite:
		rs = []caveat.Rewrite{x}
	case caveat.Alts:
		rs = x.Alternatives
	}
	return slices.ContainsFunc(rs, func(r caveat.Rewrite) bool {
		_, whole := r.Pattern.(caveat.PBind)
		switch t := r.Template.(type) {
		case caveat.TRef:
			if whole && t.Binding == 0 {
				return false // the input as it is: the probes judge it
			}
			// A part of the input, unless that part is an atom.
			n := t.Binding
			return !isAtomic(nthBind(r.Pattern, &n))
		case caveat.TRec:
			return preserves.Equal(t.Label, dsschema.LabelObserve) && slices.ContainsFunc(t.Fields, hasRef)
		}
		return false
	})
}

// nthBind returns the pattern under the *n-th capture of p, in the
// runtime's pre-order numbering, or nil.
func nthBind(p caveat.Pattern, n *int64) caveat.Pattern {
	var sub []caveat.Pattern
	switch x := p.(type) {
	case caveat.PBind:
		if *n == 0 {
			return x.Pattern
		}
		*n--
		sub = []caveat.Pattern{x.Pattern}
	case caveat.PAnd:
		sub = x.Patterns
	case caveat.PRec:
		sub = x.Fields
	case caveat.PArr:
		sub = x.Items
	case caveat.PDict:
		for _, e := range x.Entries {
			sub = append(sub, e.Pattern)
		}
	}
	for _, q := range sub {
		if r := nthBind(q, n); r != nil {
			return r
		}
	}
	return nil
}

// isAtomic reports whether everything p matches is an atom or an
// embedded value, never an observation.
func isAtomic(p caveat.Pattern) bool {
	switch x := p.(type) {
	case caveat.PAtom, caveat.PEmbedded:
		return true
	case caveat.Lit:
		_, isRec := x.Value.(*preserves.Record)
		return !isRec && !isUnknown(x.Value)
	case caveat.PAnd:
		return slices.ContainsFunc(x.Patterns, isAtomic)
	}
	return false
}

// hasRef reports whether a template uses a capture.
func hasRef(t caveat.Template) bool {
	switch x := t.(type) {
	case caveat.TRef:
		return true
	case caveat.TAttenuate:
		return hasRef(x.Template)
	case caveat.TRec:
		return slices.ContainsFunc(x.Fields, hasRef)
	case caveat.TArr:
		return slices.ContainsFunc(x.Items, hasRef)
	case caveat.TDict:
		return slices.ContainsFunc(x.Entries, func(e caveat.TDictEntry) bool { return hasRef(e.Template) })
	}
	return false
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
