package script_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/scripttest"
)

// TestErrorsData runs testdata/errors.pr: every compile error kind, each
// checked at its exact file:line:col.
func TestErrorsData(t *testing.T) {
	chunks, err := scripttest.Read("testdata/errors.pr")
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 40 {
		t.Fatalf("only %d chunks read", len(chunks))
	}
	for _, c := range chunks {
		t.Run(c.Name(), func(t *testing.T) {
			_, errs := script.ParseFile(c.File, []byte(c.Src))
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
				var pe *preserves.Error
				if !errors.Is(e, script.ErrScript) && !errors.As(e, &pe) {
					t.Errorf("%v: neither a script nor a syntax error", e)
				}
			}
			for _, p := range c.Match(false, got) {
				t.Error(p)
			}
		})
	}
}

func sym(s string) preserves.Value { return preserves.Symbol(s) }

// TestParseHandMade parses values without positions (as a host program might
// build them) and checks the AST shape.
func TestParseHandMade(t *testing.T) {
	vals := []preserves.Value{
		sym("$ds"), sym("?"), preserves.Rec("Present", sym("?who")), preserves.Sequence{
			sym("!"), preserves.Rec("log", sym("$who")),
		},
		sym("$v"), sym("=~"), preserves.Rec("on", sym("?why")), preserves.Rec("yes", sym("$why")),
		preserves.Rec("no"), preserves.Rec("after"),
	}
	f, errs := script.ParseValues("", vals)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(f.Body) != 2 {
		t.Fatalf("want 2 top-level instructions, got %d", len(f.Body))
	}
	rt, ok := f.Body[0].(*script.Retarget)
	if !ok || rt.Var != "ds" {
		t.Fatalf("first: %#v", f.Body[0])
	}
	d, ok := rt.Body.(*script.During)
	if !ok {
		t.Fatalf("retarget body %T", rt.Body)
	}
	if got := script.Binders(d.Pat); !reflect.DeepEqual(got, []string{"who"}) {
		t.Errorf("binders %v", got)
	}
	if _, ok := d.Body.(*script.Block); !ok {
		t.Errorf("during body %T", d.Body)
	}
	rt2 := f.Body[1].(*script.Retarget)
	cond, ok := rt2.Body.(*script.Cond)
	if !ok {
		t.Fatalf("second retarget body %T", rt2.Body)
	}
	// The false branch swallows every remaining instruction.
	if len(cond.Else) != 2 {
		t.Errorf("else has %d instructions, want 2", len(cond.Else))
	}
}

// TestBindersPreorder checks quirk Q6: `<?w <inner ?n>>` lists w before n.
func TestBindersPreorder(t *testing.T) {
	vals := []preserves.Value{sym("let"),
		preserves.Rec("outer", preserves.Rec("?w", preserves.Rec("inner", sym("?n"))), sym("?z"),
			preserves.NewDictionary(
				preserves.DictEntry{Key: sym("b"), Value: sym("?kb")},
				preserves.DictEntry{Key: sym("a"), Value: sym("?ka")})),
		sym("="), sym("$x")}
	f, errs := script.ParseValues("", vals)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	got := script.Binders(f.Body[0].(*script.Let).Pat)
	want := []string{"w", "n", "z", "ka", "kb"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("binders %v, want %v", got, want)
	}
}

func TestSyntaxErrorPosition(t *testing.T) {
	_, errs := script.ParseFile("bad.pr", []byte("<a>\n<b\n"))
	if len(errs) != 1 {
		t.Fatalf("errors: %v", errs)
	}
	var pe *preserves.Error
	if !errors.As(errs[0], &pe) {
		t.Fatalf("%v does not wrap a *preserves.Error", errs[0])
	}
	if !strings.HasPrefix(errs[0].Error(), "bad.pr:") {
		t.Errorf("no file position: %v", errs[0])
	}
	if errors.Is(errs[0], script.ErrScript) {
		t.Errorf("a syntax error is not ErrScript")
	}
}

