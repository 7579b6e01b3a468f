package dataspace

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// During observes p in the dataspace ds from the active facet. For each
// capture tuple that appears, fn runs in a fresh child facet of the active
// facet; that facet is stopped (stop actions run, its assertions are
// retracted) when the tuple disappears. The per-tuple facet is kept alive
// by a never-disarmed inert-check preventer, so its lifetime is exactly the
// tuple's (runtime spec §13, §19 quirk 7, copied). Tuples whose length does
// not match p's number of captures are ignored. It returns the handle of
// the Observe assertion.
func (t *Turn) During(ds *Ref, p pattern.Pattern, fn func(t *Turn, captures []preserves.Value) error) Handle {
	e := &duringEntity{n: countBinds(p), fn: fn, facets: make(HandleFacets)}
	return t.Assert(ds, Observe(p, t.Create(e)))
}

// OnMessage observes messages matching p sent to the dataspace ds; fn runs
// (in the active facet) with the captures of each. It returns the handle of
// the Observe assertion.
func (t *Turn) OnMessage(ds *Ref, p pattern.Pattern, fn func(t *Turn, captures []preserves.Value) error) Handle {
	e := &onMessageEntity{n: countBinds(p), fn: fn}
	return t.Assert(ds, Observe(p, t.Create(e)))
}

type duringEntity struct {
	BaseEntity
	n      int
	fn     func(t *Turn, captures []preserves.Value) error
	facets HandleFacets
}

func (e *duringEntity) Assert(t *Turn, v preserves.Value, h Handle) error {
	caps, ok := captureTuple(v, e.n)
	if !ok {
		return nil
	}
	return e.facets.Start(t, h, func(t *Turn) error {
		t.PreventInertCheck() // never disarmed: lives exactly as long as h
		return e.fn(t, caps)
	})
}

func (e *duringEntity) Retract(t *Turn, h Handle) error {
	e.facets.Stop(t, h)
	return nil
}

type onMessageEntity struct {
	BaseEntity
	n  int
	fn func(t *Turn, captures []preserves.Value) error
}

func (e *onMessageEntity) Message(t *Turn, v preserves.Value) error {
	if caps, ok := captureTuple(v, e.n); ok {
		return e.fn(t, caps)
	}
	return nil
}

func captureTuple(v preserves.Value, n int) ([]preserves.Value, bool) {
	s, ok := preserves.Unwrap(v).(preserves.Sequence)
	return s, ok && len(s) == n
}

// countBinds returns the number of captures p produces.
func countBinds(p pattern.Pattern) int {
	switch x := p.(type) {
	case pattern.Bind:
		return 1 + countBinds(x.Pattern)
	case pattern.Group:
		n := 0
		for _, e := range x.Entries {
			n += countBinds(e.Pattern)
		}
		return n
	}
	return 0
}
