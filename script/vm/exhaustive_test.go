package vm_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/format"
)

// The node sets of the script AST (package script) and of the instruction
// tree (package script/compile) are closed, and every phase switches on
// their concrete types. A node that a switch forgets falls through to a
// default that keeps the tree well-formed (an empty Seq, `[]`, `?%T`), so
// forgetting it compiles, and fails quietly. TestNodeSwitchesAreExhaustive
// reads the sources and fails when a node type is missing from a switch of
// compile, disasm or the VM; the formatter takes its grouping from the
// parser (script.Group), and script/format's TestEveryInstructionFormats
// checks it on a sample of every instruction. A node that a switch must not
// see is listed below with the reason.
func TestNodeSwitchesAreExhaustive(t *testing.T) {
	src := sources(t, "..", "../compile", ".")
	scriptInstr := src.nodes("script", "instr")
	scriptExpr := src.nodes("script", "expr")
	scriptCaveat := src.nodes("script", "caveat")
	instr := src.nodes("compile", "isInstr")
	expr := src.nodes("compile", "isExpr")
	pat := src.nodes("compile", "isPat")
	if len(scriptInstr) < 9 || len(scriptExpr) < 12 || len(instr) < 7 || len(expr) < 7 || len(pat) < 5 {
		t.Fatalf("node types not found: %v %v %v %v %v", scriptInstr, scriptExpr, instr, expr, pat)
	}
	// Expressions that only occur in patterns, in templates, in caveats,
	// or in values, by construction of the parser.
	patternOnly := []string{"Discard", "Bind"}
	templateOnly := []string{"Capture"}
	caveatOnly := []string{"SturdyPat"}
	valueOnly := []string{"SetExpr", "CallExpr"}
	for _, c := range []struct {
		pkg, fn string
		want    []string
		exempt  []string
	}{
		{"compile", "compiler.instr", scriptInstr, nil},
		{"script", "EachSubInstr", scriptInstr, nil},
		// Lit is folded by isConst before the switch.
		{"compile", "compiler.value", scriptExpr, cat([]string{"Lit"}, patternOnly, templateOnly, caveatOnly)},
		{"compile", "compiler.pattern", scriptExpr, cat(templateOnly, caveatOnly, valueOnly)},
		{"compile", "compiler.spat", scriptExpr, cat(templateOnly, valueOnly)},
		{"compile", "compiler.stmpl", scriptExpr, cat(patternOnly, caveatOnly, valueOnly)},
		{"compile", "compiler.caveat", scriptCaveat, nil},
		{"compile", "disasm.instr", instr, nil},
		{"compile", "writeExpr", expr, nil},
		{"compile", "EachSubExpr", expr, nil},
		// Leaves: they hold no instruction.
		{"compile", "EachSubInstr", instr, []string{"Assert", "Send", "Let"}},
		{"compile", "writePat", pat, nil},
		{"vm", "activation.exec", instr, nil},
		{"vm", "activation.eval", expr, nil},
		{"vm", "activation.pattern", pat, nil},
	} {
		handled := src.cases(t, c.pkg, c.fn)
		for _, e := range c.exempt {
			handled[e] = true
		}
		for _, n := range c.want {
			if !handled[n] {
				t.Errorf("%s.%s does not handle node type %s", c.pkg, c.fn, n)
			}
		}
	}
}

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// pkgSources are the parsed non-test files of some packages, by package
// name.
type pkgSources map[string][]*ast.File

func sources(t *testing.T, dirs ...string) pkgSources {
	t.Helper()
	out := pkgSources{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			out[f.Name.Name] = append(out[f.Name.Name], f)
		}
	}
	return out
}

// nodes returns the types of package pkg that have the marker method
// (`func (*T) marker() {}`), sorted.
func (s pkgSources) nodes(pkg, marker string) []string {
	var out []string
	for _, f := range s[pkg] {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != marker || fd.Type.Params.NumFields() != 0 {
				continue
			}
			out = append(out, recvType(fd))
		}
	}
	sort.Strings(out)
	return out
}

func recvType(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// cases returns the type names (package qualifier dropped) in the case
// clauses of every type switch of function fn ("Recv.Name" or "Name") of
// package pkg.
func (s pkgSources) cases(t *testing.T, pkg, fn string) map[string]bool {
	t.Helper()
	recv, name, ok := strings.Cut(fn, ".")
	if !ok {
		recv, name = "", fn
	}
	for _, f := range s[pkg] {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != name || (fd.Recv == nil) != (recv == "") || (recv != "" && recvType(fd) != recv) {
				continue
			}
			out := map[string]bool{}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSwitchStmt)
				if !ok {
					return true
				}
				for _, cl := range ts.Body.List {
					for _, e := range cl.(*ast.CaseClause).List {
						if st, ok := e.(*ast.StarExpr); ok {
							e = st.X
						}
						switch x := e.(type) {
						case *ast.Ident:
							out[x.Name] = true
						case *ast.SelectorExpr:
							out[x.Sel.Name] = true
						}
					}
				}
				return true
			})
			return out
		}
	}
	t.Fatalf("function %s not found in package %s", fn, pkg)
	return nil
}

// TestEveryInstructionFormats: `syndicate fmt` keeps every kind of
// instruction, and every built-in, together as the parser groups it (a
// sample per node type, already in canonical layout, comes back unchanged).
// A new instruction node fails here until it has a sample.
func TestEveryInstructionFormats(t *testing.T) {
	samples := map[string]string{
		"Block":     "[\n  <a>\n  <b>\n]\n",
		"Retarget":  "$x <a>\n",
		"Assert":    "+= \"s\"\n",
		"Send":      "! <a>\n",
		"During":    "? <a ?x> <b $x>\n",
		"OnMessage": "?? <a ?x> ! <b $x>\n",
		"OnStop":    "?- <a>\n",
		"Let":       "let ?x = <a>\n",
		"Cond":      "=~ <a> <b>\n<c>\n",
		// Not an instruction, but grouped like one.
		"directive dialect": "dialect sturdy-caveats\n<a>\n",
	}
	for _, b := range script.Builtins {
		src := "let ?x = " + b.Name + strings.Repeat(` $a`, b.Arity()) + "\n"
		samples["builtin "+b.Name] = src
	}
	for _, n := range sources(t, "..").nodes("script", "instr") {
		if _, ok := samples[n]; !ok {
			t.Errorf("no formatting sample for instruction node %s", n)
		}
	}
	for name, src := range samples {
		f, errs := script.ParseFile("s.pr", []byte(src))
		if len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
			continue
		}
		if typ := strings.TrimPrefix(fmt.Sprintf("%T", f.Body[0]), "*script."); !strings.Contains(name, " ") && typ != name {
			t.Errorf("sample of %s parses as %s", name, typ)
		}
		out, err := format.Source("s.pr", []byte(src))
		if err != nil || string(out) != src {
			t.Errorf("%s: fmt changed\n%s\ninto\n%s(%v)", name, src, out, err)
		}
	}
}
