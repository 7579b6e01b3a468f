package services

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// NewForwarder creates, in the active facet, a stable capability for an
// entity that lives in a restartable worker actor: the primordial
// gatekeeper and `$control` are handed out once (to listeners, to every
// script's environment), but the actor behind them is replaced whenever
// it crashes. Scripts' `$log` goes through one too, whose target the
// logger names once it listens (Env.LogListening).
//
// It returns the public Ref and a control Ref. A worker asserts
// `#:TARGET` at the control Ref (any value whose embedded capability is
// the target); from then on assertions, messages and syncs at the public
// Ref go to TARGET. When the worker dies its assertion goes with it, and
// the forwarder holds on to the assertions it received, re-asserting them
// at the next target. Messages sent before the first target ever came
// (a script's `$control ! <exit 2>` while the builtins are still booting)
// wait for it, up to maxEarly of them; messages sent while a crashed
// worker is replaced are dropped, and a sync with no target is answered at
// once: a message is never delivered twice, and a caller waiting for a
// sync is not left hanging. (Dropping the early ones too lost a script's
// `<exit N>` in about one server start in five under load.)
//
// The forwarder does nothing with the values but store and pass them on,
// so it cannot fail on any value: it may live in the top-level actor.
func NewForwarder(t *dataspace.Turn) (public, control *dataspace.Ref) {
	f := &forwarder{held: dataspace.Held[*forwarded]{}}
	return t.Create(f), t.Create(&forwardControl{f: f})
}

type forwarded struct {
	v   preserves.Value
	out dataspace.Handle // at the current target; 0 when none
}

type forwarder struct {
	dataspace.BaseEntity
	target  *dataspace.Ref
	targetH dataspace.Handle // the control assertion that named target
	held    dataspace.Held[*forwarded]
	// early holds the messages sent before the first target came; nil
	// (and never used again) once it has.
	early   []preserves.Value
	started bool
	lost    int // early messages dropped past maxEarly (logged once)
}

// maxEarly bounds the messages kept for the first target: a script
// sending more than that to a capability whose worker has not started
// yet loses the rest, as it would have lost them all before.
const maxEarly = 1024

func (f *forwarder) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	x := &forwarded{v: v}
	if f.target != nil {
		x.out = t.Assert(f.target, v)
	}
	f.held[h] = x
	return nil
}

func (f *forwarder) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	if x, ok := f.held.Take(h); ok {
		if x.out != 0 {
			t.Retract(x.out)
		}
	}
	return nil
}

func (f *forwarder) Message(t *dataspace.Turn, v preserves.Value) error {
	switch {
	case f.target != nil:
		t.Message(f.target, v)
	case !f.started && len(f.early) < maxEarly:
		f.early = append(f.early, v)
	case !f.started:
		f.lost++
		if f.lost == 1 {
			t.Log().Warn().Int("kept", maxEarly).Msg("messages sent before the service started are dropped past the first ones kept")
		}
	}
	return nil
}

func (f *forwarder) Sync(t *dataspace.Turn, peer *dataspace.Ref) error {
	if f.target != nil {
		t.SyncPeer(f.target, peer)
		return nil
	}
	t.Message(peer, preserves.Bool(true))
	return nil
}

// retarget moves every held assertion to target (nil: none).
func (f *forwarder) retarget(t *dataspace.Turn, target *dataspace.Ref, h dataspace.Handle) {
	for _, x := range f.held {
		if x.out != 0 {
			t.Retract(x.out)
			x.out = 0
		}
	}
	f.target, f.targetH = target, h
	if target == nil {
		return
	}
	for _, x := range f.held {
		x.out = t.Assert(target, x.v)
	}
	if !f.started {
		f.started = true
		for _, v := range f.early {
			t.Message(target, v)
		}
		f.early = nil
	}
}

type forwardControl struct {
	dataspace.BaseEntity
	f *forwarder
}

func (c *forwardControl) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	if r, ok := dataspace.RefOf(v); ok {
		c.f.retarget(t, r, h)
	}
	return nil
}

func (c *forwardControl) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	if h == c.f.targetH {
		c.f.retarget(t, nil, 0)
	}
	return nil
}
