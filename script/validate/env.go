package validate

// Environments and targets (issue 25).
//
// A script's variables come from its environment, which is whatever its
// loader gives it: the server's primordial environment for the files under
// a -c directory, the ENV of `<config-watcher PATH ENV>` for the files of a
// directory a script watches. What a file's environment holds, and which of
// its variables denote the config dataspace, is therefore a property of the
// tree checked, not of the file:
//
//   - a file under a Tree root gets the primordial environment: it is
//     known, and a variable it neither binds nor gets is an error;
//   - a file under the PATH of a config watcher declared in a checked file
//     gets that watcher's ENV, when the PATH and the keys of ENV can be
//     computed statically (a literal, `scriptdir`, `join`, let-bound
//     variables; `$.` passes the loader's own environment on): it is known
//     too, and $config there is the config dataspace only when the loader
//     passed the config dataspace (or an attenuation of it) as `config`;
//   - any other file is a lone file: whatever loads it is not among the
//     checked files. It is assumed to get at least the primordial
//     environment, with $config the config dataspace (as under -c, and as
//     a watcher passing `$.` or `{config: $config …}` gives it); any other
//     variable it does not bind must come from its loader, so using one is
//     a warning, not an error, unless the name is a near miss of a name in
//     scope (a typo).
//
// Within a file, the names that denote the config dataspace are those of
// its environment that do, and every `let` whose value is one of them or an
// attenuation of one. Only assertions through those reach the config
// dataspace, where the service vocabulary means something: a require-service
// sent to `$parent`, another server's dataspace, or to a fresh dataspace,
// declares nothing here.

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
)

// Tree names the scripts checked together: Roots are directories (or
// files) the server loads with the primordial environment (its -c paths);
// Files are checked as well, each either watched by a checked config
// watcher or a lone file (see the package doc).
type Tree struct {
	Roots []string
	Files []string
}

func (t Tree) paths() []string { return append(slices.Clone(t.Roots), t.Files...) }

// unit is one compiled script of the tree.
type unit struct {
	path     string
	abs      string
	prog     *compile.Program
	root     bool
	lets     map[string]compile.Expr // single-name lets, file-wide
	watchers []*watcher
	env      *environment
	config   map[string]bool                 // names denoting the config dataspace
	targetAt map[preserves.Pos]preserves.Pos // instruction → its `$x` retarget
}

// watcher is a `<config-watcher PATH ENV>` record in a unit.
type watcher struct {
	at   preserves.Pos
	from *unit
	dirs []string // absolute paths PATH may name; none when not computable
	env  compile.Expr
}

// environment is what a unit's loader gives it.
type environment struct {
	known  bool            // the loader is among the checked files (or -c)
	names  map[string]bool // the names it binds (assumed, for a lone file)
	config map[string]bool // those of them that denote the config dataspace
	from   *watcher        // the loading watcher, if any
}

func primordial(known bool) *environment {
	names := map[string]bool{}
	for _, n := range PrimordialNames {
		names[n] = true
	}
	return &environment{known: known, names: names, config: map[string]bool{"config": true}}
}

// loadTree parses and compiles the scripts of t. incomplete reports a
// file that could not be read or compiled: what it declares is unknown.
func loadTree(t Tree) (units []*unit, incomplete bool) {
	seen := map[string]bool{}
	load := func(paths []string, root bool) {
		script.WalkScripts(paths, func(path string, src []byte, err error) {
			u := loadUnit(path, src, err, &incomplete)
			if u == nil || seen[u.abs] {
				return // a file under a root named again is checked once
			}
			seen[u.abs], u.root = true, root
			units = append(units, u)
		})
	}
	load(t.Roots, true)
	load(t.Files, false)
	for _, u := range units {
		u.collect(u.prog.Body)
	}
	resolveEnvironments(units)
	return units, incomplete
}

func loadUnit(path string, src []byte, err error, incomplete *bool) *unit {
	if err != nil {
		*incomplete = true
		return nil
	}
	f, errs := script.ParseFile(path, src)
	if len(errs) > 0 {
		// Reported by the compiler's own check.
		*incomplete = true
		return nil
	}
	abs, aerr := filepath.Abs(path)
	if aerr != nil {
		abs = filepath.Clean(path)
	}
	prog := compile.CompileOptions(f, compile.Options{Positions: true})
	u := &unit{path: path, abs: abs, prog: prog, lets: map[string]compile.Expr{}, targetAt: map[preserves.Pos]preserves.Pos{}}
	for _, in := range f.Body {
		u.retargets(in)
	}
	return u
}

