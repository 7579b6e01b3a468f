// Package vm runs compiled scripts (package script/compile) inside a facet
// of the actor runtime (package dataspace).
//
// # Design
//
// A run is one *machine: the program's name and the owner of its constants'
// positions, the injected logger and options, and the shared error
// reporting. It holds no reference to the program's instructions: the
// top-level body runs once, and each handler it installs keeps only its own
// instructions, so what a config file asserts at its top level does not keep
// its instructions alive while the file's facet runs (issue 28). It belongs to the actor that called Run: every
// activation of the script (the top-level body, each During facet, each
// message handler, each stop handler) executes inside a turn of that actor,
// so the machine is only ever touched by the goroutine holding that actor's
// turn lock and needs no locking of its own. Values crossing actors are
// immutable Preserves values.
//
// Each activation walks the instruction tree recursively with its own step
// counter; before every instruction it checks the step budget
// (Options.MaxSteps) and the cancellation context (Options.Context).
//
// The environment is a persistent list of bindings over the caller's map:
// `let` and a matching `=~` push bindings that later instructions of the same
// activation see (blocks are not scopes, services spec §4.9), while a
// handler captures the list as it is when the handler is installed, in O(1),
// so later bindings never leak into it.
//
// # Positions
//
// A program compiled with compile.Options.Positions (the config watcher's)
// builds plain values and remembers each compound it builds, with the
// positions of its parts' expressions, in the side table of package
// preserves (preserves.Remember, NewSetAt, NewDictionaryAt); its constants
// were stripped and remembered by the compiler. So no *preserves.Annotated
// reaches the dataspace, and a service rejecting a value still names the
// file:line:col of the part that is wrong (preserves.PosOf, ItemPos).
// Without the option nothing is remembered.
//
// # Errors
//
// A run-time error (undefined variable, non-capability target, failed let
// match, bad attenuation, …) abandons the activation, is logged at error
// level as `file:line:col: message` through the injected zerolog logger, and
// stops the facet of that activation: the script's own facet for top-level
// code, the per-assertion or per-message facet for handler bodies. Nothing
// else is affected: the actor does not crash (services spec §4.10). An error
// in a `?-` body abandons only that body (quirk Q7 is not copied).
package vm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
)

// Options configures a run. The zero value is usable (no logging).
type Options struct {
	// Logger receives run-time errors and facet-handle warnings.
	Logger zerolog.Logger
	// Now is the clock for `timestamp` (default time.Now).
	Now func() time.Time
	// MaxSteps bounds the instructions one activation may execute
	// (0: unbounded). Scripts have no loops, so this only guards against
	// pathological generated scripts.
	MaxSteps int
	// Context, when cancelled, makes every later activation fail with
	// ErrCancelled before its next instruction.
	Context context.Context
	// OnError, if set, is called (inside the failing turn) with every
	// run-time error after it has been logged.
	OnError func(*RuntimeError)
}

// Run runs prog in a fresh child facet of t's active facet, with env as the
// initial environment, and returns the facet's id. A run-time error is
// logged and stops only that facet; the returned error is nil in that case
// too (it reports failure to create the facet only), so callers inside a
// turn can return it without crashing their actor.
func Run(t *dataspace.Turn, prog *compile.Program, env map[string]preserves.Value, log zerolog.Logger) (dataspace.FacetID, error) {
	return RunOptions(t, prog, env, Options{Logger: log})
}

// ErrNilProgram is returned by Run (not a RuntimeError) when given no
// program.
var ErrNilProgram = errors.New("vm: nil program")

