package vm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/vm"
)

// Example 1 of the language document: constant assertions at $config.
func TestExample1(t *testing.T) {
	w := newWorld(t)
	w.run(`<require-service <daemon console-getty>>
<daemon console-getty "getty 0 /dev/console">`, nil)
	w.wantContents(`<require-service <daemon console-getty>>`, `<daemon console-getty "getty 0 /dev/console">`)
}

// Example 2: during service-state ready/complete, assert up; the derived
// assertion follows its trigger.
func TestExample2(t *testing.T) {
	w := newWorld(t)
	w.run(`? <service-state ?x ready> <service-state $x up>
? <service-state ?x complete> <service-state $x up>`, nil)
	ha := w.assert(mustParse("<service-state a ready>"))
	w.assert(mustParse("<service-state b complete>"))
	w.assert(mustParse("<service-state c failed>"))
	w.wantContents("<service-state a ready>", "<service-state b complete>", "<service-state c failed>",
		"<service-state a up>", "<service-state b up>")
	w.retract(ha)
	w.wantContents("<service-state b complete>", "<service-state c failed>", "<service-state b up>")
}

// The "Using conditionals" idiom: a chain of =~ with a final default.
func TestIdiomConditionals(t *testing.T) {
	const src = `[
  $val =~ pat1 [ <matched 1> ]
  $val =~ <pat2 ?x> [ <matched 2 $x> ]
  <matched none>
]
<after>`
	for val, want := range map[string]string{"pat1": "<matched 1>", "<pat2 9>": "<matched 2 9>", "other": "<matched none>"} {
		w := newWorld(t)
		w.run(src, map[string]preserves.Value{"val": mustParse(val)})
		w.wantContents(want, "<after>")
	}
}

// Example 3 of the language document: an attenuated $config handed to a
// nested config watcher rewrites require-service into require-core-service
// and forwards everything else.
func TestExample3(t *testing.T) {
	w := newWorld(t)
	w.run(`
let ?sys = <* $config [<or [
  <rewrite <require-service ?s> <require-core-service $s>>
  <accept _>
]>]>
<require-service <config-watcher "/etc/syndicate/core" {
  config: $sys
  gatekeeper: $gatekeeper
  log: $log
}>>`, map[string]preserves.Value{"gatekeeper": preserves.Symbol("gk"), "log": preserves.Symbol("lg")})
	var sys *dataspace.Ref
	for _, v := range w.values() {
		r, ok := preserves.Unwrap(v).(*preserves.Record)
		if !ok || !preserves.Equal(r.Label, preserves.Symbol("require-service")) {
			continue
		}
		cw := preserves.Unwrap(r.Fields[0]).(*preserves.Record)
		env := preserves.Unwrap(cw.Fields[1]).(*preserves.Dictionary)
		c, _ := env.Get(preserves.Symbol("config"))
		sys, _ = dataspace.RefOf(c)
		if g, _ := env.Get(preserves.Symbol("gatekeeper")); !preserves.Equal(g, preserves.Symbol("gk")) {
			t.Errorf("gatekeeper entry %v", g)
		}
	}
	if sys == nil {
		t.Fatalf("no config-watcher assertion with a capability: %v", w.contents())
	}
	// Use the attenuated capability as the nested watcher's scripts would.
	w.run(`<require-service <daemon x>> <something-else 1>`, map[string]preserves.Value{"config": dataspace.Embed(sys)})
	got := strings.Join(w.contents(), "\n")
	for _, want := range []string{"<require-core-service <daemon x>>", "<something-else 1>"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, "<require-service <daemon x>>") {
		t.Errorf("require-service was not rewritten:\n%s", got)
	}
}

