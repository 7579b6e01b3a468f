package compile_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/scripttest"
)

// CompileFile, which compiles each top-level instruction as it is parsed,
// makes the program CompileOptions makes of ParseFile's tree: the same
// instructions at the same places, and with positions the same places
// remembered for the constants.
func TestCompileFileAgreesWithCompile(t *testing.T) {
	srcs := scripttest.Files(t, "testdata/*.pr", "../testdata/*.pr", "../vm/testdata/*.pr", "../../etc/syndicate/*.pr")
	srcs = append(srcs, scripttest.Source{Name: "big", Src: string(bigScript(3000))}, scripttest.Source{Name: "empty"},
		scripttest.Source{Name: "facts", Src: "<x 1>\n<x [2 {a: 3}]>\n# end\n"})
	compared := 0
	for _, s := range srcs {
		for _, opts := range []compile.Options{{}, {Positions: true}} {
			f, errs := script.ParseFile(s.Name, []byte(s.Src))
			got, err := compile.CompileFileOptions(s.Name, []byte(s.Src), opts)
			if len(errs) > 0 {
				if err == nil || err.Error() != errs.Error() {
					t.Errorf("%s: error %v, want %v", s.Name, err, errs)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			want := compile.CompileOptions(f, opts)
			if g, w := compile.Disassemble(got), compile.Disassemble(want); g != w || got.Body.At != want.Body.At {
				t.Errorf("%s (positions %v): program at %v\n%s\nwant at %v\n%s", s.Name, opts.Positions, got.Body.At, g, want.Body.At, w)
			}
			if fmt.Sprint(got.Warnings) != fmt.Sprint(want.Warnings) {
				t.Errorf("%s: warnings %v, want %v", s.Name, got.Warnings, want.Warnings)
			}
			if opts.Positions {
				if g, w := constPositions(got), constPositions(want); g != w {
					t.Errorf("%s: constants' positions\n%s\nwant\n%s", s.Name, g, w)
				}
			}
			compared++
		}
	}
	if compared < 20 {
		t.Fatalf("only %d programs compared", compared)
	}
}

// constPositions lists the remembered positions of the top-level asserted
// constants' parts.
func constPositions(p *compile.Program) string {
	// The positions live as long as p's Consts: without this, p is dead
	// once its body is read, and a collection during the loop takes the
	// positions still to be read (a CI run lost the last 40 %).
	defer runtime.KeepAlive(p)
	var b strings.Builder
	for _, in := range p.Body.Body {
		a, ok := in.(*compile.Assert)
		if !ok {
			continue
		}
		k, ok := a.Value.(*compile.Const)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "%v", preserves.PosOf(k.Value))
		for i := 0; ; i++ {
			if _, ok := preserves.ItemOf(k.Value, i); !ok {
				break
			}
			fmt.Fprintf(&b, " %v", preserves.ItemPos(k.Value, i))
		}
		b.WriteString("\n")
	}
	return b.String()
}
