package compile

import (
	"testing"

	"github.com/syndicate-go/syndicate/script"
)

// CompileFile lets go of the syntax tree's top-level instructions as it
// compiles them (the tree is its own), and the program is the one
// CompileOptions makes of the same tree.
func TestCompileFileConsumesItsTree(t *testing.T) {
	src := []byte("<require-service <daemon d>>\n<daemon d {argv: [\"/bin/d\" 1]}>\n" +
		"? <service-state <daemon d> ?s> [ $log ! <log \"-\" {line: \"state\", s: $s}> ]\n" +
		"let ?v = <value 1 $s>\n[ $v =~ <value ?n _> [ <ok $n> ] <bad> ]\n$log <x>\n")
	parse := func() *script.File {
		f, errs := script.ParseFile("c.pr", src)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return f
	}
	for _, opts := range []Options{{}, {Positions: true}} {
		kept, consumed := parse(), parse()
		want := Disassemble(CompileOptions(kept, opts))
		if got := Disassemble(compileFile(consumed, opts, true)); got != want {
			t.Errorf("positions %v: consuming compile gives\n%s\nwant\n%s", opts.Positions, got, want)
		}
		for i, in := range consumed.Body {
			if in != nil {
				t.Errorf("positions %v: top-level instruction %d kept", opts.Positions, i)
			}
		}
		if kept.Body[0] == nil {
			t.Errorf("positions %v: CompileOptions cleared its caller's tree", opts.Positions)
		}
	}
}