// Example 4: a message handler that starts a temporary daemon and stops its
// own facet (via a facet handle) when the daemon completes or fails.
func TestExample4(t *testing.T) {
	const src = `
?? <exec/restart ?argv ?restartPolicy> [
  let ?id = timestamp
  let ?facet = facet
  let ?d = <temporary-exec $id $argv>
  <run-service <daemon $d>>
  <daemon $d {
    argv: $argv,
    readyOnStart: #f,
    restart: $restartPolicy,
  }>
  ? <service-state <daemon $d> complete> [$facet ! stop]
  ? <service-state <daemon $d> failed> [$facet ! stop]
]`
	for _, outcome := range []string{"complete", "failed"} {
		t.Run(outcome, func(t *testing.T) {
			w := newWorld(t)
			w.run(src, nil)
			w.wantContents()
			w.send(mustParse(`<exec/restart ["ls" "-l"] never>`))
			d := `<temporary-exec "` + fixedStamp + `" ["ls" "-l"]>`
			w.wantContents(
				`<run-service <daemon `+d+`>>`,
				`<daemon `+d+` {argv: ["ls" "-l"], readyOnStart: #f, restart: never}>`)
			// An unrelated state changes nothing.
			h := w.assert(mustParse(`<service-state <daemon ` + d + `> started>`))
			if len(w.contents()) != 3 {
				t.Fatalf("contents %v", w.contents())
			}
			w.retract(h)
			w.assert(mustParse(`<service-state <daemon ` + d + `> ` + outcome + `>`))
			w.wantContents(`<service-state <daemon ` + d + `> ` + outcome + `>`)
			if errs := w.runtimeErrors(); len(errs) != 0 {
				t.Errorf("errors: %v", errs)
			}
		})
	}
}

// logEntity records the messages sent to $log.
type logEntity struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	msgs []string
}

func (l *logEntity) Message(t *dataspace.Turn, v preserves.Value) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, preserves.FormatText(v))
	return nil
}

// The idioms of "Setting the active target register".
func TestIdiomTargets(t *testing.T) {
	w := newWorld(t)
	lg := &logEntity{}
	var logRef *dataspace.Ref
	w.do(func(t *dataspace.Turn) error { logRef = t.Create(lg); return nil })
	w.run(`
$log ! <log "-" { line: "Hello, world!" }>
$config ? <configure-interface ?ifname <dhcp>> [
  <require-service <daemon <udhcpc $ifname>>>
]
$config ? <service-object <daemon interface-monitor> ?cap> [
  $cap {
    machine: $machine
  }
]`, map[string]preserves.Value{"log": dataspace.Embed(logRef), "machine": preserves.String("box")})
	lg.mu.Lock()
	if strings.Join(lg.msgs, "|") != `<log "-" {line: "Hello, world!"}>` {
		t.Errorf("log got %v", lg.msgs)
	}
	lg.mu.Unlock()
	w.assert(mustParse(`<configure-interface eth0 <dhcp>>`))
	w.assert(mustParse(`<configure-interface eth1 <static>>`))
	var monitor *dataspace.Ref
	mon := &recorder{present: map[dataspace.Handle]preserves.Value{}}
	w.do(func(t *dataspace.Turn) error { monitor = t.Create(mon); return nil })
	w.assert(preserves.Rec("service-object", mustParse("<daemon interface-monitor>"), dataspace.Embed(monitor)))
	got := strings.Join(w.contents(), "\n")
	if !strings.Contains(got, "<require-service <daemon <udhcpc eth0>>>") || strings.Contains(got, "eth1>>>") {
		t.Errorf("contents:\n%s", got)
	}
	mon.mu.Lock()
	defer mon.mu.Unlock()
	if len(mon.present) != 1 {
		t.Fatalf("monitor holds %v", mon.present)
	}
	for _, v := range mon.present {
		if preserves.FormatText(v) != `{machine: "box"}` {
			t.Errorf("monitor got %s", preserves.FormatText(v))
		}
	}
}

// The "dataspaces as ad-hoc entities" idiom, with peers using the entity.
func TestIdiomDataspaceEntity(t *testing.T) {
	w := newWorld(t)
	w.run(`
let ?ds = dataspace
$config += <my-entity $ds>
$ds [
  ? <pat1 ?x> [ $config <saw1 $x> ]
  ? <pat2> [ $config <saw2> ]
  ?? <pat3 ?m> [ $config ! <got3 $m> ]
  ?? <pat4> [ $config <got4> ]
]`, nil)
	var ent *dataspace.Ref
	for _, v := range w.values() {
		if r, ok := preserves.Unwrap(v).(*preserves.Record); ok && preserves.Equal(r.Label, preserves.Symbol("my-entity")) {
			ent, _ = dataspace.RefOf(r.Fields[0])
		}
	}
	if ent == nil {
		t.Fatal("no my-entity assertion")
	}
	var h dataspace.Handle
	w.do(func(t *dataspace.Turn) error {
		h = t.Assert(ent, mustParse("<pat1 7>"))
		t.Assert(ent, mustParse("<pat2>"))
		t.Message(ent, mustParse("<pat3 hi>"))
		t.Message(ent, mustParse("<pat4>"))
		return nil
	})
	w.settle()
	w.wantContents("<my-entity #:x>", "<saw1 7>", "<saw2>", "<got4>")
	w.wantMessages("<got3 hi>")
	w.retract(h)
	w.wantContents("<my-entity #:x>", "<saw2>", "<got4>")
}

