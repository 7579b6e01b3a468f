package dataspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// The tests drive actors with do (FacetRef.Activate), which runs the turn
// on the test goroutine and returns after commit, so variables written by
// blocks are read race-free afterwards.

// A block re-runs only when a field it read is written.
func TestDataflowDependencies(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var x, y *Field[int]
	var runs, seen int
	do(t, fr, func(t *Turn) error {
		x, y = NewField(t, 1), NewField(t, 100)
		t.Dataflow(func(t *Turn) error {
			runs++
			seen = x.Get(t)
			return nil
		})
		return nil
	})
	if runs != 1 || seen != 1 {
		t.Fatalf("after registration: runs %d seen %d, want 1 1", runs, seen)
	}
	do(t, fr, func(t *Turn) error { y.Set(t, 101); return nil })
	if runs != 1 {
		t.Fatalf("writing an unread field re-ran the block (%d runs)", runs)
	}
	do(t, fr, func(t *Turn) error {
		x.Set(t, 2)
		x.Set(t, 3) // several writes in one turn: one re-run, last value
		if runs != 1 {
			return errors.New("block re-ran before commit")
		}
		return nil
	})
	if !fr.Actor().Alive() || runs != 2 || seen != 3 {
		t.Fatalf("after x.Set: alive %v runs %d seen %d, want true 2 3", fr.Actor().Alive(), runs, seen)
	}
	do(t, fr, func(t *Turn) error { return nil })
	if runs != 2 {
		t.Fatalf("an empty turn re-ran the block (%d runs)", runs)
	}
}

// Each run records dependencies afresh: a field the block stopped reading
// no longer triggers it.
func TestDataflowDropsStaleDependency(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var useX *Field[bool]
	var x, y *Field[string]
	var trace []string
	do(t, fr, func(t *Turn) error {
		useX, x, y = NewField(t, true), NewField(t, "x0"), NewField(t, "y0")
		t.Dataflow(func(t *Turn) error {
			if useX.Get(t) {
				trace = append(trace, x.Get(t))
			} else {
				trace = append(trace, y.Get(t))
			}
			return nil
		})
		return nil
	})
	do(t, fr, func(t *Turn) error { y.Set(t, "y1"); return nil }) // not read yet
	do(t, fr, func(t *Turn) error { useX.Set(t, false); return nil })
	do(t, fr, func(t *Turn) error { x.Set(t, "x1"); return nil }) // no longer read
	do(t, fr, func(t *Turn) error { y.Set(t, "y2"); return nil })
	if want := []string{"x0", "y1", "y2"}; !slices.Equal(trace, want) {
		t.Fatalf("runs saw %v, want %v", trace, want)
	}
	if len(x.core.deps) != 0 || len(y.core.deps) != 1 {
		t.Fatalf("dependents: x %d y %d, want 0 1", len(x.core.deps), len(y.core.deps))
	}
}

// Set and Update damage the field even when the value does not change.
func TestDataflowDamageOnEqualSet(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var x *Field[[]int]
	var n *Field[int]
	runs := 0
	do(t, fr, func(t *Turn) error {
		x, n = NewField(t, []int{1}), NewField(t, 7)
		t.Dataflow(func(t *Turn) error {
			runs++
			_, _ = x.Get(t), n.Get(t)
			return nil
		})
		return nil
	})
	do(t, fr, func(t *Turn) error { n.Set(t, 7); return nil })
	if runs != 2 {
		t.Fatalf("equal Set: %d runs, want 2", runs)
	}
	do(t, fr, func(t *Turn) error { x.Update(t, func(*[]int) {}); return nil })
	if runs != 3 {
		t.Fatalf("no-op Update: %d runs, want 3", runs)
	}
	do(t, fr, func(t *Turn) error { x.Update(t, func(v *[]int) { *v = append(*v, 2) }); return nil })
	if runs != 4 || !slices.Equal(x.v, []int{1, 2}) {
		t.Fatalf("Update: %d runs, value %v", runs, x.v)
	}
}

