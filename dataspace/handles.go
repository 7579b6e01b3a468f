package dataspace

// Per-assertion bookkeeping of entities.
//
// Many entities do something for exactly as long as each assertion they
// receive lasts: run a facet (a During, a gatekeeper's resolution, a
// static file request), or hold an assertion of their own elsewhere (a
// mirror). Retract names only the handle, so they keep a map from it;
// these maps hold the Retract side once.

// HandleFacets maps the handles of the assertions an entity holds to the
// facets it runs for them.
type HandleFacets map[Handle]FacetID

// Start runs boot in a fresh child facet of the active facet, for
// assertion h (call it from Assert).
func (m HandleFacets) Start(t *Turn, h Handle, boot func(t *Turn) error) error {
	id, err := t.Facet(boot)
	m[h] = id
	return err
}

// Stop stops the facet run for assertion h, if any (call it from Retract).
func (m HandleFacets) Stop(t *Turn, h Handle) {
	if id, ok := m[h]; ok {
		delete(m, h)
		t.StopFacet(id)
	}
}

// HandleAssertions maps the handles of the assertions an entity holds to
// the assertions it made for them.
type HandleAssertions map[Handle]Handle

// Retract withdraws the assertion made for h, if any (call it from
// Retract).
func (m HandleAssertions) Retract(t *Turn, h Handle) {
	if x, ok := m[h]; ok {
		delete(m, h)
		t.Retract(x)
	}
}

// Held maps the handles of the assertions an entity holds to what it
// keeps of each, for its Retract.
type Held[T any] map[Handle]T

// Take removes and returns what was kept for h; ok is false when nothing
// was (an assertion the entity ignored). Call it from Retract.
func (m Held[T]) Take(h Handle) (v T, ok bool) {
	if v, ok = m[h]; ok {
		delete(m, h)
	}
	return v, ok
}
