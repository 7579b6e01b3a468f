package vm_test

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
)

// With compile.Options.Positions, asserted values carry their source
// positions at every depth, constants and run-time-built compounds alike,
// and still equal their plain forms.
func TestPositionsInAssertedValues(t *testing.T) {
	w := newWorld(t)
	src := "# a comment\n<daemon d {argv: \"x\", restart: sometimes}>\nlet ?r = [1]\n<daemon e {restart: $r}>\n"
	prog, err := compile.CompileFileOptions("p.pr", []byte(src), compile.Options{Positions: true})
	if err != nil {
		t.Fatal(err)
	}
	w.runProg(prog, nil)
	w.wantContents(`<daemon d {argv: "x", restart: sometimes}>`, `<daemon e {restart: [1]}>`)
	found := 0
	for _, v := range w.values() {
		r, ok := preserves.Unwrap(v).(*preserves.Record)
		if !ok || !preserves.Equal(r.Label, preserves.Symbol("daemon")) {
			continue
		}
		d := preserves.Unwrap(r.Fields[1]).(*preserves.Dictionary)
		restart, _ := d.Get(preserves.Symbol("restart"))
		var want [3]string
		switch preserves.FormatText(r.Fields[0]) {
		case "d":
			want = [3]string{"p.pr:2:1", "p.pr:2:11", "p.pr:2:32"}
		case "e":
			// The record and dictionary are built at run time; $r's value
			// keeps the position of its definition.
			want = [3]string{"p.pr:4:1", "p.pr:4:11", "p.pr:3:10"}
		}
		got := [3]string{preserves.PosOf(v).String(), preserves.PosOf(r.Fields[1]).String(), preserves.PosOf(restart).String()}
		if got != want {
			t.Errorf("%s: positions %v, want %v", preserves.FormatText(v), got, want)
		}
		if a, ok := v.(*preserves.Annotated); ok && len(a.Anns) != 0 {
			t.Errorf("comment kept as annotation: %v", a.Anns)
		}
		found++
	}
	if found != 2 {
		t.Fatalf("found %d daemon records", found)
	}
}

// Without the option no value is wrapped.
func TestNoPositionsByDefault(t *testing.T) {
	w := newWorld(t)
	w.run("<daemon d {restart: sometimes}>\nlet ?r = 1\n<x {k: $r}>", nil)
	for _, v := range w.values() {
		if hasAnnotated(v) {
			t.Errorf("%s carries annotations", preserves.FormatText(v))
		}
	}
}

func hasAnnotated(v preserves.Value) bool {
	switch x := v.(type) {
	case *preserves.Annotated:
		return true
	case *preserves.Record:
		if hasAnnotated(x.Label) {
			return true
		}
		for _, f := range x.Fields {
			if hasAnnotated(f) {
				return true
			}
		}
	case preserves.Sequence:
		for _, f := range x {
			if hasAnnotated(f) {
				return true
			}
		}
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			if hasAnnotated(e.Key) || hasAnnotated(e.Value) {
				return true
			}
		}
	}
	return false
}