// A chain of blocks settles within one commit, whatever their order: the
// assertion made from the last block's value leaves with the turn, in the
// same batch as the retraction of the previous one, and no intermediate
// value is ever asserted.
func TestDataflowChainRepairedInOneCommit(t *testing.T) {
	for _, downstreamFirst := range []bool{true, false} {
		name := "upstream-first"
		if downstreamFirst {
			name = "downstream-first"
		}
		t.Run(name, func(t *testing.T) {
			s := newSys(t)
			sink := &recorder{}
			_, sref := hold(t, s, "sink", sink)
			fr, _, _ := client(t, s, "a")
			var a, b *Field[int64]
			var h Handle
			up := func(t *Turn) error { b.Set(t, a.Get(t)*10); return nil }
			down := func(t *Turn) error {
				t.Update(&h, sref, preserves.Rec("v", preserves.Int(b.Get(t))))
				return nil
			}
			do(t, fr, func(t *Turn) error {
				a, b = NewField[int64](t, 1), NewField[int64](t, 0)
				if downstreamFirst {
					t.Dataflow(down)
					t.Dataflow(up)
				} else {
					t.Dataflow(up)
					t.Dataflow(down)
				}
				return nil
			})
			settle(t, fr, sref)
			if st := sink.state(); len(st) != 1 || !preserves.Equal(st[0], preserves.Rec("v", preserves.Int(10))) {
				t.Fatalf("after boot: %v", sink.trace())
			}
			before := sink.len()
			do(t, fr, func(t *Turn) error { a.Set(t, 2); return nil })
			settle(t, fr, sref)
			evs := sink.events()[before:]
			if len(evs) != 3 { // assert <v 20>, retract, sync
				t.Fatalf("after a.Set: %v", sink.trace()[before:])
			}
			if evs[0].kind != "assert" || !preserves.Equal(evs[0].v, preserves.Rec("v", preserves.Int(20))) ||
				evs[1].kind != "retract" || evs[0].turn != evs[1].turn {
				t.Fatalf("want assert <v 20> and a retraction in one batch, got %v (turns %d %d)",
					sink.trace()[before:], evs[0].turn, evs[1].turn)
			}
			for _, e := range sink.events() {
				if e.kind == "assert" && preserves.Equal(e.v, preserves.Rec("v", preserves.Int(0))) && !downstreamFirst {
					t.Fatalf("intermediate value asserted: %v", sink.trace())
				}
			}
		})
	}
}

// Repair runs before the inert checks of the turn, which therefore see
// what the re-run blocks asserted (runtime spec §5.2 step 1).
func TestDataflowRepairBeforeInertCheck(t *testing.T) {
	s := newSys(t)
	sink := &recorder{}
	_, sref := hold(t, s, "sink", sink)
	fr, _, _ := client(t, s, "a")
	var id FacetID
	alive := false
	do(t, fr, func(t *Turn) error {
		on := NewField(t, false)
		id, _ = t.Facet(func(t *Turn) error {
			var h Handle
			t.Dataflow(func(t *Turn) error {
				if on.Get(t) {
					t.Update(&h, sref, sym("on"))
				}
				return nil
			})
			return nil
		})
		on.Set(t, true) // the new facet is not inert once repaired
		t.PreCommit(func(t *Turn) error {
			_, alive = t.a.facets[id]
			return nil
		})
		return nil
	})
	if !alive {
		t.Fatal("facet asserting from a repaired block was stopped as inert")
	}
	settle(t, fr, sref)
	if st := sink.state(); !equalVals(st, vals(sym("on"))) {
		t.Fatalf("sink holds %v", st)
	}
}

// A block does not keep its facet alive; the inert facet's block is
// dropped with it, and the field forgets it.
func TestDataflowInertFacetDropsBlocks(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var x *Field[int]
	runs := 0
	var id FacetID
	do(t, fr, func(t *Turn) error {
		x = NewField(t, 0)
		id, _ = t.Facet(func(t *Turn) error {
			t.Dataflow(func(t *Turn) error { runs++; x.Get(t); return nil })
			return nil
		})
		return nil
	})
	do(t, fr, func(t *Turn) error {
		if _, ok := t.a.facets[id]; ok {
			return errors.New("facet holding only a block was not inert")
		}
		if len(x.core.deps) != 0 {
			return errors.New("the stopped facet's block is still a dependent")
		}
		x.Set(t, 1)
		return nil
	})
	if !fr.Actor().Alive() || runs != 1 || len(x.core.deps) != 0 {
		t.Fatalf("alive %v runs %d dependents %d (err %v)", fr.Actor().Alive(), runs, len(x.core.deps), fr.Actor().Err())
	}
}

