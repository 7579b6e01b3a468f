package dataspace

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// observeLabel is the label of `<Observe @pattern @observer #:any>`.
const observeLabel = preserves.Symbol("Observe")

// Observe returns the assertion `<Observe pattern #:observer>` that
// subscribes observer to everything in a dataspace matching p.
func Observe(p pattern.Pattern, observer *Ref) preserves.Value {
	return preserves.NewRecord(observeLabel, pattern.ToValue(p), Embed(observer))
}

// ParseObserve recognises an Observe assertion with a well-formed pattern
// and an embedded Ref observer.
func ParseObserve(v preserves.Value) (pattern.Pattern, *Ref, bool) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok || len(r.Fields) != 2 || !preserves.Equal(r.Label, observeLabel) {
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

// observerIndex is what the Dataspace entity needs from its index: a bag
// of asserted values plus observer registrations (runtime spec §12.5). It
// is pure; notifications go out through the emitter.
type observerIndex interface {
	Insert(v preserves.Value, em emitter) bool
	Remove(v preserves.Value, em emitter) bool
	Send(v preserves.Value, em emitter)
	AddObserver(p pattern.Pattern, obs *Ref, em emitter)
	RemoveObserver(p pattern.Pattern, obs *Ref, em emitter)
}

// emitter sends index notifications to observers in the current turn.
type emitter interface {
	AssertTo(obs *Ref, captures []preserves.Value) (uint64, bool)
	RetractFrom(obs *Ref, h uint64)
	SendTo(obs *Ref, captures []preserves.Value)
}

// dataspace is the Dataspace entity of runtime spec §10: a bag of
// assertions with multiplicity, routing assertions, retractions and
// messages to Observe-ers through the index. Its state is owned by the
// actor whose facet holds it, like any entity's.
type dataspace struct {
	idx     observerIndex
	handles map[Handle]preserves.Value
	t       *Turn // the turn of the callback in progress (emitter)
}

// NewDataspace returns a fresh Dataspace entity; place it with t.Create.
func NewDataspace() Entity {
	return &dataspace{idx: newNaiveIndex(), handles: make(map[Handle]preserves.Value)}
}

func (d *dataspace) Assert(t *Turn, v preserves.Value, h Handle) error {
	d.t = t
	if d.idx.Insert(v, d) {
		if p, obs, ok := ParseObserve(v); ok {
			d.idx.AddObserver(p, obs, d)
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
	d.t = t
	if d.idx.Remove(v, d) {
		if p, obs, ok := ParseObserve(v); ok {
			d.idx.RemoveObserver(p, obs, d)
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

func (d *dataspace) Sync(t *Turn, peer *Ref) error {
	t.Message(peer, preserves.Bool(true))
	return nil
}

func (d *dataspace) AssertTo(obs *Ref, captures []preserves.Value) (uint64, bool) {
	h := d.t.Assert(obs, preserves.Sequence(captures))
	return uint64(h), h != 0
}

func (d *dataspace) RetractFrom(_ *Ref, h uint64) { d.t.Retract(Handle(h)) }

func (d *dataspace) SendTo(obs *Ref, captures []preserves.Value) {
	d.t.Message(obs, preserves.Sequence(captures))
}
