package dataspace

import (
	"errors"
	"slices"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/index"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// Runtime spec §18 scenarios 16, 27–42 and 50, against the real Dataspace.

// dsEnv is a dataspace in its own actor plus a client actor whose recorder
// entity is used as the observer. Because the observer lives in the client
// actor, settle() (a sync with the dataspace) guarantees every notification
// caused by the client's earlier turns has arrived.
type dsEnv struct {
	s      *System
	dsA    *Actor
	dsFR   FacetRef
	ds     *Ref
	ent    *dataspace
	fr     FacetRef
	obs    *recorder
	obsRef *Ref
}

func newDSEnv(tb testing.TB) *dsEnv {
	return newDSEnvWith(tb, newSys(tb), index.New())
}

func newDSEnvWith(tb testing.TB, s *System, idx observerIndex) *dsEnv {
	tb.Helper()
	e := &dsEnv{s: s, ent: newDataspaceWith(idx)}
	ready := make(chan struct{})
	e.dsA = s.Spawn("ds", func(t *Turn) error {
		t.PreventInertCheck()
		e.dsFR = t.FacetRef()
		e.ds = t.Create(e.ent)
		close(ready)
		return nil
	})
	<-ready
	e.fr, e.obs, e.obsRef = client(tb, s, "client")
	return e
}

func (e *dsEnv) assert(tb testing.TB, r *Ref, v preserves.Value) Handle {
	tb.Helper()
	var h Handle
	do(tb, e.fr, func(t *Turn) error { h = t.Assert(r, v); return nil })
	return h
}

func (e *dsEnv) retract(tb testing.TB, h Handle) {
	tb.Helper()
	do(tb, e.fr, func(t *Turn) error { t.Retract(h); return nil })
}

func (e *dsEnv) send(tb testing.TB, v preserves.Value) {
	tb.Helper()
	do(tb, e.fr, func(t *Turn) error { t.Message(e.ds, v); return nil })
}

func (e *dsEnv) observe(tb testing.TB, p pattern.Pattern, obs *Ref) Handle {
	tb.Helper()
	return e.assert(tb, e.ds, Observe(p, obs))
}

func (e *dsEnv) settle(tb testing.TB) {
	tb.Helper()
	settle(tb, e.fr, e.ds)
}

// distinct returns the number of distinct values in the dataspace, read
// under the dataspace actor's turn lock.
func (e *dsEnv) distinct(tb testing.TB) int {
	tb.Helper()
	n := -1
	do(tb, e.dsFR, func(*Turn) error {
		n = e.ent.idx.(*index.Index).Len()
		return nil
	})
	return n
}

func (e *dsEnv) wantTrace(tb testing.TB, r *recorder, want ...string) {
	tb.Helper()
	e.settle(tb)
	if got := r.trace(); !slices.Equal(got, want) {
		tb.Fatalf("observer saw %q, want %q", got, want)
	}
}

func (e *dsEnv) wantState(tb testing.TB, r *recorder, want ...preserves.Value) {
	tb.Helper()
	e.settle(tb)
	slices.SortFunc(want, preserves.Compare)
	if got := r.state(); !equalVals(got, want) {
		tb.Fatalf("observer holds %v, want %v", got, want)
	}
}

var fooX = pattern.Rec(sym("foo"), pattern.Capture())

func foo(fs ...preserves.Value) preserves.Value { return preserves.Rec("foo", fs...) }

func i(n int) preserves.Value { return preserves.Int(n) }

func TestScenario16_UpdateToEqualValueIsInvisible(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, fooX, e.obsRef)
	var slot Handle
	do(t, e.fr, func(t *Turn) error { t.Update(&slot, e.ds, foo(i(1))); return nil })
	first := slot
	do(t, e.fr, func(t *Turn) error { t.Update(&slot, e.ds, foo(i(1))); return nil })
	if slot == first || slot == 0 {
		t.Fatalf("slot %d after update (was %d)", slot, first)
	}
	e.wantTrace(t, e.obs, "assert [1]")
	do(t, e.fr, func(t *Turn) error { t.Update(&slot, e.ds, foo(i(2))); return nil })
	e.wantState(t, e.obs, seq(i(2)))
	do(t, e.fr, func(t *Turn) error { t.Update(&slot, e.ds, nil); return nil })
	e.wantState(t, e.obs)
	if slot != 0 {
		t.Fatalf("slot %d after retracting update", slot)
	}
}