// Stopping a facet drops its blocks (no closure stays reachable from the
// field), and a block whose facet an earlier block of the same pass
// stopped is skipped.
func TestDataflowDeadFacetSkippedAndCleaned(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var x *Field[int]
	var child FacetID
	var childFacet *facet
	stopperRuns, childRuns := 0, 0
	do(t, fr, func(t *Turn) error {
		x = NewField(t, 0)
		// Registered first, so it runs first in each pass.
		t.Dataflow(func(t *Turn) error {
			stopperRuns++
			if x.Get(t) == 2 {
				t.StopFacet(child)
			}
			return nil
		})
		child, _ = t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			childFacet = t.active
			t.Dataflow(func(t *Turn) error { childRuns++; x.Get(t); return nil })
			return nil
		})
		return nil
	})
	do(t, fr, func(t *Turn) error { x.Set(t, 1); return nil })
	if stopperRuns != 2 || childRuns != 2 || len(x.core.deps) != 2 {
		t.Fatalf("x=1: stopper %d child %d dependents %d", stopperRuns, childRuns, len(x.core.deps))
	}
	do(t, fr, func(t *Turn) error { x.Set(t, 2); return nil })
	if stopperRuns != 3 || childRuns != 2 {
		t.Fatalf("x=2: stopper %d child %d; the dead facet's block ran", stopperRuns, childRuns)
	}
	if len(x.core.deps) != 1 || childFacet.blocks != nil {
		t.Fatalf("after stop: %d dependents, facet keeps %d blocks", len(x.core.deps), len(childFacet.blocks))
	}
	do(t, fr, func(t *Turn) error { x.Set(t, 3); return nil })
	if stopperRuns != 4 || childRuns != 2 || !fr.Actor().Alive() {
		t.Fatalf("x=3: stopper %d child %d alive %v", stopperRuns, childRuns, fr.Actor().Alive())
	}
}

// A block that stops its own facet leaves no dependency behind, even for
// fields it reads after stopping.
func TestDataflowBlockStoppingItsFacet(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var x, y *Field[int]
	runs := 0
	do(t, fr, func(t *Turn) error {
		x, y = NewField(t, 0), NewField(t, 0)
		_, err := t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			t.Dataflow(func(t *Turn) error {
				runs++
				if x.Get(t) > 0 {
					t.Stop()
					y.Get(t)
				}
				return nil
			})
			return nil
		})
		return err
	})
	do(t, fr, func(t *Turn) error { x.Set(t, 1); return nil })
	if runs != 2 || len(x.core.deps) != 0 || len(y.core.deps) != 0 {
		t.Fatalf("runs %d, dependents x %d y %d", runs, len(x.core.deps), len(y.core.deps))
	}
	do(t, fr, func(t *Turn) error { x.Set(t, 2); y.Set(t, 2); return nil })
	if runs != 2 {
		t.Fatalf("a stopped block re-ran (%d runs)", runs)
	}
}

