package dataspace

import (
	"github.com/syndicate-go/syndicate/dataspace/index"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Observe returns the assertion `<Observe pattern #:observer>` that
// subscribes observer to everything in a dataspace matching p.
func Observe(p pattern.Pattern, observer *Ref) preserves.Value {
	return preserves.NewRecord(dsschema.LabelObserve, pattern.ToValue(p), Embed(observer))
}

// ParseObserve recognises an Observe assertion with a well-formed pattern
// and an embedded Ref observer.
func ParseObserve(v preserves.Value) (pattern.Pattern, *Ref, bool) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok || len(r.Fields) != 2 || !preserves.Equal(r.Label, dsschema.LabelObserve) {
		return nil, nil, false
	}
	obs, ok := RefOf(r.Fields[1])
	if !ok {
		return nil, nil, false
	}
	p, err := pattern.FromValue(r.Fields[0])
	if err != nil {
		return nil, nil, false
	}
	return p, obs, true
}

// observerIndex is what the Dataspace entity needs from its index
// (*index.Index; the tests also run a naive model behind it): a bag of
// asserted values plus observer registrations (runtime spec §12.5). It is
// pure; notifications go out through the emitter.
type observerIndex interface {
	Insert(v preserves.Value, em index.Emitter) bool
	Remove(v preserves.Value, em index.Emitter) bool
	Send(v preserves.Value, em index.Emitter)
	AddObserver(p pattern.Pattern, obs index.Observer, em index.Emitter)
	RemoveObserver(p pattern.Pattern, obs index.Observer, em index.Emitter)
}

// dataspace is the Dataspace entity of runtime spec §10: a bag of
// assertions with multiplicity, routing assertions, retractions and
// messages to Observe-ers through the index. Its state is owned by the
// actor whose facet holds it, like any entity's.
type dataspace struct {
	BaseEntity // Sync
	idx        observerIndex
	handles    map[Handle]preserves.Value
	// handlesPeak is handles' largest size since it was last rebuilt
	// (shrinkMap).
	handlesPeak int
	t           *Turn // the turn of the callback in progress (emitter)

	// observers maps each observer capability to one canonical *Ref,
	// which is what the index sees: equal Refs may be distinct pointers
	// (an Observe retracted by a different but equal value must find its
	// registration), and the index needs a comparable identity.
	observers map[RefKey]*canonObserver
}

type canonObserver struct {
	ref *Ref
	n   int // registrations using it
}

// NewDataspace returns a fresh Dataspace entity; place it with t.Create.
func NewDataspace() Entity { return newDataspaceWith(index.New()) }

func newDataspaceWith(idx observerIndex) *dataspace {
	return &dataspace{
		idx:       idx,
		handles:   make(map[Handle]preserves.Value),
		observers: make(map[RefKey]*canonObserver),
	}
}

func (d *dataspace) addObserver(p pattern.Pattern, obs *Ref) {
	k := obs.Key()
	c := d.observers[k]
	if c == nil {
		c = &canonObserver{ref: obs}
		d.observers[k] = c
	}
	c.n++
	d.idx.AddObserver(p, c.ref, d)
}

func (d *dataspace) removeObserver(p pattern.Pattern, obs *Ref) {
	k := obs.Key()
	c := d.observers[k]
	if c == nil {
		return
	}
	d.idx.RemoveObserver(p, c.ref, d)
	if c.n--; c.n == 0 {
		delete(d.observers, k)
	}
}

func (d *dataspace) Assert(t *Turn, v preserves.Value, h Handle) error {
	d.t = t
	if d.idx.Insert(v, d) {
		if p, obs, ok := ParseObserve(v); ok {
			d.addObserver(p, obs)
		}
	}
	d.handles[h] = v
	d.t = nil
	return nil
}

func (d *dataspace) Retract(t *Turn, h Handle) error {
	v, ok := d.handles[h]
	if !ok {
		t.Log().Warn().Uint64("handle", uint64(h)).Msg("dataspace: retraction of unknown handle")
		return nil
	}
	delete(d.handles, h)
	d.handles = shrinkMap(d.handles, &d.handlesPeak)
	d.t = t
	if d.idx.Remove(v, d) {
		if p, obs, ok := ParseObserve(v); ok {
			d.removeObserver(p, obs)
		}
	}
	d.t = nil
	return nil
}

func (d *dataspace) Message(t *Turn, v preserves.Value) error {
	d.t = t
	d.idx.Send(v, d)
	d.t = nil
	return nil
}

// AssertTo implements index.Emitter: assert the tuple to the observer
// from the dataspace's facet, in the current turn.
func (d *dataspace) AssertTo(obs index.Observer, captures preserves.Sequence) (uint64, bool) {
	h := d.t.Assert(obs.(*Ref), captures)
	return uint64(h), h != 0
}

// RetractFrom implements index.Emitter.
func (d *dataspace) RetractFrom(_ index.Observer, h uint64) { d.t.Retract(Handle(h)) }

// SendTo implements index.Emitter.
func (d *dataspace) SendTo(obs index.Observer, captures preserves.Value) {
	d.t.Message(obs.(*Ref), captures)
}