// RunOptions is Run with options.
func RunOptions(t *dataspace.Turn, prog *compile.Program, env map[string]preserves.Value, opts Options) (dataspace.FacetID, error) {
	if prog == nil || prog.Body == nil {
		return 0, ErrNilProgram
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &machine{file: prog.File, positions: prog.Positions, opts: opts, log: opts.Logger}
	if s, ok := env["scriptdir"].(preserves.String); ok {
		m.envDir = string(s)
	}
	base := make(map[string]preserves.Value, len(env))
	maps.Copy(base, env)
	body := prog.Body
	if consts := prog.Consts; consts != nil {
		// The program's Consts own the positions of its constants
		// (preserves.Owner), which this facet may assert long after
		// the caller has dropped prog: the facet keeps them alive.
		// It keeps nothing else of prog: the handlers it installs
		// hold their own instructions, and the top level runs once,
		// so a config file's facts do not keep their instructions.
		m.keep = consts
	}
	return t.Facet(func(t *dataspace.Turn) error {
		if m.keep != nil {
			t.OnStop(func(*dataspace.Turn) error { runtime.KeepAlive(m.keep); return nil })
		}
		a := &activation{m: m}
		sc := &scope{base: base}
		if err := a.exec(t, body, sc); err != nil {
			m.fail(t, err)
			t.Stop()
		}
		return nil
	})
}

// A machine holds no reference to its program, only what later
// activations need: handlers keep the instructions they run.
type machine struct {
	file      string             // the program's File
	positions bool               // the program's Positions
	keep      *compile.Constants // the program's Consts
	opts      Options
	log       zerolog.Logger
	envDir    string // the environment's scriptdir, used when the program has no file
	dir       string // computed on first use: filepath.Abs asks the OS
}

// scriptDir is the value of `scriptdir`: the absolute directory of the
// script file, else the environment's scriptdir, else ".".
func (m *machine) scriptDir() string {
	if m.dir == "" {
		switch {
		case m.file != "":
			if abs, err := filepath.Abs(m.file); err == nil {
				m.dir = filepath.Dir(abs)
			} else {
				m.dir = filepath.Dir(m.file)
			}
		case m.envDir != "":
			m.dir = m.envDir
		default:
			m.dir = "."
		}
	}
	return m.dir
}

func (m *machine) fail(t *dataspace.Turn, err *RuntimeError) {
	ev := m.log.Error().Str("file", m.file)
	if len(err.Trace) > 0 {
		ev = ev.Str("backtrace", err.Backtrace())
	}
	ev.Msg(err.Error())
	if m.opts.OnError != nil {
		m.opts.OnError(err)
	}
}

// ---------------------------------------------------------------------------
// Environment

type binding struct {
	name string
	val  preserves.Value
	next *binding
}

// scope is an environment: bindings pushed by this activation over the base
// map. Copying a scope snapshots it.
type scope struct {
	base map[string]preserves.Value
	top  *binding
}

func (s *scope) lookup(name string) (preserves.Value, bool) {
	if name == "." {
		return s.dict(), true
	}
	for b := s.top; b != nil; b = b.next {
		if b.name == name {
			return b.val, true
		}
	}
	v, ok := s.base[name]
	return v, ok
}

func (s *scope) bind(name string, v preserves.Value) {
	s.top = &binding{name: name, val: v, next: s.top}
}

func (s *scope) bindAll(names []string, vals []preserves.Value) {
	for i, n := range names {
		if i < len(vals) {
			s.bind(n, vals[i])
		}
	}
}

// dict is `$.`: the whole environment as a dictionary with symbol keys.
func (s *scope) dict() preserves.Value {
	seen := make(map[string]bool)
	var es []preserves.DictEntry
	for b := s.top; b != nil; b = b.next {
		if !seen[b.name] {
			seen[b.name] = true
			es = append(es, preserves.DictEntry{Key: preserves.Symbol(b.name), Value: b.val})
		}
	}
	for k, v := range s.base {
		if !seen[k] {
			es = append(es, preserves.DictEntry{Key: preserves.Symbol(k), Value: v})
		}
	}
	return preserves.NewDictionary(es...)
}

// ---------------------------------------------------------------------------
// Instructions

// activation is one execution of a piece of the program in one facet.
type activation struct {
	m     *machine
	steps int
	trace *frame // the innermost enclosing handler, nil at top level
}

// frame is one enclosing handler. The frames form a list from the
// innermost outwards, shared by every handler nested inside, so that a
// handler nested N deep costs one frame, not a copy of N positions
// (issue 22: 9,990 nested handlers took 1.6 GB, growing with the square
// of the depth).
type frame struct {
	at    preserves.Pos
	up    *frame
	depth int
}

// maxTrace bounds the handlers a RuntimeError lists (the innermost).
const maxTrace = 64

func (a *activation) errorf(at preserves.Pos, class error, format string, args ...any) *RuntimeError {
	e := &RuntimeError{Pos: at, Msg: fmt.Sprintf(format, args...), Err: class}
	if a.trace != nil {
		e.Outer = max(a.trace.depth-maxTrace, 0)
		e.Trace = make([]preserves.Pos, a.trace.depth-e.Outer)
		f := a.trace
		for i := len(e.Trace) - 1; i >= 0; i-- {
			e.Trace[i], f = f.at, f.up
		}
	}
	return e
}

// child returns the activation for a handler installed at pos.
func (a *activation) child(at preserves.Pos) *activation {
	f := &frame{at: at, up: a.trace, depth: 1}
	if a.trace != nil {
		f.depth = a.trace.depth + 1
	}
	return &activation{m: a.m, trace: f}
}

// The classes of the errors exec raises itself.
var (
	// ErrBudget: an activation exceeded Options.MaxSteps.
	ErrBudget = errors.New("vm: step budget exceeded")
	// ErrCancelled: Options.Context was cancelled.
	ErrCancelled = errors.New("vm: cancelled")
	// ErrNoMatch: a let pattern did not match its value.
	ErrNoMatch = errors.New("vm: pattern did not match")
)

func (a *activation) exec(t *dataspace.Turn, in compile.Instr, sc *scope) *RuntimeError {
	a.steps++
	if max := a.m.opts.MaxSteps; max > 0 && a.steps > max {
		return a.errorf(in.Pos(), ErrBudget, "step budget of %d instructions exceeded", max)
	}
	if ctx := a.m.opts.Context; ctx != nil && ctx.Err() != nil {
		return a.errorf(in.Pos(), ErrCancelled, "script cancelled: %v", ctx.Err())
	}
	switch x := in.(type) {
	case *compile.Seq:
		for _, y := range x.Body {
			if err := a.exec(t, y, sc); err != nil {
				return err
			}
		}
	case *compile.Assert:
		r, v, err := a.valueAndTarget(t, x.At, x.Value, x.Target, sc)
		if err != nil {
			return err
		}
		t.Assert(r, v)
	case *compile.Send:
		r, v, err := a.valueAndTarget(t, x.At, x.Value, x.Target, sc)
		if err != nil {
			return err
		}
		t.Message(r, v)
	case *compile.Handler:
		r, p, run, err := a.subscription(t, x, sc)
		if err != nil {
			return err
		}
		if x.Kind == compile.During {
			t.During(r, p, run)
			break
		}
		t.OnMessage(r, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			_, err := t.Facet(func(t *dataspace.Turn) error { return run(t, caps) })
			return err
		})
	case *compile.OnStop:
		snap := *sc
		t.OnStop(func(t *dataspace.Turn) error {
			b := a.child(x.At)
			s := snap
			if err := b.exec(t, x.Body, &s); err != nil {
				// Abandon this body only: its facet is stopping anyway,
				// and the actor must not crash (quirk Q7).
				a.m.fail(t, err)
			}
			return nil
		})
	case *compile.Let:
		p, err := a.pattern(t, x.Pat, sc)
		if err != nil {
			return err
		}
		v, err := a.eval(t, x.Expr, sc)
		if err != nil {
			return err
		}
		caps, ok := pattern.Match(p, v)
		if !ok {
			// Quote the pattern as written, not its dataspace form
			// (<group <rec pair> {0: <bind <_>> …}>).
			src := x.PatSrc
			if src == "" {
				src = short(pattern.ToValue(p))
			}
			return a.errorf(x.At, ErrNoMatch, "let: %s does not match %s", short(v), src)
		}
		sc.bindAll(x.Binders, caps)
	case *compile.Cond:
		v, ok := sc.lookup(x.Var)
		if !ok {
			return a.errorf(x.At, ErrUndefined, "=~: undefined variable $%s", x.Var)
		}
		p, err := a.pattern(t, x.Pat, sc)
		if err != nil {
			return err
		}
		if caps, ok := pattern.Match(p, v); ok {
			sc.bindAll(x.Binders, caps)
			return a.exec(t, x.Then, sc)
		}
		return a.exec(t, x.Else, sc)
	default:
		return a.errorf(in.Pos(), ErrPattern, "unknown instruction %T", in)
	}
	return nil
}

