package compile_test

import (
	"testing"

	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
)

// The stages of BenchmarkCompile10k measured apart: reading the text with
// positions, parsing the values into an AST, compiling the AST. Each reports
// CPU time per operation (the machine is shared; wall time mostly measures
// the other tenants). The earlier stages' results stay live, as they do in a
// real compile.

func BenchmarkCompile10kRead(b *testing.B) {
	src := bigScript(10000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := script.ReadValues("big.pr", src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCompile10kParse(b *testing.B) {
	vals, err := script.ReadValues("big.pr", bigScript(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, errs := script.ParseValues("big.pr", vals); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCompile10kCodegen(b *testing.B) {
	f, errs := script.ParseFile("big.pr", bigScript(10000))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if p := compile.Compile(f); p.Instrs == 0 {
			b.Fatal("nothing compiled")
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
