package compile_test

import (
	"fmt"

	"github.com/syndicate-go/syndicate/script/compile"
)

func ExampleDisassemble() {
	prog, err := compile.CompileFile("ex.pr", []byte(`
let ?ds = dataspace
$ds ? <Present ?who> [ $log ! <log "-" {line: "present", who: $who}> ]
<require-service <daemon web>>
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(compile.Disassemble(prog))
	// Output:
	// program "ex.pr" version 3 instructions 6
	// 2:1     let <bind <_>> -> [ds] = dataspace
	// 3:5     during $ds <group <rec Present> {0: <bind <_>>}> -> [who]
	// 3:22      seq
	// 3:29        send $log <log "-" {line: "present", who: $who}>
	// 4:1     assert $config <require-service <daemon web>>
}

func ExampleCompileFile_errors() {
	_, err := compile.CompileFile("bad.pr", []byte("?x\n<a _>\n$log\n"))
	fmt.Println(err)
	// Output:
	// bad.pr:1:1: binder ?x is not an instruction
	// bad.pr:2:4: discard _ is not allowed in a value (write =_ for the symbol)
	// bad.pr:3:1: $log sets the target of the next instruction, but none follows
}
