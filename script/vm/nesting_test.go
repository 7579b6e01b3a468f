package vm_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/script/compile"
)

// nested is a script of depth handlers `? <a ?x> [`, each inside the
// last, the innermost asserting <deep>, and the <a 1> that wakes them.
func nested(depth int) string {
	return "<a 1>\n" + strings.Repeat("? <a ?x> [\n", depth) + "<deep>\n" + strings.Repeat("]\n", depth)
}

// heapPerLevel compiles and runs a script of depth nested handlers and
// returns the live heap each level costs once all are installed, for the
// compiler and for the running facets.
func heapPerLevel(tb testing.TB, depth int) (compiled, running float64) {
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	w := newWorld(tb)
	src := nested(depth)
	h0 := heap()
	prog, err := compile.CompileFile("deep.pr", []byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	h1 := heap()
	w.runProg(prog, nil)
	testutil.WaitFor(tb, fmt.Sprintf("the handler %d deep", depth), func() bool {
		return slices.Contains(w.contents(), "<deep>")
	})
	h2 := heap()
	runtime.KeepAlive(prog)
	return float64(h1-h0) / float64(depth), float64(h2-h1) / float64(depth)
}

// Issue 22 item 7: nested handlers cost memory in proportion to the
// text. Twice the depth must cost about twice the memory, not four
// times (9,990 levels took 1.6 GB when each handler copied the positions
// of all those around it). A memory figure, so not under -race (see
// nesting_norace_test.go); the benchmark reports the same figures.
func checkNestingLinear(t *testing.T) {
	c1, r1 := heapPerLevel(t, 1000)
	c2, r2 := heapPerLevel(t, 2000)
	t.Logf("bytes per level: compile %.0f → %.0f, run %.0f → %.0f (1,000 → 2,000 levels)", c1, c2, r1, r2)
	// Quadratic growth doubles the cost per level; linear keeps it.
	if c2 > 1.5*c1+512 {
		t.Errorf("compiling: %.0f bytes per level at 2,000 deep, %.0f at 1,000: not linear", c2, c1)
	}
	if r2 > 1.5*r1+512 {
		t.Errorf("running: %.0f bytes per level at 2,000 deep, %.0f at 1,000: not linear", r2, r1)
	}
}

// BenchmarkNestedHandlers reports the live heap per level of nesting,
// compiled and running, at two depths.
func BenchmarkNestedHandlers(b *testing.B) {
	for _, depth := range []int{1000, 2000} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			var c, r float64
			for range b.N {
				c, r = heapPerLevel(b, depth)
			}
			b.ReportMetric(c, "compiled-B/level")
			b.ReportMetric(r, "running-B/level")
		})
	}
}

// An error 100 handlers deep lists the 64 innermost and counts the
// rest, so a deep script cannot make one log line of any size.
func TestDeepBacktraceIsBounded(t *testing.T) {
	w := newWorld(t)
	w.runProg(w.compile("deep.pr", strings.Replace(nested(100), "<deep>", "<deep $nope>", 1)), nil)
	testutil.WaitFor(t, "the error", func() bool { return len(w.runtimeErrors()) == 1 })
	e := w.runtimeErrors()[0]
	if len(e.Trace) != 64 || e.Outer != 36 || e.Trace[63].Line != 101 || e.Trace[0].Line != 38 {
		t.Errorf("trace of %d (innermost %v, outermost %v), %d more", len(e.Trace), e.Trace[len(e.Trace)-1], e.Trace[0], e.Outer)
	}
	if bt := e.Backtrace(); !strings.HasSuffix(bt, "\n\tin handler at deep.pr:38:1\n\tin 36 more handlers") {
		t.Errorf("backtrace ends %q", bt[max(len(bt)-80, 0):])
	}
}
