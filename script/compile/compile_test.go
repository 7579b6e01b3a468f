package compile_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
)

var update = flag.Bool("update", false, "rewrite golden disassembly files")

// TestGolden compiles testdata/*.pr and compares the disassembly with
// testdata/*.golden (regenerate with go test ./script/... -update).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.pr")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := compile.CompileFile(f, src)
			if err != nil {
				t.Fatal(err)
			}
			got := compile.Disassemble(prog)
			golden := strings.TrimSuffix(f, ".pr") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("disassembly differs from %s (run with -update to accept):\n%s", golden, got)
			}
			// Compiling is deterministic.
			prog2, _ := compile.CompileFile(f, src)
			if compile.Disassemble(prog2) != got {
				t.Error("second compilation differs")
			}
		})
	}
}

func compileString(t *testing.T, src string) *compile.Program {
	t.Helper()
	prog, err := compile.CompileFile("t.pr", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// TestTargets checks the compile-time active-target register (services spec
// §4.3–4.4): `$x` scopes to exactly one instruction, `=~` tests the current
// target and runs both branches with the outer target.
func TestTargets(t *testing.T) {
	cases := []struct{ src, want string }{
		{"<a>", "assert $config <a>"},
		{"$ds <a> <b>", "assert $ds <a>\nassert $config <b>"},
		{"$ds [<a> <b>]", "seq\n  assert $ds <a>\n  assert $ds <b>"},
		{"$log ! <x>", "send $log <x>"},
		{"$ds ? <p> <q>", "during $ds <group <rec p> {}>\n  assert $ds <q>"},
		{"$ds ?? <p> ! <q>", "on-message $ds <group <rec p> {}>\n  send $ds <q>"},
		{"$v =~ on <yes> <no>", "if $v =~ <lit on>\n  assert $config <yes>\nelse\n  assert $config <no>"},
		{"$ds [ =~ on <yes> <no> ]", "seq\n  if $ds =~ <lit on>\n    assert $config <yes>\n  else\n    assert $config <no>"},
		{"$a $b <x>", "assert $b <x>"},
		{"$a [ $b ? <p> <x> <y> ]", "seq\n  during $b <group <rec p> {}>\n    assert $b <x>\n  assert $a <y>"},
		{"=~ _ <x>", "if $config =~ <_>\n  assert $config <x>\nelse"},
	}
	for _, c := range cases {
		d := compile.Disassemble(compileString(t, c.src))
		_, body, _ := strings.Cut(d, "\n")
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			lines = append(lines, strings.TrimRight(l[8:], " "))
		}
		if got := strings.Join(lines, "\n"); got != c.want {
			t.Errorf("%s:\n got: %s\nwant: %s", c.src, got, c.want)
		}
	}
}

// TestPositions: every instruction carries the position of its token.
func TestPositions(t *testing.T) {
	prog := compileString(t, "<a>\n  $ds ! <b>\n[ let ?x = 1 ]\n")
	b := prog.Body.Body
	if len(b) != 3 {
		t.Fatalf("%d instructions", len(b))
	}
	want := []string{"t.pr:1:1", "t.pr:2:7", "t.pr:3:1"}
	for i, in := range b {
		if got := in.Pos().String(); got != want[i] {
			t.Errorf("instruction %d at %s, want %s", i, got, want[i])
		}
	}
	let := b[2].(*compile.Seq).Body[0]
	if got := let.Pos().String(); got != "t.pr:3:3" {
		t.Errorf("let at %s", got)
	}
	if prog.Version != compile.Version || prog.Instrs != 5 {
		t.Errorf("version %d instrs %d", prog.Version, prog.Instrs)
	}
}

// TestConstantFolding: constant values and patterns are computed once.
func TestConstantFolding(t *testing.T) {
	prog := compileString(t, "<a [1 {k: #{2}}]> ? <p ?x [_ 1]> []")
	as := prog.Body.Body[0].(*compile.Assert)
	if _, ok := as.Value.(*compile.Const); !ok {
		t.Errorf("value not folded: %T", as.Value)
	}
	d := prog.Body.Body[1].(*compile.Handler)
	if _, ok := d.Pat.(*compile.PConst); !ok {
		t.Errorf("pattern not folded: %T", d.Pat)
	}
	prog = compileString(t, "<a $x> ? <p $x> []")
	if _, ok := prog.Body.Body[0].(*compile.Assert).Value.(*compile.MkRecord); !ok {
		t.Errorf("variable folded away")
	}
}

func TestCompileErrorsAreCollected(t *testing.T) {
	_, err := compile.CompileFile("e.pr", []byte("?x\n<a _>\n[ foo ]\n"))
	var list script.ErrorList
	if !errors.As(err, &list) || len(list) != 3 {
		t.Fatalf("got %v", err)
	}
	if list[1].Error() != "e.pr:2:4: discard _ is not allowed in a value (write =_ for the symbol)" {
		t.Errorf("second error %q", list[1].Error())
	}
	_, err = compile.CompileFile("s.pr", []byte("<a>\n <b"))
	var pe *preserves.Error
	if !errors.As(err, &pe) || !errors.Is(err, preserves.ErrUnexpectedEOF) {
		t.Errorf("syntax error: %v", err)
	}
}

// TestShippedScripts compiles every .pr file under the repository's etc/.
func TestShippedScripts(t *testing.T) {
	root := "../../etc"
	if _, err := os.Stat(root); err != nil {
		t.Skip("no etc/ directory")
	}
	if err := script.Check(root); err != nil {
		t.Error(err)
	}
}

// bigScript returns a script of about n instructions in a typical mix.
func bigScript(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() >= 0 && i < n/10; i++ {
		fmt.Fprintf(&b, "<require-service <daemon d%d>>\n", i)
		fmt.Fprintf(&b, "<daemon d%d {argv: [\"/bin/d\" \"-n\" %d], readyOnStart: #f}>\n", i, i)
		fmt.Fprintf(&b, "? <service-state <daemon d%d> ?s> [ $log ! <log \"-\" {line: \"state\", s: $s}> ]\n", i)
		fmt.Fprintf(&b, "let ?v%d = <value %d $s>\n", i, i)
		fmt.Fprintf(&b, "[ $v%d =~ <value ?n _> [ <ok $n> ] <bad> ]\n", i)
		fmt.Fprintf(&b, "?? <ping%d ?x> ! <pong $x>\n", i)
	}
	return []byte(b.String())
}

func BenchmarkCompile10k(b *testing.B) { benchCompile10k(b, compile.Options{}) }

// BenchmarkCompile10kPositions is BenchmarkCompile10k keeping positions, as
// the config watcher compiles.
func BenchmarkCompile10kPositions(b *testing.B) { benchCompile10k(b, compile.Options{Positions: true}) }

func benchCompile10k(b *testing.B, opts compile.Options) {
	src := bigScript(10000)
	prog, err := compile.CompileFileOptions("big.pr", src, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := compile.CompileFileOptions("big.pr", src, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(prog.Instrs), "instrs")
}

func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pr")
	more, _ := filepath.Glob("../testdata/*.pr")
	for _, p := range append(files, more...) {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("[ $x ] [ _ ] ?- let ?x = join"))
	f.Add([]byte("<* $x [<or [<rewrite <a ?x> <* $x [<reject $x>]>>]>]>"))
	f.Fuzz(func(t *testing.T, src []byte) {
		prog, err := compile.CompileFile("f.pr", src)
		if err != nil {
			var list script.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error is not a non-empty ErrorList: %v", err)
			}
			for _, e := range list {
				if !strings.HasPrefix(e.Error(), "f.pr") {
					t.Fatalf("error without file position: %v", e)
				}
			}
			return
		}
		_ = compile.Disassemble(prog)
	})
}

// Compile does not panic on a file that had errors (callers should not
// compile one, but a partial AST must not crash them).
func TestCompilePartialAST(t *testing.T) {
	f, errs := script.ParseFile("p.pr", []byte("$x ?y\n? <a> ?z\n=~ _ ?w\nlet ?q = stringify _\n"))
	if len(errs) == 0 {
		t.Fatal("expected errors")
	}
	prog := compile.Compile(f)
	_ = compile.Disassemble(prog)
}
