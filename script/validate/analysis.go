package validate

// Whole-tree analysis (operator issue): what no single file can tell, as a
// catalog compiler checks a whole catalog. Every script checked together
// is one configuration; the analysis reads the literal service vocabulary
// of all of them and reports:
//
// Errors (ErrInvalid):
//   - a static `depends-on` cycle between literal service names, with the
//     cycle named (at run time it would wait for ever);
//   - a `$variable` bound neither by the file (let, `?` captures, `=~`) nor
//     by the environment every script gets ($config, $log, $gatekeeper,
//     $control, $scriptdir), nor by the ENV of a `<config-watcher PATH ENV>`
//     declared in the tree; with a "did you mean" suggestion.
//
// Warnings (ErrSuspicious):
//   - a required daemon, or a dependee daemon, declared nowhere: by the
//     reference's semantics it is `started,ready` at once, so its
//     dependents start without it;
//   - one daemon declared in several files: each declaration runs its own
//     process;
//   - a required service that no built-in provides and no script serves
//     (asserts its service-state, or reacts to its run-service).
//
// Only literal values count; a part that uses variables is left alone.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
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
	pos  preserves.Pos
	spec string
}

type edge struct {
	to  string
	pos preserves.Pos
}

// tree accumulates what the files of one configuration declare.
type tree struct {
	daemons  map[string][]declared      // daemon ID text → declarations
	required map[string][]preserves.Pos // service name text → where required
	names    map[string]preserves.Value // service name text → name
	deps     map[string][]edge          // depender → dependees
	states   map[string]bool            // services whose state a script asserts
	patterns []pattern.Pattern          // what scripts observe
	envNames map[string]bool            // keys of config-watcher ENV dictionaries
	uses     []varUse                   // variables used, not bound in their file
	// incomplete: a file could not be read, so absence proves nothing.
	incomplete bool
}

type varUse struct {
	name  string
	pos   preserves.Pos
	bound []string // the names bound where it is used (suggestions)
}

// Analyze runs the whole-tree analysis on the scripts named by paths (as
// Check finds them) and returns its errors and warnings, sorted.
func Analyze(paths ...string) script.ErrorList {
	tr := &tree{daemons: map[string][]declared{}, required: map[string][]preserves.Pos{},
		names: map[string]preserves.Value{}, deps: map[string][]edge{}, states: map[string]bool{},
		envNames: map[string]bool{}}
	script.WalkScripts(paths, func(path string, src []byte, err error) {
		if err != nil {
			return
		}
		f, errs := script.ParseFile(path, src)
		if len(errs) > 0 {
			// Reported by the compiler's own check. What this file
			// declares is unknown, so nothing can be said to be
			// declared nowhere.
			tr.incomplete = true
			return
		}
		prog := compile.CompileOptions(f, compile.Options{Positions: true})
		s := &fileScan{tr: tr, file: path}
		s.instr(prog.Body, scope{}, compile.DefaultTarget)
	})
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
	tr   *tree
	file string
}

func (s *fileScan) pos(p preserves.Pos) preserves.Pos {
	if p.File == "" {
		p.File = s.file
	}
	return p
}

func (s *fileScan) use(name string, at preserves.Pos, sc scope) {
	if name == "." || sc[name] {
		return
	}
	s.tr.uses = append(s.tr.uses, varUse{name: name, pos: s.pos(at), bound: slices.Sorted(maps.Keys(sc))})
}

func (s *fileScan) instr(in compile.Instr, sc scope, target string) {
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
			s.instr(i, inner, target)
		}
	case *compile.Assert:
		s.use(x.Target, x.At, sc)
		s.expr(x.Value, sc)
		s.declaration(x.Value)
	case *compile.Send:
		s.use(x.Target, x.At, sc)
		s.expr(x.Value, sc)
	case *compile.During:
		s.use(x.Target, x.At, sc)
		s.observe(x.Pat)
		s.pat(x.Pat, sc)
		s.instr(x.Body, sc.with(x.Binders), x.Target)
	case *compile.OnMessage:
		s.use(x.Target, x.At, sc)
		s.observe(x.Pat)
		s.pat(x.Pat, sc)
		s.instr(x.Body, sc.with(x.Binders), x.Target)
	case *compile.OnStop:
		s.instr(x.Body, sc, target)
	case *compile.Let:
		s.expr(x.Expr, sc)
		s.pat(x.Pat, sc)
	case *compile.Cond:
		s.use(x.Var, x.At, sc)
		s.pat(x.Pat, sc)
		s.instr(x.Then, sc.with(x.Binders), target)
		if x.Else != nil {
			s.instr(x.Else, sc, target)
		}
	}
}

func (s *fileScan) expr(e compile.Expr, sc scope) {
	switch x := e.(type) {
	case *compile.Ref:
		s.use(x.Name, x.At, sc)
	case *compile.MkRecord:
		s.watcherEnv(x)
	case *compile.MkAttenuate:
		s.use(x.Var, x.At, sc)
	}
	compile.EachSubExpr(e, func(sub compile.Expr) { s.expr(sub, sc) })
}

