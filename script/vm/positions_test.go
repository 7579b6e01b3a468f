package vm_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
)

// With compile.Options.Positions, asserted values are plain, and the
// position side table knows where each part was written: constants and
// run-time-built compounds alike, atoms through their parents.
func TestPositionsInAssertedValues(t *testing.T) {
	w := newWorld(t)
	src := "# a comment\n<daemon d {argv: \"x\", restart: sometimes}>\nlet ?r = [1]\nlet ?s = on-error\n<daemon e {restart: $r, x: $s, y: #{$s}}>\n"
	prog, err := compile.CompileFileOptions("p.pr", []byte(src), compile.Options{Positions: true})
	if err != nil {
		t.Fatal(err)
	}
	w.runProg(prog, nil)
	// Only the running facet holds the program's constants now: their
	// positions must survive collections (the program's Consts own
	// them), while the top level's instructions, which ran once, go.
	body := weak.Make(prog.Body)
	prog = nil
	runtime.GC()
	runtime.GC()
	if body.Value() != nil {
		t.Error("the running facet keeps the top level's instructions")
	}
	w.wantContents(`<daemon d {argv: "x", restart: sometimes}>`, `<daemon e {restart: [1], x: on-error, y: #{on-error}}>`)
	found := 0
	for _, v := range w.values() {
		r, ok := v.(*preserves.Record)
		if !ok || !preserves.Equal(r.Label, preserves.Symbol("daemon")) {
			continue
		}
		d := r.Fields[1].(*preserves.Dictionary)
		var got, want []string
		switch preserves.FormatText(r.Fields[0]) {
		case "d":
			got = []string{preserves.PosOf(v).String(), preserves.ItemPos(r, 0).String(), preserves.FieldPos(r, 0).String(),
				preserves.FieldPos(r, 1).String(), preserves.EntryPos(d, preserves.Symbol("restart")).String()}
			want = []string{"p.pr:2:1", "p.pr:2:2", "p.pr:2:9", "p.pr:2:11", "p.pr:2:32"}
		case "e":
			// The record and dictionaries are built at run time; $r's
			// value keeps the position of its definition, an atom bound
			// to $s is placed where $s is used.
			y, _ := d.Get(preserves.Symbol("y"))
			got = []string{preserves.PosOf(v).String(), preserves.FieldPos(r, 1).String(),
				preserves.EntryPos(d, preserves.Symbol("restart")).String(), preserves.EntryPos(d, preserves.Symbol("x")).String(),
				preserves.PosOf(y).String(), preserves.ItemPos(y, 0).String()}
			want = []string{"p.pr:5:1", "p.pr:5:11", "p.pr:3:10", "p.pr:5:28", "p.pr:5:35", "p.pr:5:37"}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: positions %v, want %v", preserves.FormatText(v), got, want)
		}
		found++
	}
	if found != 2 {
		t.Fatalf("found %d daemon records", found)
	}
}

// Without the option nothing is remembered.
func TestNoPositionsByDefault(t *testing.T) {
	w := newWorld(t)
	w.run("<daemon d {restart: sometimes}>\nlet ?r = 1\n<x {k: $r}>", nil)
	if len(w.values()) < 2 {
		t.Fatalf("values %v", w.values())
	}
	for _, v := range w.values() {
		if p := preserves.PosOf(v); p.IsValid() {
			t.Errorf("%s has position %s", preserves.FormatText(v), p)
		}
	}
}

// Every script of the repository (the testdata of the script packages and
// the shipped etc/), compiled with positions as the config watcher does,
// asserts and sends only plain values: the world's dataspace fails the
// test on any annotation at any depth (plainOnly).
func TestEveryScriptAssertsPlainValues(t *testing.T) {
	var files []string
	for _, glob := range []string{"testdata/*.pr", "../testdata/*.pr", "../compile/testdata/*.pr",
		"../validate/testdata/*.pr", "../../etc/syndicate/*.pr", "../../etc/services/*.pr"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	ran := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := compile.CompileFileOptions(f, src, compile.Options{Positions: true})
		if err != nil {
			continue // a file of deliberate errors
		}
		t.Run(filepath.ToSlash(f), func(t *testing.T) {
			w := newWorld(t)
			env := map[string]preserves.Value{"log": dataspace.Embed(w.ds), "gatekeeper": dataspace.Embed(w.ds)}
			w.runProg(prog, env)
			// Give the handlers something to react to.
			w.assert(preserves.NewRecord(preserves.Symbol("service-state"), preserves.Symbol("x"), preserves.Symbol("ready")))
			w.send(preserves.Symbol("stop"))
		})
		ran++
	}
	if ran < 10 {
		t.Fatalf("only %d scripts ran", ran)
	}
}