// An error from a re-run block fails the turn like any failure: its
// events are discarded, the actor crashes (retracting what earlier turns
// asserted), other actors carry on.
func TestDataflowErrorFailsTurn(t *testing.T) {
	s := newSys(t)
	sink := &recorder{}
	sinkActor, sref := hold(t, s, "sink", sink)
	fr, _, _ := client(t, s, "a")
	other, _, _ := client(t, s, "other")
	var x *Field[int]
	do(t, fr, func(t *Turn) error {
		x = NewField(t, 0)
		t.Assert(sref, sym("established"))
		t.Dataflow(func(t *Turn) error {
			if x.Get(t) == 1 {
				t.Message(sref, sym("from-block"))
				return errBoom
			}
			return nil
		})
		return nil
	})
	settle(t, fr, sref)
	do(t, fr, func(t *Turn) error {
		t.Assert(sref, sym("doomed"))
		t.Message(sref, sym("doomed-message"))
		x.Set(t, 1)
		return nil
	})
	waitDone(t, fr.Actor())
	if !errors.Is(fr.Actor().Err(), errBoom) {
		t.Fatalf("exit error %v, want errBoom", fr.Actor().Err())
	}
	waitFor(t, "crash cleanup at the sink", func() bool { return len(sink.state()) == 0 && sink.len() >= 3 })
	want := []string{"assert established", "sync", "retract"}
	if tr := sink.trace(); !slices.Equal(tr, want) {
		t.Fatalf("sink saw %v, want %v", tr, want)
	}
	// Unaffected: the sink's actor and another actor using fields.
	if !sinkActor.Alive() || !other.Actor().Alive() {
		t.Fatal("another actor died")
	}
	runs := 0
	do(t, other, func(t *Turn) error {
		y := NewField(t, 0)
		t.Dataflow(func(t *Turn) error { runs++; y.Get(t); return nil })
		y.Set(t, 1)
		return nil
	})
	if runs != 2 || !other.Actor().Alive() {
		t.Fatalf("other actor: runs %d alive %v", runs, other.Actor().Alive())
	}
}

// An error from the first run fails the turn at once with that error.
func TestDataflowInitialRunError(t *testing.T) {
	s := newSys(t)
	after := false
	a := s.Spawn("a", func(t *Turn) error {
		t.Dataflow(func(*Turn) error { return errBoom })
		after = true
		return nil
	})
	waitDone(t, a)
	if !errors.Is(a.Err(), errBoom) || errors.Is(a.Err(), ErrPanic) {
		t.Fatalf("exit error %v, want errBoom itself", a.Err())
	}
	if after {
		t.Fatal("Dataflow returned after its block failed")
	}
}

// A block damaging its own dependency every run is stopped after
// MaxRepairPasses passes with ErrDataflowLoop.
func TestDataflowRunawayLoopBounded(t *testing.T) {
	s := newSys(t)
	sink := &recorder{}
	_, sref := hold(t, s, "sink", sink)
	runs := 0
	var fid FacetID
	a := s.Spawn("a", func(t *Turn) error {
		fid = t.ActiveFacet()
		x := NewField(t, 0)
		t.Assert(sref, sym("doomed"))
		t.Dataflow(func(t *Turn) error {
			runs++
			x.Set(t, x.Get(t)+1)
			return nil
		})
		return nil
	})
	waitDone(t, a)
	err := a.Err()
	if !errors.Is(err, ErrDataflowLoop) {
		t.Fatalf("exit error %v, want ErrDataflowLoop", err)
	}
	if runs != MaxRepairPasses+1 {
		t.Fatalf("%d runs, want %d", runs, MaxRepairPasses+1)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("facets [%d]", fid)) {
		t.Fatalf("error does not name the facet %d: %v", fid, err)
	}
	// The failed boot turn was rolled back: the sink never heard of it.
	probe, _, _ := client(t, s, "probe")
	do(t, probe, func(t *Turn) error { t.Message(sref, sym("probe")); return nil })
	waitFor(t, "probe", func() bool { return sink.len() >= 1 })
	if tr := sink.trace(); !slices.Equal(tr, []string{"message probe"}) {
		t.Fatalf("rolled-back turn leaked %v", tr)
	}
}