// valueAndTarget evaluates an assertion's or message's value and then looks
// up its target: the reference's order, which decides which error a doubly
// broken instruction reports.
func (a *activation) valueAndTarget(t *dataspace.Turn, at preserves.Pos, value compile.Expr, target string, sc *scope) (*dataspace.Ref, preserves.Value, *RuntimeError) {
	v, err := a.eval(t, value, sc)
	if err != nil {
		return nil, nil, err
	}
	r, err := a.target(at, target, sc)
	if err != nil {
		return nil, nil, err
	}
	return r, v, nil
}

// subscription evaluates the pattern and target of h and returns them with
// the callback that runs h's body, in a child activation with the captures
// bound, for each match; a failing body is logged and stops its facet.
func (a *activation) subscription(t *dataspace.Turn, h *compile.Handler, sc *scope) (*dataspace.Ref, pattern.Pattern, func(*dataspace.Turn, []preserves.Value) error, *RuntimeError) {
	p, err := a.pattern(t, h.Pat, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := a.target(h.At, h.Target, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	snap := *sc
	return r, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		b := a.child(h.At)
		s := snap
		s.bindAll(h.Binders, caps)
		if err := b.exec(t, h.Body, &s); err != nil {
			a.m.fail(t, err)
			t.Stop()
		}
		return nil
	}, nil
}

var (
	// ErrUndefined: a variable (or target) is not bound.
	ErrUndefined = errors.New("vm: undefined variable")
	// ErrNotCapability: a target or attenuation subject is not a capability.
	ErrNotCapability = errors.New("vm: not a capability")
)

func (a *activation) target(at preserves.Pos, name string, sc *scope) (*dataspace.Ref, *RuntimeError) {
	v, ok := sc.lookup(name)
	if !ok {
		return nil, a.errorf(at, ErrUndefined, "undefined target variable $%s", name)
	}
	r, ok := dataspace.RefOf(v)
	if !ok {
		return nil, a.errorf(at, ErrNotCapability, "target $%s is not a capability: %s", name, short(v))
	}
	return r, nil
}

// short renders v for an error message, truncated.
func short(v preserves.Value) string {
	s := preserves.FormatTextLimit(v, 80*utf8.UTFMax) // the cut below still applies
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}

// ---------------------------------------------------------------------------
// Expressions

func (a *activation) eval(t *dataspace.Turn, e compile.Expr, sc *scope) (preserves.Value, *RuntimeError) {
	switch x := e.(type) {
	case *compile.Const:
		return x.Value, nil
	case *compile.Ref:
		v, ok := sc.lookup(x.Name)
		if !ok {
			return nil, a.errorf(x.At, ErrUndefined, "undefined variable $%s", x.Name)
		}
		return v, nil
	case *compile.MkRecord:
		l, err := a.eval(t, x.Label, sc)
		if err != nil {
			return nil, err
		}
		fs, err := a.evalAll(t, x.Fields, sc)
		if err != nil {
			return nil, err
		}
		r := preserves.NewRecord(l, fs...)
		if a.m.positions {
			items := make([]preserves.Pos, 1+len(x.Fields))
			items[0] = x.Label.Pos()
			exprPositions(items[1:], x.Fields)
			preserves.Remember(r, x.At, items)
		}
		return r, nil
	case *compile.MkSeq:
		fs, err := a.evalAll(t, x.Elems, sc)
		if err != nil {
			return nil, err
		}
		if a.m.positions {
			preserves.Remember(preserves.Sequence(fs), x.At, exprPositions(make([]preserves.Pos, len(fs)), x.Elems))
		}
		return preserves.Sequence(fs), nil
	case *compile.MkSet:
		fs, err := a.evalAll(t, x.Elems, sc)
		if err != nil {
			return nil, err
		}
		if a.m.positions {
			return preserves.NewSetAt(x.At, fs, exprPositions(make([]preserves.Pos, len(fs)), x.Elems)), nil
		}
		return preserves.NewSet(fs...), nil
	case *compile.MkDict:
		es := make([]preserves.DictEntry, len(x.Keys))
		for i := range x.Keys {
			k, err := a.eval(t, x.Keys[i], sc)
			if err != nil {
				return nil, err
			}
			v, err := a.eval(t, x.Vals[i], sc)
			if err != nil {
				return nil, err
			}
			es[i] = preserves.DictEntry{Key: k, Value: v}
		}
		if a.m.positions {
			return preserves.NewDictionaryAt(x.At, es, exprPositions(make([]preserves.Pos, len(es)), x.Keys),
				exprPositions(make([]preserves.Pos, len(es)), x.Vals)), nil
		}
		return preserves.NewDictionary(es...), nil
	case *compile.MkAttenuate:
		return a.attenuate(t, x, sc)
	case *compile.Call:
		args, err := a.evalAll(t, x.Args, sc)
		if err != nil {
			return nil, err
		}
		v, berr := x.Builtin.Eval(builtinContext{a: a, t: t, at: x.At}, args)
		if berr != nil {
			return nil, &RuntimeError{Pos: x.At, Msg: berr.Error(), Err: berr}
		}
		return v, nil
	}
	return nil, a.errorf(e.Pos(), ErrPattern, "unknown expression %T", e)
}

// exprPositions fills ps with the positions of es, for the position side
// table (compile.Options.Positions): a built compound's items were
// written where their expressions were.
func exprPositions(ps []preserves.Pos, es []compile.Expr) []preserves.Pos {
	for i, e := range es {
		ps[i] = e.Pos()
	}
	return ps
}

func (a *activation) evalAll(t *dataspace.Turn, es []compile.Expr, sc *scope) ([]preserves.Value, *RuntimeError) {
	out := make([]preserves.Value, len(es))
	for i, e := range es {
		v, err := a.eval(t, e, sc)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// ErrAttenuation: caveats could not be attached to a capability.
var ErrAttenuation = errors.New("vm: bad attenuation")

func (a *activation) attenuate(t *dataspace.Turn, x *compile.MkAttenuate, sc *scope) (preserves.Value, *RuntimeError) {
	v, ok := sc.lookup(x.Var)
	if !ok {
		return nil, a.errorf(x.At, ErrUndefined, "attenuation: undefined variable $%s", x.Var)
	}
	r, ok := dataspace.RefOf(v)
	if !ok {
		return nil, a.errorf(x.At, ErrNotCapability, "attenuation: $%s is not a capability: %s", x.Var, short(v))
	}
	cv, err := a.eval(t, x.Caveats, sc)
	if err != nil {
		return nil, err
	}
	cs, cerr := caveat.ListFromValue(cv)
	if cerr != nil {
		return nil, a.errorf(x.At, ErrAttenuation, "attenuation: %v", cerr)
	}
	nr, aerr := r.Attenuate(cs...)
	if aerr != nil {
		return nil, a.errorf(x.At, ErrAttenuation, "attenuation: %v", aerr)
	}
	return dataspace.Embed(nr), nil
}

// builtinContext is what a built-in sees of the running activation.
type builtinContext struct {
	a  *activation
	t  *dataspace.Turn
	at preserves.Pos
}

func (c builtinContext) Now() time.Time    { return c.a.m.opts.Now() }
func (c builtinContext) ScriptDir() string { return c.a.m.scriptDir() }
func (c builtinContext) NewDataspace() preserves.Value {
	return dataspace.Embed(c.t.Create(dataspace.NewDataspace()))
}
func (c builtinContext) FacetHandle() preserves.Value {
	return dataspace.Embed(c.t.Create(&facetEntity{id: c.t.ActiveFacet(), m: c.a.m, at: c.at}))
}

// ---------------------------------------------------------------------------
// Patterns

// ErrPattern: a pattern could not be built from a variable's value.
var ErrPattern = errors.New("vm: bad pattern")

func (a *activation) pattern(t *dataspace.Turn, p compile.Pat, sc *scope) (pattern.Pattern, *RuntimeError) {
	switch x := p.(type) {
	case *compile.PConst:
		return x.Pattern, nil
	case *compile.PLift:
		v, err := a.eval(t, x.Value, sc)
		if err != nil {
			return nil, err
		}
		lp, lerr := pattern.Lift(v)
		if lerr != nil {
			return nil, a.errorf(x.At, ErrPattern, "cannot match %s: %v", short(v), lerr)
		}
		return lp, nil
	case *compile.PBind:
		sub, err := a.pattern(t, x.Sub, sc)
		if err != nil {
			return nil, err
		}
		return pattern.Bind{Pattern: sub}, nil
	case *compile.PRec:
		l, err := a.eval(t, x.Label, sc)
		if err != nil {
			return nil, err
		}
		fs := make([]pattern.Pattern, len(x.Fields))
		for i, f := range x.Fields {
			if fs[i], err = a.pattern(t, f, sc); err != nil {
				return nil, err
			}
		}
		return pattern.Rec(l, fs...), nil
	case *compile.PArr:
		is := make([]pattern.Pattern, len(x.Items))
		for i, f := range x.Items {
			var err *RuntimeError
			if is[i], err = a.pattern(t, f, sc); err != nil {
				return nil, err
			}
		}
		return pattern.Arr(is...), nil
	case *compile.PDict:
		es := make([]pattern.Entry, len(x.Keys))
		for i := range x.Keys {
			sub, err := a.pattern(t, x.Vals[i], sc)
			if err != nil {
				return nil, err
			}
			es[i] = pattern.Entry{Key: x.Keys[i], Pattern: sub}
		}
		return pattern.Dict(es...), nil
	}
	return nil, a.errorf(p.Pos(), ErrPattern, "unknown pattern %T", p)
}

// ---------------------------------------------------------------------------
// Facet handles

// facetEntity is the value of `facet`: the message `stop` stops the facet
// that created it; other messages are logged; assertions are ignored.
type facetEntity struct {
	dataspace.BaseEntity
	id dataspace.FacetID
	m  *machine
	at preserves.Pos
}

func (e *facetEntity) Message(t *dataspace.Turn, v preserves.Value) error {
	if s, ok := v.(preserves.Symbol); ok && s == "stop" {
		t.StopFacet(e.id)
		return nil
	}
	e.m.log.Warn().Str("file", e.m.file).
		Msgf("%s: facet handle ignores message %s (only stop is understood)", e.at, short(v))
	return nil
}