func TestScenario27_ObserveThenAssert(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, fooX, e.obsRef)
	e.assert(t, e.ds, foo(i(1)))
	e.wantTrace(t, e.obs, "assert [1]")
}

func TestScenario28_ExtraFieldsSameTuple(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, fooX, e.obsRef)
	h1 := e.assert(t, e.ds, foo(i(1)))
	h2 := e.assert(t, e.ds, foo(i(1), i(2)))
	e.wantTrace(t, e.obs, "assert [1]")
	e.retract(t, h1)
	e.wantTrace(t, e.obs, "assert [1]")
	e.retract(t, h2)
	e.wantTrace(t, e.obs, "assert [1]", "retract")
}

func TestScenario29_Multiplicity(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, fooX, e.obsRef)
	h1 := e.assert(t, e.ds, foo(i(1)))
	h2 := e.assert(t, e.ds, foo(i(1)))
	e.retract(t, h1)
	e.wantTrace(t, e.obs, "assert [1]")
	e.retract(t, h2)
	e.wantTrace(t, e.obs, "assert [1]", "retract")
}

func TestScenario30_ReplayAndOrderIndependence(t *testing.T) {
	data := vals(foo(i(1)), foo(i(1), i(2)), foo(i(2)), preserves.Rec("bar", i(3)))
	// Data first, then Observe: one assertion per distinct tuple.
	e1 := newDSEnv(t)
	for _, v := range data {
		e1.assert(t, e1.ds, v)
	}
	e1.observe(t, fooX, e1.obsRef)
	e1.settle(t)
	if n := len(e1.obs.events()); n != 2 {
		t.Fatalf("replay delivered %d events: %v", n, e1.obs.trace())
	}
	e1.wantState(t, e1.obs, seq(i(1)), seq(i(2)))
	// Observe first, then data: same final state.
	e2 := newDSEnv(t)
	e2.observe(t, fooX, e2.obsRef)
	for _, v := range data {
		e2.assert(t, e2.ds, v)
	}
	e2.wantState(t, e2.obs, seq(i(1)), seq(i(2)))
}

func TestScenario31_RetractObserveRetractsTuples(t *testing.T) {
	e := newDSEnv(t)
	e.assert(t, e.ds, foo(i(1)))
	e.assert(t, e.ds, foo(i(2)))
	ho := e.observe(t, fooX, e.obsRef)
	e.wantState(t, e.obs, seq(i(1)), seq(i(2)))
	e.retract(t, ho)
	e.wantState(t, e.obs)
	if n := len(e.obs.events()); n != 4 {
		t.Fatalf("got %v", e.obs.trace())
	}
	// The registration is gone: new data is not delivered.
	e.assert(t, e.ds, foo(i(3)))
	e.wantState(t, e.obs)
}

func TestScenario32_IdenticalObservesRegisterOnce(t *testing.T) {
	e := newDSEnv(t)
	// The second Observe carries an equal Ref that is a different pointer,
	// as a relay would produce.
	clone := *e.obsRef
	h1 := e.observe(t, fooX, e.obsRef)
	h2 := e.observe(t, fooX, &clone)
	e.assert(t, e.ds, foo(i(1)))
	e.wantTrace(t, e.obs, "assert [1]")
	e.retract(t, h1)
	e.assert(t, e.ds, foo(i(2)))
	e.wantTrace(t, e.obs, "assert [1]", "assert [2]")
	e.retract(t, h2)
	e.wantState(t, e.obs)
	e.assert(t, e.ds, foo(i(3)))
	e.wantState(t, e.obs)
	do(t, e.dsFR, func(*Turn) error {
		if len(e.ent.observers) != 0 {
			return errors.New("observer not forgotten")
		}
		return nil
	})
}

func TestScenario33_Messages(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, fooX, e.obsRef)
	other := &recorder{}
	var otherRef *Ref
	do(t, e.fr, func(t *Turn) error { otherRef = t.Create(other); return nil })
	e.observe(t, pattern.Rec(sym("foo")), otherRef)
	e.settle(t)
	before := e.distinct(t)
	e.send(t, foo(i(1)))
	e.send(t, foo(i(1)))
	e.send(t, preserves.Rec("bar", i(1)))
	e.send(t, foo(i(2), i(3)))
	e.wantTrace(t, e.obs, "message [1]", "message [1]", "message [2]")
	e.wantTrace(t, other, "message []", "message []", "message []")
	if after := e.distinct(t); after != before {
		t.Fatalf("messages changed the dataspace: %d → %d values", before, after)
	}
}