// Using a field in another actor's turn panics with ErrForeignField,
// crashing that actor only; the field is left untouched.
func TestFieldForeignActor(t *testing.T) {
	ops := map[string]func(t *Turn, x *Field[int]){
		"get":      func(t *Turn, x *Field[int]) { x.Get(t) },
		"set":      func(t *Turn, x *Field[int]) { x.Set(t, 9) },
		"update":   func(t *Turn, x *Field[int]) { x.Update(t, func(v *int) { *v = 9 }) },
		"dataflow": func(t *Turn, x *Field[int]) { t.Dataflow(func(t *Turn) error { x.Get(t); return nil }) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			s := newSys(t)
			owner, _, _ := client(t, s, "owner")
			var x *Field[int]
			runs := 0
			do(t, owner, func(t *Turn) error {
				x = NewField(t, 1)
				t.Dataflow(func(t *Turn) error { runs++; x.Get(t); return nil })
				return nil
			})
			intruder, _, _ := client(t, s, "intruder")
			do(t, intruder, func(t *Turn) error { op(t, x); return nil })
			waitDone(t, intruder.Actor())
			err := intruder.Actor().Err()
			if !errors.Is(err, ErrForeignField) || !errors.Is(err, ErrPanic) {
				t.Fatalf("intruder's exit error %v, want ErrForeignField", err)
			}
			if !strings.Contains(err.Error(), `"owner"`) || !strings.Contains(err.Error(), `"intruder"`) {
				t.Fatalf("error does not name both actors: %v", err)
			}
			var got int
			do(t, owner, func(t *Turn) error { got = x.Get(t); return nil })
			if !owner.Actor().Alive() || got != 1 || runs != 1 || len(x.core.deps) != 1 {
				t.Fatalf("owner: alive %v value %d runs %d dependents %d", owner.Actor().Alive(), got, runs, len(x.core.deps))
			}
		})
	}
}

// Fields used without any dataflow block, and a turn that damages a field
// nobody reads, commit normally.
func TestFieldWithoutBlocks(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	var x *Field[string]
	do(t, fr, func(t *Turn) error { x = NewField(t, "a"); x.Get(t); return nil })
	if fr.Actor().df != nil {
		t.Fatal("creating and reading a field allocated dataflow state")
	}
	do(t, fr, func(t *Turn) error { x.Set(t, "b"); return nil })
	var got string
	do(t, fr, func(t *Turn) error { got = x.Get(t); return nil })
	if got != "b" || !fr.Actor().Alive() || len(fr.Actor().df.damaged) != 0 {
		t.Fatalf("value %q alive %v damaged %d", got, fr.Actor().Alive(), len(fr.Actor().df.damaged))
	}
}

// Damage done by a pre-commit action, including one queued by a block
// during repair, is repaired before the turn commits.
func TestDataflowDamageInPreCommit(t *testing.T) {
	s := newSys(t)
	sink := &recorder{}
	_, sref := hold(t, s, "sink", sink)
	fr, _, _ := client(t, s, "a")
	var x, y *Field[int64]
	var seenY []int64
	do(t, fr, func(t *Turn) error {
		x, y = NewField[int64](t, 0), NewField[int64](t, 0)
		t.Dataflow(func(t *Turn) error {
			if v := x.Get(t); v > 0 {
				t.PreCommit(func(t *Turn) error { y.Set(t, v+1); return nil })
			}
			return nil
		})
		var h Handle
		t.Dataflow(func(t *Turn) error {
			seenY = append(seenY, y.Get(t))
			t.Update(&h, sref, preserves.Int(y.Get(t)))
			return nil
		})
		return nil
	})
	do(t, fr, func(t *Turn) error {
		t.PreCommit(func(t *Turn) error { x.Set(t, 10); return nil })
		return nil
	})
	if !slices.Equal(seenY, []int64{0, 11}) || !fr.Actor().Alive() {
		t.Fatalf("y runs saw %v (alive %v), want [0 11]", seenY, fr.Actor().Alive())
	}
	settle(t, fr, sref)
	if st := sink.state(); !equalVals(st, vals(preserves.Int(11))) {
		t.Fatalf("sink holds %v", st)
	}
}

// BenchmarkFieldSetRepair: one turn setting a field read by one block,
// which re-runs at commit.
func BenchmarkFieldSetRepair(b *testing.B) {
	s := NewSystem(Options{})
	defer s.Shutdown(context.Background())
	ch := make(chan FacetRef, 1)
	s.Spawn("a", func(t *Turn) error {
		t.PreventInertCheck()
		ch <- t.FacetRef()
		return nil
	})
	fr := <-ch
	var x *Field[int]
	sum := 0
	fr.Activate(func(t *Turn) error {
		x = NewField(t, 0)
		t.Dataflow(func(t *Turn) error { sum += x.Get(t); return nil })
		return nil
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fr.Activate(func(t *Turn) error { x.Set(t, 1); return nil })
	}
	b.StopTimer()
	if sum != b.N {
		b.Fatalf("block ran %d times for %d sets", sum, b.N)
	}
}