// A script in another actor than its dataspace behaves the same.
func TestCrossActor(t *testing.T) {
	w := newWorld(t)
	prog := w.compile("x.pr", "? <item ?n> <seen $n>\n<hello>")
	done := make(chan struct{})
	var errs []error
	actor := w.sys.Spawn("script", func(t *dataspace.Turn) error {
		defer close(done)
		_, err := vm.RunOptions(t, prog, w.env(nil), w.options())
		errs = append(errs, err)
		return nil
	})
	<-done
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	h := w.assert(mustParse("<item 1>"))
	waitFor(t, func() bool { return len(w.contents()) == 3 })
	w.wantContents("<hello>", "<item 1>", "<seen 1>")
	w.retract(h)
	waitFor(t, func() bool { return len(w.contents()) == 1 })
	w.wantContents("<hello>")
	if !actor.Alive() {
		t.Error("script actor died")
	}
}

// One failing script leaves the others running in the same actor.
func TestOtherScriptsCarryOn(t *testing.T) {
	w := newWorld(t)
	w.run("<good 1>", nil)
	w.run("<bad 1>\n<bad $nope>", nil)
	w.run("<good 2>", nil)
	w.wantContents("<good 1>", "<good 2>")
	if len(w.runtimeErrors()) != 1 {
		t.Errorf("errors %v", w.runtimeErrors())
	}
}

// Every run-time error class, checked with errors.Is at its exact position,
// logged as file:line:col.
func TestRuntimeErrorClasses(t *testing.T) {
	cases := []struct {
		src   string
		env   map[string]preserves.Value
		class error
		at    string
	}{
		{"<a>\n  <b $x>", nil, vm.ErrUndefined, "e.pr:2:6"},
		{"$t <b>", map[string]preserves.Value{"t": preserves.Int(1)}, vm.ErrNotCapability, "e.pr:1:4"},
		{"let <a ?x> = <b 1>", nil, vm.ErrNoMatch, "e.pr:1:1"},
		{"let ?a = <* $n [<accept _>]>", map[string]preserves.Value{"n": preserves.Int(1)}, vm.ErrNotCapability, "e.pr:1:10"},
		{"let ?s = #{1}\n? [$s] []", nil, vm.ErrPattern, "e.pr:2:4"},
		{"let ?s = stringify $config", nil, vm.ErrStringify, "e.pr:1:10"},
		{"$v =~ _ [] []", nil, vm.ErrUndefined, "e.pr:1:4"},
		{"? <go> [ ? <x> [ <y $z> ] ]", nil, vm.ErrUndefined, "e.pr:1:21"},
	}
	for _, c := range cases {
		w := newWorld(t)
		w.runProg(w.compile("e.pr", c.src), c.env)
		w.assert(mustParse("<go>"))
		w.assert(mustParse("<x>"))
		errs := w.runtimeErrors()
		if len(errs) != 1 {
			t.Errorf("%q: errors %v", c.src, errs)
			continue
		}
		e := errs[0]
		if !errors.Is(e, c.class) {
			t.Errorf("%q: %v is not %v", c.src, e, c.class)
		}
		if e.Pos.String() != c.at || !strings.HasPrefix(e.Error(), c.at+": ") {
			t.Errorf("%q: error at %s, want %s", c.src, e.Error(), c.at)
		}
		if !strings.Contains(w.log.String(), `"message":"`+c.at+": ") {
			t.Errorf("%q: not logged with position:\n%s", c.src, w.log.String())
		}
	}
}

// Errors in nested handlers carry a backtrace of the handlers.
func TestBacktrace(t *testing.T) {
	w := newWorld(t)
	w.runProg(w.compile("b.pr", "? <go> [\n  ?? <x> [\n    <y $z>\n  ]\n]"), nil)
	w.assert(mustParse("<go>"))
	w.send(mustParse("<x>"))
	errs := w.runtimeErrors()
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	want := "b.pr:3:8: undefined variable $z\n\tin handler at b.pr:2:3\n\tin handler at b.pr:1:1"
	if got := errs[0].Backtrace(); got != want {
		t.Errorf("backtrace:\n%s\nwant:\n%s", got, want)
	}
}