func TestScenario34_ArrayExtensibility(t *testing.T) {
	e := newDSEnv(t)
	p := pattern.NewGroup(pattern.ArrType{}, pattern.Entry{Key: i(1), Pattern: pattern.Discard{}})
	e.observe(t, p, e.obsRef)
	e.send(t, seq(i(1)))
	e.send(t, seq(i(1), i(2)))
	e.send(t, seq(i(1), i(2), i(3)))
	e.wantTrace(t, e.obs, "message []", "message []")
}

func TestScenario35_Dictionary(t *testing.T) {
	e := newDSEnv(t)
	p := pattern.Dict(pattern.Entry{Key: sym("a"), Pattern: pattern.Capture()})
	e.observe(t, p, e.obsRef)
	e.send(t, preserves.NewDictionary(
		preserves.DictEntry{Key: sym("a"), Value: i(1)},
		preserves.DictEntry{Key: sym("b"), Value: i(2)}))
	e.send(t, preserves.NewDictionary(preserves.DictEntry{Key: sym("b"), Value: i(2)}))
	e.wantTrace(t, e.obs, "message [1]")
}

func TestScenario36_LabelsAndArity(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, pattern.Rec(sym("foo")), e.obsRef)
	seqLabel := seq(i(1), i(2))
	second := &recorder{}
	var secondRef *Ref
	do(t, e.fr, func(t *Turn) error { secondRef = t.Create(second); return nil })
	e.observe(t, pattern.Rec(seqLabel), secondRef)
	e.send(t, preserves.Rec("foo"))
	e.send(t, foo(i(1), i(2)))
	e.send(t, preserves.NewRecord(preserves.String("foo")))
	e.send(t, preserves.Rec("bar"))
	e.send(t, preserves.NewRecord(seq(i(1), i(2)), i(9)))
	e.send(t, preserves.NewRecord(seq(i(1))))
	e.wantTrace(t, e.obs, "message []", "message []")
	e.wantTrace(t, second, "message []")
}

func TestScenario37_CaptureOrder(t *testing.T) {
	e := newDSEnv(t)
	// <group <rec p> {0: <bind <group <arr> {0: <bind <_>>}>>, 1: <bind <_>>}>
	p := pattern.Rec(sym("p"), pattern.Bind{Pattern: pattern.Arr(pattern.Capture())}, pattern.Capture())
	e.observe(t, p, e.obsRef)
	e.send(t, preserves.Rec("p", seq(i(7), i(8)), i(9)))
	e.wantTrace(t, e.obs, "message [[7 8] 7 9]")

	second := &recorder{}
	var secondRef *Ref
	do(t, e.fr, func(t *Turn) error { secondRef = t.Create(second); return nil })
	q := pattern.NewGroup(pattern.RecType{Label: sym("q")},
		pattern.Entry{Key: i(10), Pattern: pattern.Capture()},
		pattern.Entry{Key: i(2), Pattern: pattern.Capture()})
	e.observe(t, q, secondRef)
	fields := make([]preserves.Value, 11)
	for k := range fields {
		fields[k] = i(k * 100)
	}
	e.send(t, preserves.Rec("q", fields...))
	e.wantTrace(t, second, "message [200 1000]")
}

func TestScenario38_BindDiscardSeesEverything(t *testing.T) {
	e := newDSEnv(t)
	all := pattern.Capture()
	e.observe(t, all, e.obsRef)
	e.assert(t, e.ds, foo(i(1)))
	e.wantState(t, e.obs, seq(foo(i(1))), seq(Observe(all, e.obsRef)))
}

