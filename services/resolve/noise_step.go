package resolve

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	noiseschema "github.com/syndicate-go/syndicate/dataspace/schemas/noise"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/preserves"
)

var symAccepted = preserves.Symbol("accepted")

// noiseStep answers `<q <resolve-path-step #:ORIGIN <noise SPEC>>>`
// (services spec §10): it asserts `<resolve <noise SERVICE> #:OBS>` at
// ORIGIN; an `<ok #:RESPONDER>` answer starts an initiator session, which
// answers `<ok #:PEER>` (the responder's oid 0) once the handshake is
// done; any other answer is relayed as it is. A spec that does not parse,
// or whose protocol cannot run here, is answered `<error "MESSAGE">`.
func (s *svc) noiseStep(t *dataspace.Turn, originv, specv preserves.Value) {
	origin, req, isRef := stepQuestion(originv, gkschema.PathStep{StepType: noisesession.SymNoise, Detail: specv})
	if !isRef {
		return
	}
	spec, err := noisesession.ParseSpec(specv, false)
	if err == nil {
		_, err = spec.Handshake(true) // refuse unrunnable protocols now
	}
	if err != nil {
		s.log.Warn().Err(err).Str("spec", preserves.Show(specv)).Msg("resolve: unusable noise path step")
		t.Assert(s.cfg, answer(req, fail(preserves.String(err.Error()))))
		return
	}
	obs := t.Create(&noiseObserver{s: s, req: req, spec: spec, out: dataspace.Held[noiseAnswer]{}})
	t.Assert(origin, gkschema.Resolve{Step: gkschema.Step{StepType: noisesession.SymNoise, Detail: spec.Service}, Observer: obs}.ToValue())
}

// noiseAnswer is what one answer to the Resolve led to: a relayed answer
// or a session facet.
type noiseAnswer struct {
	relayed dataspace.Handle
	facet   dataspace.FacetID
}

// noiseObserver receives the gatekeeper's answers to the noise Resolve.
type noiseObserver struct {
	dataspace.BaseEntity
	s    *svc
	req  preserves.Value
	spec *noisesession.Spec
	out  dataspace.Held[noiseAnswer]
	// failed is the `<error "…">` answer of the latest failed session. It
	// belongs to the question, not to the `<ok>` it came from (a responder
	// withdraws its `<ok>` as soon as the session ends), and goes when a
	// later session succeeds.
	failed dataspace.Handle
}

func (o *noiseObserver) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	r, isRec := v.(*preserves.Record)
	if isRec && (preserves.Equal(r.Label, rpc.LabelOk) || preserves.Equal(r.Label, symAccepted)) && len(r.Fields) == 1 {
		if responder, isRef := dataspace.RefOf(r.Fields[0]); isRef {
			o.startInitiator(t, responder, h)
			return nil
		}
	}
	o.out[h] = noiseAnswer{relayed: t.Assert(o.s.cfg, answer(o.req, v))}
	return nil
}

func (o *noiseObserver) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	a, ok := o.out.Take(h)
	if !ok {
		return nil
	}
	t.Retract(a.relayed)
	if a.facet != 0 {
		t.StopFacet(a.facet) // the responder withdrew: the session ends
	}
	return nil
}

// startInitiator runs the initiator side of §6.5 against responder in a
// facet that lasts as long as the `<ok #:RESPONDER>` answer (h) and the
// session: `<initiator #:ME>`, the handshake, then a relay importing the
// responder's oid 0, announced as `<ok #:PEER>`. A failed session leaves
// `<error "MESSAGE">` as the step's answer (see noiseObserver.failed).
func (o *noiseObserver) startInitiator(t *dataspace.Turn, responder *dataspace.Ref, h dataspace.Handle) {
	log := o.s.log.With().Str("noise-service", preserves.Show(o.spec.Service)).Logger()
	id, _ := t.Facet(func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		id := t.ActiveFacet()
		end := func(t *dataspace.Turn, err error) {
			t.StopFacetAndContinue(id, func(t *dataspace.Turn) error {
				if err == nil {
					return nil
				}
				log.Warn().Err(err).Msg("resolve: noise session failed")
				t.Update(&o.failed, o.s.cfg, answer(o.req, fail(preserves.String(err.Error()))))
				return nil
			})
		}
		// A fresh handshake per session: the initiator's static key pair,
		// when its pattern sends one, is new each time.
		hs, err := o.spec.Handshake(true)
		if err != nil {
			end(t, err)
			return nil
		}
		sess := noisesession.New(t, hs, noisesession.Options{
			Relay: relay.Options{ImportInitial: true, Logger: log},
			OnReady: func(t *dataspace.Turn, peer *dataspace.Ref) {
				t.Assert(o.s.cfg, answer(o.req, ok(dataspace.Embed(peer))))
				t.Retract(o.failed)
				o.failed = 0
			},
			OnEnd: end,
		})
		me := t.Create(&initiatorSession{sess: sess})
		t.Assert(responder, noiseschema.Initiator{InitiatorSession: me}.ToValue())
		sess.Begin(t, responder)
		return nil
	})
	o.out[h] = noiseAnswer{facet: id}
}

// initiatorSession is the ME entity: it receives the responder's Packets.
type initiatorSession struct {
	dataspace.BaseEntity
	sess *noisesession.Session
}

func (i *initiatorSession) Message(t *dataspace.Turn, v preserves.Value) error {
	i.sess.Packet(t, v)
	return nil
}