// TestSyntaxErrorKeepsEarlierErrors: errors before a syntax error are still
// reported, but not the operand cut off by it.
func TestSyntaxErrorKeepsEarlierErrors(t *testing.T) {
	_, errs := script.ParseFile("x.pr", []byte("?x\n? <a>\n<b"))
	if len(errs) != 2 {
		t.Fatalf("errors: %v", errs)
	}
	if !strings.HasPrefix(errs[0].Error(), "x.pr:1:1: binder ?x") {
		t.Errorf("first error %v", errs[0])
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.pr", "<a 1>\n")
	write("sub/bad.pr", "<a 1>\n?x\n_\n")
	write("sub/other.txt", "?x\n")
	write(".hidden/bad.pr", "?x\n")
	write("worse.pr", "<a\n")
	err := script.Check(dir)
	var list script.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Check returned %v", err)
	}
	var got []string
	for _, e := range list {
		got = append(got, strings.TrimPrefix(e.Error(), dir+"/"))
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "sub/bad.pr:2:1: ") || !strings.HasPrefix(got[1], "sub/bad.pr:3:1: ") ||
		!strings.HasPrefix(got[2], "worse.pr:") {
		t.Errorf("Check errors:\n%s", strings.Join(got, "\n"))
	}
	if err := script.Check(filepath.Join(dir, "good.pr")); err != nil {
		t.Errorf("good file: %v", err)
	}
	if err := script.Check(filepath.Join(dir, "missing.pr")); err == nil {
		t.Errorf("missing file: no error")
	}
}

func TestErrorList(t *testing.T) {
	var l script.ErrorList
	if l.Err() != nil {
		t.Fatal("empty list is not nil")
	}
	l.Add(preserves.Pos{File: "b", Line: 1, Col: 1}, "second")
	l.Add(preserves.Pos{File: "a", Line: 2, Col: 3}, "first")
	l.Sort()
	if l.Error() != "a:2:3: first\nb:1:1: second" {
		t.Errorf("got %q", l.Error())
	}
	if !errors.Is(l.Err(), script.ErrScript) {
		t.Error("errors.Is through the list")
	}
}

// update is accepted so that `go test ./script/... -update` (which
// regenerates the compile package's golden files) runs in every package.
var _ = flag.Bool("update", false, "regenerate golden files (used by script/compile)")

// TestDialectsData runs testdata/dialects.pr: warnings about caveat patterns
// in another dialect's notation, and the structural reading's errors, each
// at its exact file:line:col.
func TestDialectsData(t *testing.T) {
	chunks, err := scripttest.Read("testdata/dialects.pr")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		t.Run(c.Name(), func(t *testing.T) {
			f, errs := script.ParseFile(c.File, []byte(c.Src))
			var got []string
			for _, e := range append(errs, f.Warnings...) {
				got = append(got, e.Error())
				if e.Warning && !errors.Is(e, script.ErrDialect) {
					t.Errorf("%v: a warning not of class ErrDialect", e)
				}
			}
			for _, p := range c.Match(false, got) {
				t.Error(p)
			}
		})
	}
}

// TestDialectFixesWork applies the suggestion of every dialect warning of
// testdata/dialects.pr, as its Fixes write it, and checks the file again
// (issue 25): the warning is gone and no error is new. Where a message
// also offers the directive alone, that is applied and checked too.
func TestDialectFixesWork(t *testing.T) {
	chunks, err := scripttest.Read("testdata/dialects.pr")
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, c := range chunks {
		f, errs := script.ParseFile(c.File, []byte(c.Src))
		for _, w := range f.Warnings {
			var alternatives [][]script.Fix
			if len(w.Fixes) > 0 {
				alternatives = append(alternatives, w.Fixes)
			}
			if strings.Contains(w.Msg, "or start the file with `dialect sturdy-caveats`") {
				first := f.Body[0].Pos()
				alternatives = append(alternatives, []script.Fix{{Pos: first, Insert: true, Text: "dialect sturdy-caveats\n"}})
			}
			if len(alternatives) == 0 && strings.Contains(w.Msg, "; in this dialect write") && !strings.Contains(w.Msg, "…") {
				t.Errorf("%v: a suggestion without its edits", w)
			}
			for _, fixes := range alternatives {
				applied++
				src, err := script.ApplyFixes([]byte(c.Src), fixes)
				if err != nil {
					t.Fatalf("%v: %v", w, err)
				}
				f2, errs2 := script.ParseFile(c.File, src)
				for _, e := range errs2 {
					if !slices.ContainsFunc(errs, func(old *script.Error) bool { return old.Msg == e.Msg }) {
						t.Errorf("%v\nfixed as\n%s\ngives a new error: %v", w, src, e)
					}
				}
				for _, w2 := range f2.Warnings {
					if w2.Msg == w.Msg {
						t.Errorf("%v\nfixed as\n%s\nstill warns", w, src)
					}
				}
			}
		}
	}
	if applied < 8 {
		t.Fatalf("only %d suggestions applied", applied)
	}
}
