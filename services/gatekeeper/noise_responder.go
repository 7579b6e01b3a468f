package gatekeeper

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	noiseschema "github.com/syndicate-go/syndicate/dataspace/schemas/noise"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/preserves"
)

// noiseError is the `<error "MESSAGE">` answer of a failed noise bind or
// session set-up.
func noiseError(err error) preserves.Value {
	return rpc.Error{Error: preserves.String(err.Error())}.ToValue()
}

// noiseBound validates a `<bind <noise SPEC> TARGET OBS>` (§6.2) and
// answers OBS, when present, with `<bound <noise SPEC'>>` (SPEC without
// its secret, protocol only when not the default, preSharedKeys only when
// non-empty) or `<error "MESSAGE">`.
func noiseBound(t *dataspace.Turn, dr *preserves.Record, target, obsv preserves.Value, log zerolog.Logger) {
	obs, err := bindObserver(obsv)
	if err != nil {
		log.Error().Err(err).Str("observer", preserves.Show(obsv)).Msg("gatekeeper: malformed noise bind")
		return
	}
	var spec *noisesession.Spec
	if len(dr.Fields) != 1 {
		err = fmt.Errorf("noise description is not <noise SPEC>")
	} else if spec, err = noisesession.ParseSpec(dr.Fields[0], true); err == nil {
		if _, ok := dataspace.RefOf(target); !ok {
			err = fmt.Errorf("bind target is not a capability")
		}
	}
	if err != nil {
		log.Error().Err(err).Str("description", preserves.Show(dr)).Msg("gatekeeper: malformed noise bind")
		if obs != nil {
			t.Assert(obs, noiseError(err))
		}
		return
	}
	if obs != nil {
		step := gkschema.PathStep{StepType: noisesession.SymNoise, Detail: spec.ToValue()}
		t.Assert(obs, gkschema.BoundBound{PathStep: step}.ToValue())
	}
}

// startResponder answers a noise Resolve matched by a Bind (§6.3): it
// validates the spec and builds the responder handshake, answering
// `<error "MESSAGE">` when either fails (Q12), then spawns the session as
// an actor linked to the Bind's facet, which asserts `<ok #:SESSION>` to
// obs for as long as the session lasts.
func (g *gatekeeper) startResponder(t *dataspace.Turn, specv, targetv preserves.Value, obs *dataspace.Ref) {
	spec, err := noisesession.ParseSpec(specv, true)
	target, isRef := dataspace.RefOf(targetv)
	if err == nil && !isRef {
		err = fmt.Errorf("bind target is not a capability")
	}
	if err != nil {
		g.log.Warn().Err(err).Str("spec", preserves.Show(specv)).Msg("gatekeeper: noise bind unusable")
		t.Assert(obs, noiseError(err))
		return
	}
	hs, err := spec.Handshake(false)
	if err != nil {
		g.log.Warn().Err(err).Str("service", preserves.Show(spec.Service)).Msg("gatekeeper: noise handshake set-up failed")
		t.Assert(obs, noiseError(err))
		return
	}
	log := g.log.With().Str("noise-service", preserves.Show(spec.Service)).Logger()
	t.SpawnLink("noise-responder "+preserves.Show(spec.Service), func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		sess := noisesession.New(t, hs, noisesession.Options{
			// The initiator's oid 0 is the bound target.
			Relay: relay.Options{InitialRef: target, Logger: log},
			OnEnd: func(t *dataspace.Turn, err error) {
				if err != nil {
					log.Warn().Err(err).Msg("gatekeeper: noise session failed")
				}
				t.StopRoot()
			},
		})
		self := t.Create(&responderSession{sess: sess})
		t.Assert(obs, rpc.Ok{Value: dataspace.Embed(self)}.ToValue())
		return nil
	})
}

// responderSession is the SESSION entity (§6.5): it accepts one
// `<initiator #:PEER>` assertion, whose retraction ends the session, and
// Packet messages.
type responderSession struct {
	dataspace.BaseEntity
	sess    *noisesession.Session
	handle  dataspace.Handle
	hasPeer bool
}

func (r *responderSession) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	in, err := noiseschema.ParseInitiator(v)
	peer, ok := in.InitiatorSession.(*dataspace.Ref)
	switch {
	case err != nil || !ok || peer == nil:
		r.sess.End(t, fmt.Errorf("noise session: unexpected assertion %s", preserves.Show(v)))
	case r.hasPeer:
		r.sess.End(t, fmt.Errorf("noise session: second initiator"))
	default:
		r.hasPeer, r.handle = true, h
		r.sess.Begin(t, peer)
	}
	return nil
}

func (r *responderSession) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	if r.hasPeer && h == r.handle {
		r.sess.End(t, nil) // the initiator ended the session
	}
	return nil
}

func (r *responderSession) Message(t *dataspace.Turn, v preserves.Value) error {
	if !r.hasPeer {
		r.sess.End(t, fmt.Errorf("noise session: packet before <initiator>"))
		return nil
	}
	r.sess.Packet(t, v)
	return nil
}
