package vm_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/vm"
)

// fixedNow is the clock of every test run, so `timestamp` is predictable.
var fixedNow = time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC)

const fixedStamp = "2025-01-02T03:04:05.678901+00:00"

// recorder is an entity observing `<bind <_>>` in a dataspace: it keeps the
// current assertions (Observe records excluded) and the messages seen. The
// actor writes, the test goroutine reads, hence the mutex.
type recorder struct {
	dataspace.BaseEntity
	mu      sync.Mutex
	present map[dataspace.Handle]preserves.Value
	msgs    []preserves.Value
}

func first(v preserves.Value) preserves.Value {
	if s, ok := preserves.Unwrap(v).(preserves.Sequence); ok && len(s) == 1 {
		return s[0]
	}
	return v
}

func (r *recorder) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.present[h] = first(v)
	return nil
}

func (r *recorder) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.present, h)
	return nil
}

func (r *recorder) Message(t *dataspace.Turn, v preserves.Value) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, first(v))
	return nil
}

// plainOnly is a dataspace that fails the test on any value carrying an
// annotation, at any depth: script values enter the dataspace plain, their
// positions kept aside (compile.Options.Positions).
type plainOnly struct {
	dataspace.Entity
	tb testing.TB
}

func (p *plainOnly) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	p.check("asserted", v)
	return p.Entity.Assert(t, v, h)
}

func (p *plainOnly) Message(t *dataspace.Turn, v preserves.Value) error {
	p.check("sent", v)
	return p.Entity.Message(t, v)
}

func (p *plainOnly) check(what string, v preserves.Value) {
	if preserves.HasAnnotations(v) {
		p.tb.Errorf("%s an annotated value: %s", what, preserves.FormatText(v))
	}
}

// world is a system with one actor holding a dataspace ($config, which
// rejects annotated values), a recorder observing everything in it, and the
// scripts under test.
type world struct {
	t    testing.TB
	sys  *dataspace.System
	fr   dataspace.FacetRef
	ds   *dataspace.Ref
	rec  *recorder
	log  *testutil.Buffer
	mu   sync.Mutex
	errs []*vm.RuntimeError
}

func newWorld(t testing.TB) *world {
	w := &world{t: t, rec: &recorder{present: map[dataspace.Handle]preserves.Value{}}, log: &testutil.Buffer{}}
	w.sys = dataspace.NewSystem(dataspace.Options{Logger: zerolog.New(w.log)})
	ready := make(chan struct{})
	w.sys.Spawn("world", func(t *dataspace.Turn) error {
		w.ds = t.Create(&plainOnly{Entity: dataspace.NewDataspace(), tb: w.t})
		t.Assert(w.ds, dataspace.Observe(pattern.Capture(), t.Create(w.rec)))
		w.fr = t.FacetRef()
		close(ready)
		return nil
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("world actor did not boot")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w.sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return w
}

// do runs fn in a turn of the world actor and waits for it.
func (w *world) do(fn func(t *dataspace.Turn) error) {
	w.t.Helper()
	done := make(chan error, 1)
	if !w.fr.Activate(func(t *dataspace.Turn) error {
		err := fn(t)
		done <- err
		return err
	}) {
		w.t.Fatal("world actor is gone")
	}
	select {
	case err := <-done:
		if err != nil {
			w.t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		w.t.Fatal("turn did not run")
	}
}

func (w *world) options() vm.Options {
	return vm.Options{
		Logger: zerolog.New(w.log),
		Now:    func() time.Time { return fixedNow },
		OnError: func(e *vm.RuntimeError) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.errs = append(w.errs, e)
		},
	}
}

func (w *world) compile(file, src string) *compile.Program {
	w.t.Helper()
	prog, err := compile.CompileFile(file, []byte(src))
	if err != nil {
		w.t.Fatalf("compile: %v", err)
	}
	return prog
}

// env returns the default environment {config: $ds} plus extra.
func (w *world) env(extra map[string]preserves.Value) map[string]preserves.Value {
	env := map[string]preserves.Value{"config": dataspace.Embed(w.ds)}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// run compiles and runs src in the world actor and settles.
func (w *world) run(src string, extra map[string]preserves.Value) dataspace.FacetID {
	w.t.Helper()
	return w.runProg(w.compile("t.pr", src), extra)
}

func (w *world) runProg(prog *compile.Program, extra map[string]preserves.Value) dataspace.FacetID {
	w.t.Helper()
	var id dataspace.FacetID
	w.do(func(t *dataspace.Turn) error {
		var err error
		id, err = vm.RunOptions(t, prog, w.env(extra), w.options())
		return err
	})
	w.settle()
	return id
}

// settle waits until every event caused so far has been handled: a few
// sync round trips through the dataspace (each one flushes one more hop of
// assert → handler → assert chains).
func (w *world) settle() {
	w.t.Helper()
	for i := 0; i < 6; i++ {
		done := make(chan struct{})
		w.do(func(t *dataspace.Turn) error {
			t.Sync(w.ds, func(t *dataspace.Turn) error { close(done); return nil })
			return nil
		})
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			w.t.Fatal("sync did not complete")
		}
	}
}

func (w *world) assert(v preserves.Value) (h dataspace.Handle) {
	w.do(func(t *dataspace.Turn) error { h = t.Assert(w.ds, v); return nil })
	w.settle()
	return h
}

func (w *world) retract(h dataspace.Handle) {
	w.do(func(t *dataspace.Turn) error { t.Retract(h); return nil })
	w.settle()
}

func (w *world) send(v preserves.Value) {
	w.do(func(t *dataspace.Turn) error { t.Message(w.ds, v); return nil })
	w.settle()
}

// contents returns the dataspace's assertions (Observe records excluded) as
// sorted text.
func (w *world) contents() []string {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	var out []string
	for _, v := range w.rec.present {
		if r, ok := preserves.Unwrap(v).(*preserves.Record); ok && preserves.Equal(r.Label, preserves.Symbol("Observe")) {
			continue
		}
		out = append(out, preserves.FormatText(anonymise(v)))
	}
	sort.Strings(out)
	return out
}

func (w *world) values() []preserves.Value {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	var out []preserves.Value
	for _, v := range w.rec.present {
		out = append(out, v)
	}
	return out
}

// messages returns the messages seen so far as text, in order.
func (w *world) messages() []string {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	var out []string
	for _, v := range w.rec.msgs {
		out = append(out, preserves.FormatText(v))
	}
	return out
}

func (w *world) runtimeErrors() []*vm.RuntimeError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*vm.RuntimeError(nil), w.errs...)
}

func canon(vals ...string) []string {
	out := make([]string, 0, len(vals))
	for _, s := range vals {
		v, err := preserves.ParseText(s)
		if err != nil {
			panic(err)
		}
		out = append(out, preserves.FormatText(v))
	}
	sort.Strings(out)
	return out
}

// wantContents checks the dataspace holds exactly want (text values).
func (w *world) wantContents(want ...string) {
	w.t.Helper()
	got, exp := w.contents(), canon(want...)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		w.t.Errorf("dataspace contents:\n got: %v\nwant: %v", got, exp)
	}
}

func (w *world) wantMessages(want ...string) {
	w.t.Helper()
	got := w.messages()
	var exp []string
	for _, s := range want {
		v, err := preserves.ParseText(s)
		if err != nil {
			panic(err)
		}
		exp = append(exp, preserves.FormatText(v))
	}
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		w.t.Errorf("messages:\n got: %v\nwant: %v", got, exp)
	}
}

func mustParse(s string) preserves.Value {
	v, err := preserves.ParseText(s)
	if err != nil {
		panic(err)
	}
	return v
}