// retargets records where the `$x` of each retargeting instruction is, by
// the position of the instructions it retargets: the compiled tree only
// names the target of each instruction.
func (u *unit) retargets(in script.Instr) {
	if r, ok := in.(*script.Retarget); ok {
		var mark func(script.Instr)
		mark = func(i script.Instr) {
			switch x := i.(type) {
			case *script.Block:
				script.EachSubInstr(x, mark)
			case *script.Assert, *script.Send, *script.During, *script.OnMessage:
				u.targetAt[x.Pos()] = r.At
			}
		}
		mark(r.Body)
	}
	script.EachSubInstr(in, u.retargets)
}

// collect records the unit's single-name lets and its config watchers.
func (u *unit) collect(in compile.Instr) {
	switch x := in.(type) {
	case *compile.Let:
		if len(x.Binders) == 1 && isPlainBind(x.Pat) {
			u.lets[x.Binders[0]] = x.Expr
		}
		u.watchersIn(x.Expr)
	case *compile.Assert:
		u.watchersIn(x.Value)
	case *compile.Send:
		u.watchersIn(x.Value)
	}
	compile.EachSubInstr(in, u.collect)
}

func isPlainBind(p compile.Pat) bool {
	c, ok := p.(*compile.PConst)
	if !ok {
		return false
	}
	b, ok := c.Pattern.(pattern.Bind)
	if !ok {
		return false
	}
	_, discard := b.Pattern.(pattern.Discard)
	return discard || b.Pattern == nil
}

func (u *unit) watchersIn(e compile.Expr) {
	compile.EachSubExpr(e, u.watchersIn)
	if r, ok := e.(*compile.MkRecord); ok && len(r.Fields) == 2 && isLabel(r.Label, internalservices.LabelConfigWatcher) {
		u.watchers = append(u.watchers, &watcher{at: u.pos(r.At), from: u, dirs: u.watchedDirs(r.Fields[0]), env: r.Fields[1]})
	}
	if c, ok := e.(*compile.Const); ok {
		u.constWatchers(c.At, c.Value)
	}
}

// constWatchers finds config watchers in a literal value (a literal ENV).
func (u *unit) constWatchers(at preserves.Pos, v preserves.Value) {
	r, ok := v.(*preserves.Record)
	if !ok {
		return
	}
	if preserves.Equal(r.Label, internalservices.LabelConfigWatcher) && len(r.Fields) == 2 {
		p := preserves.PosOf(r)
		if !p.IsValid() {
			p = at
		}
		u.watchers = append(u.watchers, &watcher{at: u.pos(p), from: u,
			dirs: u.watchedDirs(&compile.Const{At: p, Value: r.Fields[0]}), env: &compile.Const{At: p, Value: r.Fields[1]}})
		return
	}
	for _, f := range r.Fields {
		u.constWatchers(at, f)
	}
}

func isLabel(e compile.Expr, label preserves.Symbol) bool {
	c, ok := e.(*compile.Const)
	return ok && preserves.Equal(c.Value, label)
}

func (u *unit) pos(p preserves.Pos) preserves.Pos {
	if p.File == "" {
		p.File = u.path
	}
	return p
}

// watchedDirs computes the absolute paths a watcher's PATH may name: a
// relative PATH is relative to the server's working directory, and
// (leniently) to the loader's directory.
func (u *unit) watchedDirs(e compile.Expr) []string {
	p, ok := u.str(e, 0)
	if !ok || p == "" {
		return nil
	}
	if filepath.IsAbs(p) {
		return []string{filepath.Clean(p)}
	}
	var out []string
	if abs, err := filepath.Abs(p); err == nil {
		out = append(out, abs)
	}
	return append(out, filepath.Join(filepath.Dir(u.abs), p))
}

// str evaluates a string expression statically, when it can be.
func (u *unit) str(e compile.Expr, depth int) (string, bool) {
	if depth > 16 {
		return "", false
	}
	switch x := e.(type) {
	case *compile.Const:
		s, ok := x.Value.(preserves.String)
		return string(s), ok
	case *compile.Ref:
		if x.Name == "scriptdir" {
			return filepath.Dir(u.path), true
		}
		if d, ok := u.lets[x.Name]; ok {
			return u.str(d, depth+1)
		}
	case *compile.Call:
		switch x.Builtin.Name {
		case "scriptdir":
			return filepath.Dir(u.path), true
		case "join":
			return u.join(x.Args, depth)
		}
	}
	return "", false
}

