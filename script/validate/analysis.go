package validate

// Whole-tree analysis (operator issue): what no single file can tell, as a
// catalog compiler checks a whole catalog. Every script checked together
// is one configuration; the analysis reads the service vocabulary that all
// of them assert into the config dataspace (env.go: only assertions through
// $config, or a let or an attenuation of it, reach it) and reports:
//
// Errors (ErrInvalid):
//   - a static `depends-on` cycle between literal service names, with the
//     cycle named (at run time it would wait for ever);
//   - a `$variable` bound neither by the file (let, `?` captures, `=~`) nor
//     by its environment, where the environment is known (env.go), with a
//     "did you mean" suggestion; and, in any file, a variable that is a
//     near miss of a name in scope (schema.NearMiss).
//
// Warnings (ErrSuspicious):
//   - a variable that a lone file neither binds nor gets from the server:
//     it must come from its loader's environment, which is not checked;
//   - a required daemon, or a dependee daemon, that no declaration can
//     name: by the reference's semantics it is started and ready at once,
//     so its dependents start without it;
//   - one daemon declared in several files: each declaration runs its own
//     process;
//   - a required service that no built-in provides and no script serves
//     (asserts its service-state, or reacts to its run-service).
//
// Declarations, requirements and handlers count wherever they are, and a
// value built inside a handler is a template (names.go): `<daemon <worker
// $n> …>` declares every `<daemon <worker N>>`. A depends-on cycle is only
// reported between literal names, where it is certain.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
)

// ErrSuspicious is the class of the whole-tree warnings: the configuration
// runs, but probably not as meant.
var ErrSuspicious = errors.New("validate: suspicious configuration")

// PrimordialNames are the variables every script of the server gets
// (services spec §1.3, plus $scriptdir of §3.4 and $control with --control).
var PrimordialNames = []string{"config", "log", "gatekeeper", "control", "scriptdir"}

type declared struct {
	id   preserves.Value // <daemon ID>
	pos  preserves.Pos
	spec string
}

type edge struct {
	to  string
	pos preserves.Pos
}

// tree accumulates what the files of one configuration assert into the
// config dataspace. Names are templates (names.go): literal, or with
// wildcards where a handler fills them in.
type tree struct {
	daemons   map[string][]declared // literal daemon name text → declarations
	templates []preserves.Value     // templated daemon names declared
	refs      []nameRef             // required services and dependees
	deps      map[string][]edge     // literal depends-on: depender → dependees
	states    []preserves.Value     // services whose state a script asserts
	patterns  []pattern.Pattern     // what scripts observe in the config dataspace
	uses      []varUse              // variables used, not bound in their file
	// incomplete: a file could not be read, so absence proves nothing.
	incomplete bool
}

// nameRef is a service name required (require-service) or waited for
// (the dependee of a depends-on).
type nameRef struct {
	name     preserves.Value
	pos      preserves.Pos
	required bool
}

type varUse struct {
	name  string
	pos   preserves.Pos
	bound []string // the names bound where it is used (suggestions)
	unit  *unit
}

// Analyze runs the whole-tree analysis on the scripts named by paths (as
// Check finds them), each a lone file or watched by another, and returns
// its errors and warnings, sorted.
func Analyze(paths ...string) script.ErrorList { return AnalyzeTree(Tree{Files: paths}) }

// AnalyzeTree runs the whole-tree analysis on t.
func AnalyzeTree(t Tree) script.ErrorList {
	units, incomplete := loadTree(t)
	tr := &tree{daemons: map[string][]declared{}, deps: map[string][]edge{}, incomplete: incomplete}
	for _, u := range units {
		s := &fileScan{tr: tr, u: u}
		s.instr(u.prog.Body, scope{})
	}
	var out script.ErrorList
	tr.cycles(&out)
	tr.variables(&out)
	tr.duplicates(&out)
	if !tr.incomplete {
		tr.undeclared(&out)
		tr.unserved(&out)
	}
	out.Sort()
	return out
}

// scope is the set of names bound around an instruction.
type scope map[string]bool

