package vm_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/vm"
)

// activate runs fn in a turn of the world actor, reporting failure through
// fail instead of the world's own testing.TB (fuzz bodies get their own T).
func (w *world) activate(fail func(string, ...any), fn func(t *dataspace.Turn) error) {
	done := make(chan struct{})
	if !w.fr.Activate(func(t *dataspace.Turn) error {
		defer close(done)
		return fn(t)
	}) {
		fail("world actor is gone")
		return
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		fail("turn did not run")
	}
}

// FuzzRun: any text either fails to compile with positioned errors or runs
// on a real dataspace without crashing the actor running it.
func FuzzRun(f *testing.F) {
	for _, glob := range []string{"testdata/*.pr", "../compile/testdata/*.pr"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if src, err := os.ReadFile(p); err == nil {
				f.Add(src)
			}
		}
	}
	f.Add([]byte("let ?f = facet ? <x> $f ! stop ?- <gone $nope> <y $undefined>"))
	f.Add([]byte("let ?a = <* $config [<rewrite ?x <* $x [<accept _>]>>]> $a <p $config>"))
	w := newWorld(f)
	env := w.env(map[string]preserves.Value{
		"x": preserves.Int(1), "log": dataspace.Embed(w.ds), "gatekeeper": dataspace.Embed(w.ds),
	})
	opts := w.options()
	opts.OnError = nil
	f.Fuzz(func(t *testing.T, src []byte) {
		prog, err := compile.CompileFile("f.pr", src)
		if err != nil {
			return
		}
		var id dataspace.FacetID
		w.activate(t.Fatalf, func(tt *dataspace.Turn) error {
			var err error
			id, err = vm.RunOptions(tt, prog, env, opts)
			return err
		})
		// Poke the handlers the script may have installed, then clean up.
		w.activate(t.Fatalf, func(tt *dataspace.Turn) error {
			h := tt.Assert(w.ds, preserves.Rec("x"))
			tt.Message(w.ds, preserves.Rec("x"))
			tt.Retract(h)
			return nil
		})
		w.activate(t.Fatalf, func(tt *dataspace.Turn) error { tt.StopFacet(id); return nil })
		w.rec.mu.Lock()
		w.rec.msgs = nil // bound the recorder's memory across executions
		w.rec.mu.Unlock()
		if !w.fr.Actor().Alive() {
			t.Fatalf("actor crashed: %v", w.fr.Actor().Err())
		}
	})
}

// nullEntity ignores everything sent to it.
type nullEntity struct{ dataspace.BaseEntity }

// BenchmarkRunBoot runs the instructions of a typical boot script (a copy
// of etc/syndicate/boot.pr) in a fresh facet and stops it again, one turn
// per iteration.
func BenchmarkRunBoot(b *testing.B) { benchRunBoot(b, false, false) }

// BenchmarkRunBootNullTarget is BenchmarkRunBoot with $config and $log bound
// to an entity that ignores everything, isolating the VM's own cost from
// the dataspace's.
func BenchmarkRunBootNullTarget(b *testing.B) { benchRunBoot(b, true, false) }

// BenchmarkRunBootPositions is BenchmarkRunBoot compiled with
// compile.Options.Positions, as the config watcher compiles: the cost of
// remembering where each built value was written.
func BenchmarkRunBootPositions(b *testing.B) { benchRunBoot(b, false, true) }

func benchRunBoot(b *testing.B, null, positions bool) {
	src, err := os.ReadFile("testdata/boot.pr")
	if err != nil {
		b.Fatal(err)
	}
	prog, err := compile.CompileFileOptions("testdata/boot.pr", src, compile.Options{Positions: positions})
	if err != nil {
		b.Fatal(err)
	}
	w := newWorld(b)
	env := w.env(map[string]preserves.Value{"log": dataspace.Embed(w.ds), "gatekeeper": dataspace.Embed(w.ds)})
	if null {
		w.do(func(t *dataspace.Turn) error {
			n := dataspace.Embed(t.Create(&nullEntity{}))
			env["config"], env["log"] = n, n
			return nil
		})
	}
	opts := w.options()
	b.ResetTimer()
	cpu0 := cpuTime()
	const perTurn = 50
	for i := 0; i < b.N; i += perTurn {
		n := min(perTurn, b.N-i)
		w.activate(b.Fatalf, func(t *dataspace.Turn) error {
			for j := 0; j < n; j++ {
				id, err := vm.RunOptions(t, prog, env, opts)
				if err != nil {
					return err
				}
				t.StopFacet(id)
			}
			return nil
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(prog.Instrs), "instrs")
	if errs := w.runtimeErrors(); len(errs) > 0 {
		b.Fatalf("runtime errors: %v", errs[0])
	}
}
