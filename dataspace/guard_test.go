package dataspace

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// point is the typed value of the guard tests: <point x y> with integers.
type point struct{ X, Y int64 }

func parsePoint(v preserves.Value) (point, bool) {
	r, ok := v.(*preserves.Record)
	if !ok || !preserves.Equal(r.Label, sym("point")) || len(r.Fields) != 2 {
		return point{}, false
	}
	x, ok1 := r.Fields[0].(preserves.Int)
	y, ok2 := r.Fields[1].(preserves.Int)
	if !ok1 || !ok2 {
		return point{}, false
	}
	return point{int64(x), int64(y)}, true
}

func pointVal(x, y int64) preserves.Value {
	return preserves.Rec("point", preserves.Int(x), preserves.Int(y))
}

// typedRecorder logs what reaches a TypedEntity[point].
type typedRecorder struct {
	mu  sync.Mutex
	log []string
}

func (r *typedRecorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *typedRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

func (r *typedRecorder) Assert(_ *Turn, p point, h Handle) error {
	r.add(fmt.Sprintf("assert %d,%d", p.X, p.Y))
	return nil
}

func (r *typedRecorder) Retract(_ *Turn, h Handle) error {
	r.add(fmt.Sprintf("retract %d", h))
	return nil
}

func (r *typedRecorder) Message(_ *Turn, p point) error {
	r.add(fmt.Sprintf("message %d,%d", p.X, p.Y))
	return nil
}

func (r *typedRecorder) Sync(t *Turn, peer *Ref) error {
	r.add("sync")
	t.Message(peer, preserves.Bool(true))
	return nil
}

// Parsed values arrive typed, unparseable ones are dropped, every
// retraction is forwarded (also for a handle whose assertion was dropped),
// and Sync reaches the typed entity.
func TestGuardFiltersAndForwards(t *testing.T) {
	s := newSys(t)
	tr := &typedRecorder{}
	_, gref := hold(t, s, "guarded", Guard(parsePoint, tr))
	fr, _, _ := client(t, s, "client")
	var good, bad Handle
	do(t, fr, func(t *Turn) error {
		good = t.Assert(gref, pointVal(1, 2))
		bad = t.Assert(gref, preserves.Rec("point", preserves.String("one"), preserves.Int(2)))
		t.Message(gref, pointVal(3, 4))
		t.Message(gref, sym("junk"))
		t.Message(gref, pointVal(5, 6))
		return nil
	})
	do(t, fr, func(t *Turn) error {
		t.Retract(bad)
		t.Retract(good)
		return nil
	})
	settle(t, fr, gref)
	want := []string{
		"assert 1,2", "message 3,4", "message 5,6",
		fmt.Sprintf("retract %d", bad), fmt.Sprintf("retract %d", good),
		"sync",
	}
	if got := tr.lines(); !slices.Equal(got, want) {
		t.Fatalf("typed entity saw %v, want %v", got, want)
	}
}

// BaseTypedEntity gives defaults (Sync answers), and a guarded typed
// entity that implements StopHandler hears its facet stop.
type stoppingPoints struct {
	BaseTypedEntity[point]
	stopped *bool
	got     *[]point
}

func (s stoppingPoints) Message(_ *Turn, p point) error {
	*s.got = append(*s.got, p)
	return nil
}

func (s stoppingPoints) OnStop(*Turn) error {
	*s.stopped = true
	return nil
}

func TestGuardBaseTypedEntityAndStopHandler(t *testing.T) {
	s := newSys(t)
	fr, _, _ := client(t, s, "a")
	stopped := false
	var got []point
	var id FacetID
	var ref *Ref
	do(t, fr, func(t *Turn) error {
		id, _ = t.Facet(func(t *Turn) error {
			t.PreventInertCheck()
			ref = t.Create(Guard(parsePoint, stoppingPoints{stopped: &stopped, got: &got}))
			return nil
		})
		return nil
	})
	// Sync through the guard uses BaseTypedEntity's default reply.
	settle(t, fr, ref)
	if _, isStop := Guard(parsePoint, &typedRecorder{}).(StopHandler); isStop {
		t.Fatal("guard claims StopHandler for an entity without OnStop")
	}
	do(t, fr, func(t *Turn) error {
		t.Message(ref, pointVal(7, 8))
		t.Message(ref, preserves.Int(7))
		return nil
	})
	settle(t, fr, ref)
	if !slices.Equal(got, []point{{7, 8}}) {
		t.Fatalf("messages %v", got)
	}
	do(t, fr, func(t *Turn) error { t.StopFacet(id); return nil })
	if !stopped {
		t.Fatal("typed entity's OnStop did not run")
	}
}
