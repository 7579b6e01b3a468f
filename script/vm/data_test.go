package vm_test

import (
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/scripttest"
)

// anonymise replaces every embedded value by #:x so expectations can
// mention capabilities.
func anonymise(v preserves.Value) preserves.Value {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Embedded:
		return preserves.NewEmbedded(preserves.Symbol("x"))
	case *preserves.Record:
		fs := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			fs[i] = anonymise(f)
		}
		return preserves.NewRecord(anonymise(x.Label), fs...)
	case preserves.Sequence:
		fs := make([]preserves.Value, len(x))
		for i, f := range x {
			fs[i] = anonymise(f)
		}
		return preserves.Sequence(fs)
	case *preserves.Set:
		fs := make([]preserves.Value, 0, x.Len())
		for _, f := range x.Elems() {
			fs = append(fs, anonymise(f))
		}
		return preserves.NewSet(fs...)
	case *preserves.Dictionary:
		es := make([]preserves.DictEntry, 0, x.Len())
		for _, e := range x.Entries() {
			es = append(es, preserves.DictEntry{Key: anonymise(e.Key), Value: anonymise(e.Value)})
		}
		return preserves.NewDictionary(es...)
	}
	return preserves.Strip(v)
}

func texts(vs []preserves.Value) []string {
	var out []string
	for _, v := range vs {
		out = append(out, preserves.FormatText(anonymise(v)))
	}
	return out
}

// TestRunData runs testdata/run.pr (see its header for the format).
func TestRunData(t *testing.T) { runData(t, "testdata/run.pr") }

// TestDialectsRunData runs testdata/dialects.pr: caveats read structurally
// block what they must and pass what they must.
func TestDialectsRunData(t *testing.T) { runData(t, "testdata/dialects.pr") }

func runData(t *testing.T, file string) {
	chunks, err := scripttest.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		t.Run(c.Name(), func(t *testing.T) {
			w := newWorld(t)
			env := map[string]preserves.Value{}
			for _, a := range c.Args("env") {
				name, val, _ := strings.Cut(a, " ")
				env[name] = mustParse(val)
			}
			handles := map[string]dataspace.Handle{}
			for _, a := range c.Args("assert") {
				v := mustParse(a)
				handles[preserves.FormatText(v)] = w.assert(v)
			}
			// With positions, as the config watcher compiles: the world's
			// dataspace fails the test on any annotated value.
			prog, err := compile.CompileFileOptions(c.File, []byte(c.Src), compile.Options{Positions: true})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			w.runProg(prog, env)
			for _, a := range c.Args("send") {
				w.send(mustParse(a))
			}
			for _, a := range c.Args("retract") {
				h, ok := handles[preserves.FormatText(mustParse(a))]
				if !ok {
					t.Fatalf("retract %s: not asserted by a directive", a)
				}
				w.retract(h)
			}
			var want []string
			for _, a := range c.Args("want") {
				a = strings.ReplaceAll(a, `"DIR"`, strconv.Quote(abs))
				want = append(want, preserves.FormatText(anonymise(mustParse(a))))
			}
			var got []string
			for _, v := range w.values() {
				if r, ok := preserves.Unwrap(v).(*preserves.Record); ok && preserves.Equal(r.Label, preserves.Symbol("Observe")) {
					continue
				}
				got = append(got, preserves.FormatText(anonymise(v)))
			}
			if !sameSet(got, want) {
				t.Errorf("dataspace contents:\n got: %v\nwant: %v", got, want)
			}
			w.rec.mu.Lock()
			heard := texts(w.rec.msgs)
			w.rec.mu.Unlock()
			var wantHeard []string
			for _, a := range c.Args("heard") {
				wantHeard = append(wantHeard, preserves.FormatText(anonymise(mustParse(a))))
			}
			if strings.Join(heard, " ") != strings.Join(wantHeard, " ") {
				t.Errorf("messages:\n got: %v\nwant: %v", heard, wantHeard)
			}
			var errs []string
			for _, e := range w.runtimeErrors() {
				errs = append(errs, e.Error())
			}
			for _, p := range c.Match(true, errs) {
				t.Error(p)
			}
			// Every run-time error is also in the log with its position.
			for _, e := range errs {
				if !strings.Contains(w.log.String(), strconv.Quote(e)[1:len(strconv.Quote(e))-1]) {
					t.Errorf("error %q not logged; log:\n%s", e, w.log.String())
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// update is accepted so that `go test ./script/... -update` (which
// regenerates the compile package's golden files) runs in every package.
var _ = flag.Bool("update", false, "regenerate golden files (used by script/compile)")