func (u *unit) join(args []compile.Expr, depth int) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	sep, ok := u.str(args[0], depth+1)
	if !ok {
		return "", false
	}
	var parts []string
	switch s := args[1].(type) {
	case *compile.MkSeq:
		for _, el := range s.Elems {
			p, ok := u.str(el, depth+1)
			if !ok {
				return "", false
			}
			parts = append(parts, p)
		}
	case *compile.Const:
		seq, ok := s.Value.(preserves.Sequence)
		if !ok {
			return "", false
		}
		for _, el := range seq {
			p, ok := el.(preserves.String)
			if !ok {
				return "", false
			}
			parts = append(parts, string(p))
		}
	default:
		return "", false
	}
	return strings.Join(parts, sep), true
}

// watches reports whether w loads the file at abs.
func (w *watcher) watches(abs string) bool {
	for _, d := range w.dirs {
		if abs == d || strings.HasPrefix(abs, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resolveEnvironments gives every unit its environment and the names that
// denote the config dataspace in it. A watched unit's environment depends
// on its loader's, so this iterates until nothing changes (a chain of
// watchers is at most as long as the tree).
func resolveEnvironments(units []*unit) {
	for _, u := range units {
		u.env = primordial(u.root)
		u.config = u.aliases(u.env.config)
	}
	for range len(units) + 1 {
		changed := false
		for _, u := range units {
			if u.root {
				continue
			}
			var env *environment
			for _, l := range units {
				for _, w := range l.watchers {
					if l != u && w.watches(u.abs) {
						env = merge(env, w.environment())
					}
				}
			}
			if env == nil || sameEnv(env, u.env) {
				continue
			}
			u.env, u.config, changed = env, u.aliases(env.config), true
		}
		if !changed {
			return
		}
	}
}

func merge(a, b *environment) *environment {
	if a == nil {
		return b
	}
	out := &environment{known: a.known && b.known, names: maps.Clone(a.names), config: maps.Clone(a.config), from: a.from}
	maps.Copy(out.names, b.names)
	maps.Copy(out.config, b.config)
	return out
}

func sameEnv(a, b *environment) bool {
	return a.known == b.known && a.from == b.from && maps.Equal(a.names, b.names) && maps.Equal(a.config, b.config)
}

// environment is what w gives the files it loads, given its loader's
// current environment.
func (w *watcher) environment() *environment {
	l := w.from
	e := w.env
	for range 16 { // follow let-bound names to the ENV expression
		r, ok := e.(*compile.Ref)
		if !ok || r.Name == "." {
			break
		}
		d, ok := l.lets[r.Name]
		if !ok {
			break
		}
		e = d
	}
	env := &environment{known: true, names: map[string]bool{"scriptdir": true}, config: map[string]bool{}, from: w}
	switch x := e.(type) {
	case *compile.Ref:
		if x.Name != "." {
			return lone(w)
		}
		// `$.`: the loader's own environment, and its lets.
		maps.Copy(env.names, l.env.names)
		env.known = l.env.known
		for n := range l.lets {
			env.names[n] = true
		}
		maps.Copy(env.config, l.config)
	case *compile.MkDict:
		for i, k := range x.Keys {
			c, ok := k.(*compile.Const)
			var sym preserves.Symbol
			if ok {
				sym, ok = c.Value.(preserves.Symbol)
			}
			if !ok {
				return lone(w) // a computed key: the names are unknown
			}
			n := string(sym)
			env.names[n] = true
			if l.denotesConfig(x.Vals[i]) {
				env.config[n] = true
			}
		}
	case *compile.Const:
		d, ok := x.Value.(*preserves.Dictionary)
		if !ok {
			return lone(w)
		}
		for _, en := range d.Entries() {
			if s, ok := en.Key.(preserves.Symbol); ok {
				env.names[string(s)] = true
			}
		}
	default:
		return lone(w)
	}
	return env
}

// lone is the environment of a file loaded by w when w's ENV cannot be
// computed: as for a lone file.
func lone(w *watcher) *environment {
	env := primordial(false)
	env.from = w
	return env
}

// denotesConfig reports whether e, evaluated in u, is the config dataspace
// or an attenuation of it.
func (u *unit) denotesConfig(e compile.Expr) bool {
	switch x := e.(type) {
	case *compile.Ref:
		return u.config[x.Name]
	case *compile.MkAttenuate:
		return u.config[x.Var]
	}
	return false
}

// aliases extends the environment's config names with the unit's lets
// that denote the config dataspace.
func (u *unit) aliases(base map[string]bool) map[string]bool {
	u.config = maps.Clone(base)
	for changed := true; changed; {
		changed = false
		for n, e := range u.lets {
			if !u.config[n] && u.denotesConfig(e) {
				u.config[n], changed = true, true
			}
		}
	}
	return u.config
}