func TestStepBudgetAndCancel(t *testing.T) {
	w := newWorld(t)
	prog := w.compile("s.pr", "<a> <b> <c> <d>")
	opts := w.options()
	opts.MaxSteps = 3
	w.do(func(t *dataspace.Turn) error { _, err := vm.RunOptions(t, prog, w.env(nil), opts); return err })
	w.settle()
	errs := w.runtimeErrors()
	if len(errs) != 1 || !errors.Is(errs[0], vm.ErrBudget) || errs[0].Pos.String() != "s.pr:1:9" {
		t.Errorf("budget: %v", errs)
	}
	w.wantContents()

	ctx, cancel := context.WithCancel(context.Background())
	opts = w.options()
	opts.Context = ctx
	w.runProgOpts(w.compile("c.pr", "? <go> <went>\n<here>"), opts)
	cancel()
	w.assert(mustParse("<go>"))
	errs = w.runtimeErrors()
	if len(errs) != 2 || !errors.Is(errs[1], vm.ErrCancelled) || errs[1].Pos.String() != "c.pr:1:8" {
		t.Errorf("cancel: %v", errs)
	}
	w.wantContents("<go>", "<here>")
}

func (w *world) runProgOpts(p *compile.Program, opts vm.Options) {
	w.t.Helper()
	w.do(func(t *dataspace.Turn) error { _, err := vm.RunOptions(t, p, w.env(nil), opts); return err })
	w.settle()
}

// waitFor polls cond every millisecond until it holds, failing the test
// after a deadline (used where another actor's progress is awaited).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached before the deadline")
		}
		<-time.After(time.Millisecond)
	}
}

func TestFacetHandle(t *testing.T) {
	w := newWorld(t)
	w.run("let ?f = facet\n<alive>\n? <poke> $f ! poke\n? <kill> $f ! stop", nil)
	w.assert(mustParse("<poke>"))
	w.wantContents("<alive>", "<poke>")
	if !strings.Contains(w.log.String(), "t.pr:1:10: facet handle ignores message poke") {
		t.Errorf("no warning logged:\n%s", w.log.String())
	}
	w.assert(mustParse("<kill>"))
	w.wantContents("<poke>", "<kill>")
}

func TestScriptDir(t *testing.T) {
	w := newWorld(t)
	w.runProg(w.compile("/etc/s/x.pr", "let ?d = scriptdir <d $d>"), nil)
	w.runProg(w.compile("", "let ?d = scriptdir <e $d>"), nil)
	w.runProg(w.compile("", "let ?d = scriptdir <f $d>"), map[string]preserves.Value{"scriptdir": preserves.String("/given")})
	w.wantContents(`<d "/etc/s">`, `<e ".">`, `<f "/given">`)
}

// Run's own error is nil even when the script fails, so a caller in a turn
// can return it without crashing its actor; the facet is stopped.
func TestRunReturnsNilOnScriptError(t *testing.T) {
	w := newWorld(t)
	prog := w.compile("r.pr", "<a>\n<b $nope>")
	w.do(func(t *dataspace.Turn) error {
		_, err := vm.Run(t, prog, w.env(nil), w.options().Logger)
		if err != nil {
			return err
		}
		return nil
	})
	w.settle()
	w.wantContents()
	if !strings.Contains(w.log.String(), "r.pr:2:4: undefined variable $nope") {
		t.Errorf("log:\n%s", w.log.String())
	}
}

func TestRunNilProgram(t *testing.T) {
	w := newWorld(t)
	w.do(func(t *dataspace.Turn) error {
		if _, err := vm.Run(t, nil, nil, w.options().Logger); !errors.Is(err, vm.ErrNilProgram) {
			return fmt.Errorf("Run(nil) = %v", err)
		}
		return nil
	})
	// No environment at all: the default target is undefined, a run-time
	// error, not a crash.
	w.runProg(w.compile("n.pr", "<a>"), nil)
	w.do(func(t *dataspace.Turn) error {
		_, err := vm.RunOptions(t, w.compile("n.pr", "<a>"), nil, w.options())
		return err
	})
	w.settle()
	errs := w.runtimeErrors()
	if len(errs) != 1 || !errors.Is(errs[0], vm.ErrUndefined) || errs[0].Error() != "n.pr:1:1: undefined target variable $config" {
		t.Errorf("errors %v", errs)
	}
}

// A let mismatch quotes the pattern as written, not its dataspace form.
func TestLetMismatchQuotesSource(t *testing.T) {
	w := newWorld(t)
	w.runProg(w.compile("m.pr", "let <pair ?a ?b> = <triple 1 2 3>"), nil)
	errs := w.runtimeErrors()
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	if got, want := errs[0].Error(), "m.pr:1:1: let: <triple 1 2 3> does not match <pair ?a ?b>"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}