// observe records what a `?` or `??` subscribes to, when it is literal.
func (s *fileScan) observe(p compile.Pat) {
	if c, ok := p.(*compile.PConst); ok {
		s.tr.patterns = append(s.tr.patterns, c.Pattern)
	}
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

// watcherEnv records the keys of `<config-watcher PATH {KEY: …}>`.
func (s *fileScan) watcherEnv(r *compile.MkRecord) {
	c, ok := r.Label.(*compile.Const)
	if !ok || c.Value != internalservices.LabelConfigWatcher || len(r.Fields) < 2 {
		return
	}
	switch d := r.Fields[1].(type) {
	case *compile.MkDict:
		for _, k := range d.Keys {
			if kc, ok := k.(*compile.Const); ok {
				if sym, ok := kc.Value.(preserves.Symbol); ok {
					s.tr.envNames[string(sym)] = true
				}
			}
		}
	case *compile.Const:
		if dict, ok := d.Value.(*preserves.Dictionary); ok {
			for _, e := range dict.Entries() {
				if sym, ok := e.Key.(preserves.Symbol); ok {
					s.tr.envNames[string(sym)] = true
				}
			}
		}
	}
}

// declaration records a literal asserted value of the service vocabulary.
func (s *fileScan) declaration(e compile.Expr) {
	c, ok := e.(*compile.Const)
	if !ok {
		// A record built from variables: its literal label and fields
		// may still declare something, e.g. <require-service <daemon x>>
		// asserted next to a capability. Only fully literal parts count.
		return
	}
	v := c.Value
	at := s.pos(preserves.PosOf(v))
	if at.Line == 0 {
		at = s.pos(c.At)
	}
	l, fields, ok := label(v)
	if !ok {
		return
	}
	key := func(x preserves.Value) string {
		k := preserves.FormatText(x)
		s.tr.names[k] = x
		return k
	}
	switch {
	case l == "daemon" && len(fields) == 2:
		id := key(preserves.NewRecord(externalservices.LabelDaemon, fields[0]))
		s.tr.daemons[id] = append(s.tr.daemons[id], declared{pos: at, spec: preserves.FormatText(fields[1])})
	case l == "require-service" && len(fields) == 1:
		k := key(fields[0])
		s.tr.required[k] = append(s.tr.required[k], at)
	case l == "service-state" && len(fields) == 2:
		s.tr.states[key(fields[0])] = true
	case l == "depends-on" && len(fields) == 2:
		dl, df, ok := label(fields[1])
		if ok && dl == "service-state" && len(df) == 2 {
			from, to := key(fields[0]), key(df[0])
			s.tr.deps[from] = append(s.tr.deps[from], edge{to: to, pos: at})
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

func (tr *tree) variables(out *script.ErrorList) {
	known := slices.AppendSeq(slices.Clone(PrimordialNames), maps.Keys(tr.envNames))
	for _, u := range tr.uses {
		if slices.Contains(known, u.name) {
			continue
		}
		*out = append(*out, &script.Error{Pos: u.pos, Err: ErrInvalid,
			Msg: "undefined variable $" + u.name + didYouMeanVar(u.name, append(u.bound, known...))})
	}
}

func didYouMeanVar(name string, known []string) string {
	if s := schema.Suggest(name, known); s != "" {
		return " (did you mean $" + s + "?)"
	}
	return ""
}

// daemonNames lists the `<daemon ID>` services the tree requires or
// depends on, with where.
func (tr *tree) daemonRefs() map[string][]preserves.Pos {
	refs := map[string][]preserves.Pos{}
	isDaemon := func(k string) bool {
		l, f, ok := label(tr.names[k])
		return ok && l == "daemon" && len(f) == 1
	}
	for k, ps := range tr.required {
		if isDaemon(k) {
			refs[k] = append(refs[k], ps...)
		}
	}
	for _, es := range tr.deps {
		for _, e := range es {
			if isDaemon(e.to) {
				refs[e.to] = append(refs[e.to], e.pos)
			}
		}
	}
	return refs
}

func (tr *tree) undeclared(out *script.ErrorList) {
	for k, ps := range tr.daemonRefs() {
		if len(tr.daemons[k]) > 0 {
			continue
		}
		hint := schema.DidYouMean(k, slices.Collect(maps.Keys(tr.daemons)))
		for _, p := range ps {
			out.Warnf(p, ErrSuspicious, "no %s declaration in the checked files%s: the daemon would be started,ready at once, "+
				"so what depends on it would start without it", strings.TrimSuffix(k, ">")+" …>", hint)
		}
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

func (tr *tree) unserved(out *script.ErrorList) {
	for k, ps := range tr.required {
		name := tr.names[k]
		if l, _, ok := label(name); ok && isBuiltin(l) {
			continue
		}
		if tr.states[k] {
			continue
		}
		run := preserves.NewRecord(service.LabelRunService, name)
		if slices.ContainsFunc(tr.patterns, func(p pattern.Pattern) bool { _, ok := pattern.Match(p, run); return ok }) {
			continue
		}
		hint := ""
		if l, _, ok := label(name); ok {
			if s := schema.Suggest(l, slices.Collect(maps.Keys(builtinNames))); s != "" {
				hint = fmt.Sprintf(" (did you mean <%s …>?)", s)
			}
		}
		for _, p := range ps {
			out.Warnf(p, ErrSuspicious, "no built-in service and no script provides %s%s: it would stay starting for ever", k, hint)
		}
	}
}

func isBuiltin(l string) bool {
	_, ok := builtinNames[l]
	return ok
}