func (s scope) with(names []string) scope {
	if len(names) == 0 {
		return s
	}
	out := maps.Clone(s)
	if out == nil {
		out = scope{}
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}

type fileScan struct {
	tr *tree
	u  *unit
}

// useTarget records the use of an instruction's target variable, at the
// `$x` that retargets it.
func (s *fileScan) useTarget(name string, at preserves.Pos, sc scope) {
	if r, ok := s.u.targetAt[at]; ok {
		at = r
	}
	s.use(name, at, sc)
}

func (s *fileScan) use(name string, at preserves.Pos, sc scope) {
	if name == "." || sc[name] {
		return
	}
	s.tr.uses = append(s.tr.uses, varUse{name: name, pos: s.u.pos(at), bound: slices.Sorted(maps.Keys(sc)), unit: s.u})
}

// toConfig reports whether the capability named target is the config
// dataspace (env.go).
func (s *fileScan) toConfig(target string) bool { return s.u.config[target] }

func (s *fileScan) instr(in compile.Instr, sc scope) {
	switch x := in.(type) {
	case *compile.Seq:
		// A let binds for the rest of its block; binding it for the
		// whole block is lenient and never reports a bound name.
		var lets []string
		for _, i := range x.Body {
			if l, ok := i.(*compile.Let); ok {
				lets = append(lets, l.Binders...)
			}
		}
		inner := sc.with(lets)
		for _, i := range x.Body {
			s.instr(i, inner)
		}
	case *compile.Assert:
		s.useTarget(x.Target, x.At, sc)
		s.expr(x.Value, sc)
		if s.toConfig(x.Target) {
			s.declaration(x.Value)
		}
	case *compile.Send:
		s.useTarget(x.Target, x.At, sc)
		s.expr(x.Value, sc)
	case *compile.Handler:
		s.handler(x, sc)
	case *compile.OnStop:
		s.instr(x.Body, sc)
	case *compile.Let:
		s.expr(x.Expr, sc)
		s.pat(x.Pat, sc)
	case *compile.Cond:
		s.use(x.Var, x.At, sc)
		s.pat(x.Pat, sc)
		s.instr(x.Then, sc.with(x.Binders))
		if x.Else != nil {
			s.instr(x.Else, sc)
		}
	}
}

func (s *fileScan) handler(h *compile.Handler, sc scope) {
	s.useTarget(h.Target, h.At, sc)
	if s.toConfig(h.Target) {
		s.tr.patterns = append(s.tr.patterns, patternOf(h.Pat))
	}
	s.pat(h.Pat, sc)
	s.instr(h.Body, sc.with(h.Binders))
}

func (s *fileScan) expr(e compile.Expr, sc scope) {
	switch x := e.(type) {
	case *compile.Ref:
		s.use(x.Name, x.At, sc)
	case *compile.MkAttenuate:
		s.use(x.Var, x.At, sc)
	}
	compile.EachSubExpr(e, func(sub compile.Expr) { s.expr(sub, sc) })
}

// pat records the variables a pattern uses.
func (s *fileScan) pat(p compile.Pat, sc scope) {
	switch x := p.(type) {
	case *compile.PLift:
		s.expr(x.Value, sc)
	case *compile.PBind:
		s.pat(x.Sub, sc)
	case *compile.PRec:
		s.expr(x.Label, sc)
		for _, f := range x.Fields {
			s.pat(f, sc)
		}
	case *compile.PArr:
		for _, f := range x.Items {
			s.pat(f, sc)
		}
	case *compile.PDict:
		for _, f := range x.Vals {
			s.pat(f, sc)
		}
	}
}

// declaration records a value of the service vocabulary asserted into the
// config dataspace, as a template: inside a handler, the parts filled in
// from captures stand for any value.
func (s *fileScan) declaration(e compile.Expr) {
	v := template(e)
	at := e.Pos()
	if c, ok := e.(*compile.Const); ok {
		if p := preserves.PosOf(c.Value); p.IsValid() {
			at = p
		}
	}
	at = s.u.pos(at)
	l, fields, ok := label(v)
	if !ok {
		return
	}
	switch {
	case l == "daemon" && len(fields) == 2:
		id := preserves.NewRecord(externalservices.LabelDaemon, fields[0])
		if hasWildcard(id) {
			s.tr.templates = append(s.tr.templates, id)
			return
		}
		k := preserves.FormatText(id)
		s.tr.daemons[k] = append(s.tr.daemons[k], declared{id: id, pos: at, spec: preserves.FormatText(fields[1])})
	case l == "require-service" && len(fields) == 1:
		s.tr.refs = append(s.tr.refs, nameRef{name: fields[0], pos: at, required: true})
	case l == "service-state" && len(fields) == 2:
		s.tr.states = append(s.tr.states, fields[0])
	case l == "depends-on" && len(fields) == 2:
		dl, df, ok := label(fields[1])
		if !ok || dl != "service-state" || len(df) != 2 {
			return
		}
		s.tr.refs = append(s.tr.refs, nameRef{name: df[0], pos: at})
		if !hasWildcard(fields[0]) && !hasWildcard(df[0]) {
			// Only literal edges make a certain cycle.
			from := preserves.FormatText(fields[0])
			s.tr.deps[from] = append(s.tr.deps[from], edge{to: preserves.FormatText(df[0]), pos: at})
		}
	}
}

// cycles reports each static depends-on cycle once, at the depends-on of
// its first member (in sorted order) that closes it.
func (tr *tree) cycles(out *script.ErrorList) {
	froms := slices.Sorted(maps.Keys(tr.deps))
	next := func(n string) []string {
		var to []string
		for _, e := range tr.deps[n] {
			to = append(to, e.to)
		}
		return to
	}
	reported := map[string]bool{}
	for _, start := range froms {
		cycle := CycleThrough(start, next)
		if cycle == nil {
			continue
		}
		members := slices.Clone(cycle[:len(cycle)-1])
		slices.Sort(members)
		id := strings.Join(members, "\x00")
		if reported[id] {
			continue
		}
		reported[id] = true
		at := tr.deps[start][0].pos
		for _, e := range tr.deps[start] {
			if e.to == cycle[1] {
				at = e.pos
				break
			}
		}
		*out = append(*out, &script.Error{Pos: at, Err: ErrInvalid,
			Msg: "dependency cycle: " + strings.Join(cycle, " → ") + " (these services would wait for each other for ever)"})
	}
}

// variables reports the variables a file uses without binding them and
// its environment does not give (env.go): an error where the environment
// is known, or where the name is a near miss of one in scope; elsewhere a
// warning, once per file and name, since the file's loader may give it.
func (tr *tree) variables(out *script.ErrorList) {
	warned := map[string]bool{}
	for _, u := range tr.uses {
		env := u.unit.env
		if env.names[u.name] {
			continue
		}
		known := append(slices.Clone(u.bound), slices.Sorted(maps.Keys(env.names))...)
		switch {
		case env.known:
			where := ""
			if env.from != nil {
				where = " (the config-watcher at " + env.from.at.String() + " that loads this file does not give it)"
			}
			*out = append(*out, &script.Error{Pos: u.pos, Err: ErrInvalid,
				Msg: "undefined variable $" + u.name + didYouMeanVar(u.name, known) + where})
		case schema.NearMiss(u.name, known) != "":
			*out = append(*out, &script.Error{Pos: u.pos, Err: ErrInvalid,
				Msg: "undefined variable $" + u.name + " (did you mean $" + schema.NearMiss(u.name, known) + "?)"})
		case !warned[u.unit.path+"\x00"+u.name]:
			warned[u.unit.path+"\x00"+u.name] = true
			out.Warnf(u.pos, ErrSuspicious, "$%s is bound neither in this file nor by the server: it must come from the environment "+
				"of the config-watcher that loads this file; check the file together with the script declaring that "+
				"watcher to have it checked", u.name)
		}
	}
}

func didYouMeanVar(name string, known []string) string {
	if s := schema.Suggest(name, known); s != "" {
		return " (did you mean $" + s + "?)"
	}
	return ""
}

// declares reports whether a daemon declaration of the tree, literal or
// templated, can have the name ref.
func (tr *tree) declares(ref preserves.Value) bool {
	if !hasWildcard(ref) && len(tr.daemons[preserves.FormatText(ref)]) > 0 {
		return true
	}
	for _, ds := range tr.daemons {
		if unify(ds[0].id, ref) {
			return true
		}
	}
	return slices.ContainsFunc(tr.templates, func(t preserves.Value) bool { return unify(t, ref) })
}

// undeclared warns about each required or dependee daemon that no
// declaration of the tree can name. A daemon whose whole ID is filled in
// at run time could be any daemon, and is left alone.
func (tr *tree) undeclared(out *script.ErrorList) {
	for _, r := range tr.refs {
		l, f, ok := label(r.name)
		if !ok || l != "daemon" || len(f) != 1 || isUnknown(f[0]) || tr.declares(r.name) {
			continue
		}
		k := show(r.name)
		hint := schema.DidYouMean(k, slices.Collect(maps.Keys(tr.daemons)))
		out.Warnf(r.pos, ErrSuspicious, "no %s declaration in the checked files%s: the daemon would be %s at once, "+
			"so what depends on it would start without it", strings.TrimSuffix(k, ">")+" …>", hint, "started and ready")
	}
}

func (tr *tree) duplicates(out *script.ErrorList) {
	for k, ds := range tr.daemons {
		files := map[string]bool{}
		for _, d := range ds {
			files[d.pos.File] = true
		}
		if len(files) < 2 {
			continue
		}
		var where []string
		for _, d := range ds {
			where = append(where, d.pos.String())
		}
		for _, d := range ds {
			out.Warnf(d.pos, ErrSuspicious, "%s is declared in %d files (%s): each declaration runs a process of its own",
				k, len(files), strings.Join(where, ", "))
		}
	}
}

// unserved warns about each required service that no built-in provides,
// whose state no script asserts and whose run-service no script observes.
func (tr *tree) unserved(out *script.ErrorList) {
	for _, r := range tr.refs {
		name := r.name
		if !r.required || isUnknown(name) {
			continue
		}
		l, _, isRec := label(name)
		if isRec && isBuiltin(l) {
			continue
		}
		if slices.ContainsFunc(tr.states, func(s preserves.Value) bool { return unify(s, name) }) {
			continue
		}
		run := preserves.NewRecord(service.LabelRunService, name)
		if slices.ContainsFunc(tr.patterns, func(p pattern.Pattern) bool { return mayMatch(p, run) }) {
			continue
		}
		hint := ""
		if isRec {
			if s := schema.Suggest(l, slices.Collect(maps.Keys(builtinNames))); s != "" {
				hint = fmt.Sprintf(" (did you mean <%s …>?)", s)
			}
		}
		out.Warnf(r.pos, ErrSuspicious, "no built-in service and no script provides %s%s: it would stay starting for ever", show(name), hint)
	}
}

func isBuiltin(l string) bool {
	_, ok := builtinNames[l]
	return ok
}