func TestScenario39_MalformedObserveIsPlainAssertion(t *testing.T) {
	e := newDSEnv(t)
	meta := &recorder{}
	var metaRef *Ref
	do(t, e.fr, func(t *Turn) error { metaRef = t.Create(meta); return nil })
	e.observe(t, pattern.Rec(sym("Observe"), pattern.Capture(), pattern.Discard{}), metaRef)
	bad := preserves.Rec("lit", seq(i(1)))
	e.assert(t, e.ds, preserves.NewRecord(sym("Observe"), bad, Embed(e.obsRef)))
	e.assert(t, e.ds, foo(i(1)))
	e.assert(t, e.ds, seq(i(1)))
	e.wantTrace(t, e.obs)
	e.wantState(t, meta, seq(bad), seq(pattern.ToValue(pattern.Rec(sym("Observe"), pattern.Capture(), pattern.Discard{}))))
	do(t, e.dsFR, func(*Turn) error {
		if len(e.ent.observers) != 1 {
			return errors.New("malformed Observe registered an observer")
		}
		return nil
	})
}

func mustCaveat(tb testing.TB, v preserves.Value) caveat.Caveat {
	tb.Helper()
	c, err := caveat.FromValue(v)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestScenario40_AttenuatedObserver(t *testing.T) {
	e := newDSEnv(t)
	// <reject <arr [<lit 2>]>>
	c := mustCaveat(t, preserves.Rec("reject", preserves.Rec("arr", seq(preserves.Rec("lit", i(2))))))
	att, err := e.obsRef.Attenuate(c)
	if err != nil {
		t.Fatal(err)
	}
	e.observe(t, fooX, att)
	for n := 1; n <= 3; n++ {
		e.assert(t, e.ds, foo(i(n)))
	}
	e.wantState(t, e.obs, seq(i(1)), seq(i(3)))
	e.send(t, foo(i(2)))
	e.send(t, foo(i(4)))
	e.settle(t)
	tr := e.obs.trace()
	if tr[len(tr)-1] != "message [4]" || slices.Contains(tr, "message [2]") {
		t.Fatalf("got %v", tr)
	}
}

func TestScenario41_ObserverActorExitRetractsObserve(t *testing.T) {
	e := newDSEnv(t)
	e.observe(t, pattern.Rec(sym("Observe"), pattern.Capture(), pattern.Discard{}), e.obsRef)
	var ofr FacetRef
	ready := make(chan struct{})
	oa := e.s.Spawn("observer", func(t *Turn) error {
		ofr = t.FacetRef()
		t.During(e.ds, fooX, func(*Turn, []preserves.Value) error { return nil })
		close(ready)
		return nil
	})
	<-ready
	waitFor(t, "observe", func() bool { e.settle(t); return len(e.obs.state()) == 2 })
	ofr.Activate(func(t *Turn) error { t.StopRoot(); return nil })
	waitDone(t, oa)
	waitFor(t, "observe retracted", func() bool { e.settle(t); return len(e.obs.state()) == 1 })
	do(t, e.dsFR, func(*Turn) error {
		if len(e.ent.observers) != 1 { // only the test's own
			return errors.New("dataspace did not forget the observer")
		}
		return nil
	})
}

func TestScenario42_DataspaceExitRetractsEverything(t *testing.T) {
	for _, crash := range []bool{false, true} {
		e := newDSEnv(t)
		e.observe(t, fooX, e.obsRef)
		e.assert(t, e.ds, foo(i(1)))
		e.assert(t, e.ds, foo(i(2)))
		e.wantState(t, e.obs, seq(i(1)), seq(i(2)))
		e.dsFR.Activate(func(t *Turn) error {
			if crash {
				return errBoom
			}
			t.StopRoot()
			return nil
		})
		waitDone(t, e.dsA)
		waitFor(t, "retractions", func() bool { return len(e.obs.state()) == 0 })
		if n := len(e.obs.events()); n != 4 {
			t.Fatalf("crash=%v: got %v", crash, e.obs.trace())
		}
	}
}

func TestScenario50_SyncIgnoresAttenuation(t *testing.T) {
	s := newSys(t)
	r := &recorder{}
	_, ref := hold(t, s, "e", r)
	fr, _, _ := client(t, s, "c")
	att, err := ref.Attenuate(mustCaveat(t, preserves.Rec("reject", preserves.Rec("_"))))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var h Handle = 1
	do(t, fr, func(t *Turn) error {
		h = t.Assert(att, sym("x"))
		t.Message(att, sym("m"))
		t.Sync(att, func(*Turn) error { close(done); return nil })
		return nil
	})
	<-done
	if h != 0 {
		t.Fatalf("rejected assertion got handle %d", h)
	}
	if got := r.trace(); !slices.Equal(got, []string{"sync"}) {
		t.Fatalf("got %v", got)
	}
}
