// Package gatekeeper implements the gatekeeper of services spec §6 and
// runtime spec §16: an entity that answers `<resolve STEP #:OBSERVER>` by
// looking up `<bind DESCRIPTION #:TARGET OBSERVER>` assertions in its bind
// space (a dataspace), validating sturdy refs (macaroons) and handing out
// the bound target attenuated by the ref's caveats.
//
// [New] creates a gatekeeper over a bind space in the active facet; the
// server uses it for the primordial gatekeeper over the config dataspace.
// [Boot] installs the `<gatekeeper #:BS>` service: each
// `<run-service <gatekeeper #:BS>>` spawns a linked actor owning a
// gatekeeper over BS and publishing it as a service object.
//
// `ref` (sturdy) and `noise` steps are handled; other step types answer
// `<error unsupported>`.
//
// # The direct-resolution race
//
// For a `ref` or `noise` step the gatekeeper both forwards the Resolve
// into the bind space with a fresh observer (so other parties may answer
// or refuse it) and watches for a matching Bind. Whichever comes first
// wins: a direct answer stops the Bind watch and is relayed verbatim; a
// Bind withdraws the forwarded Resolve and ignores any later direct answer.
//
// # Noise sessions
//
// A `<bind <noise SPEC> TARGET OBS>` is validated (§6.2: protocol name,
// pre-shared keys, secret key) and answered with `<bound <noise SPEC'>>`
// or `<error "MESSAGE">`. A `<resolve <noise SELECTOR> #:OBS>` matched by
// such a Bind spawns a responder session (noise_responder.go) as an actor
// linked to the Bind's facet, so the session's own actor carries the relay
// traffic and a failing session disturbs nothing else. It answers
// `<ok #:SESSION>`; the initiator asserts `<initiator #:PEER>` there and
// the two exchange Packets (noise.prs): first the handshake, then a relay
// (dataspace/relay) over the cipher states whose oid 0 export is TARGET.
// The session ends, retracting everything the initiator asserted through
// it, when `<initiator>` is retracted, when a packet does not decrypt or
// breaks the handshake, or when the relay fails.
//
// The spec parsing, Packet codec and session machinery are shared with
// services/resolve's initiator in dataspace/relay/noisesession, whose
// package doc describes the wire format and the limits of the
// cryptography (github.com/flynn/noise). Validation accepts every
// standard pattern and psk variant, but some valid protocols cannot run,
// and resolving them answers `<error "...">`: several psk modifiers
// (e.g. NNpsk0+psk2; flynn/noise has one psk slot), and the K-initiator
// patterns (K, KN, KK, KX), whose initiator static key must be known in
// advance but has no place in a NoiseServiceSpec.
//
// # Decisions on the spec's quirks
//
//   - Q10 (several binds with one oid each answer): kept; each matching
//     Bind contributes its answer while it lasts.
//   - Q11 (a non-bytes key crashes the owning actor): not copied; answered
//     with `<error invalid>`.
//   - Malformed `ref` binds are logged and ignored; nothing is reported.
//     Malformed `noise` binds are logged and answered `<error "...">`
//     (§6.2).
//   - Q12 (invalid noise spec or handshake set-up leaves the resolve
//     unanswered): not copied; answered with `<error "MESSAGE">`.
//   - A noise secretKey must be 32 bytes and `key` must be its public
//     key, and pre-shared keys must be 32 bytes: a bind breaking this is
//     malformed (otherwise every handshake would fail later).
package gatekeeper

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var (
	// The keys of sturdy.prs SturdyDescriptionDetail, for the Bind pattern.
	symOid = preserves.Symbol("oid")
	symKey = preserves.Symbol("key")

	errUnsupported = rpc.Error{Error: preserves.Symbol("unsupported")}.ToValue()
	errInvalid     = rpc.Error{Error: preserves.Symbol("invalid")}.ToValue()
	errValidation  = rpc.Error{Error: preserves.Symbol("sturdyref-failed-validation")}.ToValue()
)

// gatekeeper is the entity behind a gatekeeper Ref.
type gatekeeper struct {
	dataspace.BaseEntity
	bs     *dataspace.Ref
	log    zerolog.Logger
	facets dataspace.HandleFacets
}

// New creates a gatekeeper entity over the bind space bs in the active
// facet, installs the bind handler on bs (`<bound …>` answers to bind
// observers), and returns the gatekeeper's Ref. Both live as long as the
// active facet.
func New(t *dataspace.Turn, bs *dataspace.Ref, log zerolog.Logger) *dataspace.Ref {
	watchBinds(t, bs, log)
	return t.Create(&gatekeeper{bs: bs, log: log, facets: make(dataspace.HandleFacets)})
}

// Assert takes `<resolve STEP #:OBSERVER>` apart by hand rather than with
// gatekeeper.ParseResolve: the generated parser would accept extra fields,
// where §6.1 accepts only `<resolve STEP #:OBSERVER>` ("anything else
// ignored"), and would ignore a malformed STEP, which this gatekeeper
// answers `<error invalid>` (parseStep, the noise branch of resolve).
func (g *gatekeeper) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	r, ok := v.(*preserves.Record)
	if !ok || !preserves.Equal(r.Label, gkschema.LabelResolve) || len(r.Fields) != 2 {
		return nil // only Resolve assertions are understood
	}
	obs, ok := dataspace.RefOf(r.Fields[1])
	if !ok {
		return nil
	}
	step := r.Fields[0]
	return g.facets.Start(t, h, func(t *dataspace.Turn) error {
		t.PreventInertCheck() // lives exactly as long as the Resolve
		g.resolve(t, step, obs)
		return nil
	})
}

func (g *gatekeeper) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	g.facets.Stop(t, h)
	return nil
}

// resolve answers one Resolve, in its own facet.
func (g *gatekeeper) resolve(t *dataspace.Turn, step preserves.Value, obs *dataspace.Ref) {
	if sr, ok := step.(*preserves.Record); ok && preserves.Equal(sr.Label, noisesession.SymNoise) {
		if len(sr.Fields) != 1 {
			t.Assert(obs, errInvalid)
			return
		}
		// Bind lookup: `<bind <noise SPEC> $T _>` with SPEC.service equal
		// to the selector (dictionary patterns allow further keys).
		sel := sr.Fields[0]
		selp, err := pattern.Lift(sel)
		if err != nil {
			// A selector holding a set can match no Bind.
			g.log.Warn().Err(err).Msg("gatekeeper: unusable noise selector")
			t.Assert(obs, errInvalid)
			return
		}
		p := pattern.Rec(gkschema.LabelBind,
			pattern.Rec(noisesession.SymNoise, pattern.Bind{Pattern: pattern.Dict(
				pattern.Entry{Key: noisesession.SymService, Pattern: selp},
			)}),
			pattern.Capture(),
		)
		g.race(t, step, obs, p, func(t *dataspace.Turn, caps []preserves.Value) {
			g.startResponder(t, caps[0], caps[1], obs)
		})
		return
	}
	ref, refusal := parseStep(step)
	if refusal != nil {
		t.Assert(obs, refusal)
		return
	}
	oidp, err := pattern.Lift(ref.OID)
	if err != nil {
		g.log.Warn().Err(err).Msg("gatekeeper: unusable sturdy ref oid")
		t.Assert(obs, errInvalid)
		return
	}
	p := pattern.Rec(gkschema.LabelBind,
		pattern.Rec(sturdy.LabelRef, pattern.Dict(
			pattern.Entry{Key: symOid, Pattern: oidp},
			pattern.Entry{Key: symKey, Pattern: pattern.Capture()},
		)),
		pattern.Capture(),
	)
	g.race(t, step, obs, p, func(t *dataspace.Turn, caps []preserves.Value) {
		t.Assert(obs, g.answer(ref, caps[0], caps[1]))
	})
}

// race runs the two prongs of §6.3 for step: the direct resolution and the
// lookup of Binds matching p, calling onBind (in a facet that lasts as long
// as the Bind) for each match seen before any direct answer.
func (g *gatekeeper) race(t *dataspace.Turn, step preserves.Value, obs *dataspace.Ref, p pattern.Pattern, onBind func(t *dataspace.Turn, caps []preserves.Value)) {
	st := &race{}
	// 1. Direct resolution: forward the Resolve with our own observer.
	direct := t.Create(&directObserver{st: st, obs: obs, fr: t.FacetRef()})
	st.directHandle = t.Assert(g.bs, preserves.NewRecord(gkschema.LabelResolve, step, dataspace.Embed(direct)))
	// 2. Bind lookup, in a child facet the direct answer can stop.
	st.bindFacet, _ = t.Facet(func(t *dataspace.Turn) error {
		t.During(g.bs, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			if st.direct {
				return nil
			}
			if !st.bound {
				st.bound = true
				// Withdraw the forwarded Resolve; later direct answers
				// are ignored.
				t.Retract(st.directHandle)
			}
			onBind(t, caps)
			return nil
		})
		return nil
	})
}

// parseStep accepts a `ref` step with well-formed Parameters, or returns
// the answer refusing the step: `<error unsupported>` for another step
// type, `<error invalid>` for anything malformed.
func parseStep(step preserves.Value) (*caveat.SturdyRef, preserves.Value) {
	sr, ok := step.(*preserves.Record)
	if !ok {
		return nil, errInvalid
	}
	if _, ok := sr.Label.(preserves.Symbol); !ok {
		return nil, errInvalid
	}
	if !preserves.Equal(sr.Label, sturdy.LabelRef) {
		return nil, errUnsupported
	}
	if len(sr.Fields) != 1 {
		return nil, errInvalid
	}
	ref, err := caveat.ParametersFromValue(sr.Fields[0])
	if err != nil {
		return nil, errInvalid
	}
	return ref, nil
}

// answer validates ref against a bind's key and attenuates its target.
func (g *gatekeeper) answer(ref *caveat.SturdyRef, keyv, targetv preserves.Value) preserves.Value {
	key, ok := keyv.(preserves.ByteString)
	target, ok2 := dataspace.RefOf(targetv)
	if !ok || !ok2 {
		// Q11: the reference crashes here; we refuse the resolution.
		g.log.Warn().Str("bind", preserves.Show(keyv)).Msg("gatekeeper: matching bind with a non-bytes key or non-capability target")
		return errInvalid
	}
	if err := ref.Validate(key.Bytes()); err != nil {
		g.log.Warn().Err(err).Str("oid", preserves.Show(ref.OID)).Msg("gatekeeper: sturdy ref failed validation")
		return errValidation
	}
	att, err := target.Attenuate(ref.Caveats...)
	if err != nil {
		g.log.Warn().Err(err).Str("oid", preserves.Show(ref.OID)).Msg("gatekeeper: sturdy ref caveats invalid")
		return errValidation
	}
	return rpc.Ok{Value: dataspace.Embed(att)}.ToValue()
}

// race is the state shared by the two prongs of one ref resolution.
type race struct {
	direct, bound bool
	directHandle  dataspace.Handle
	bindFacet     dataspace.FacetID
}

// directObserver receives answers to the forwarded Resolve and relays the
// first ones (while no Bind has been seen) to the original observer,
// mirroring their lifetime.
type directObserver struct {
	dataspace.BaseEntity
	st      *race
	obs     *dataspace.Ref
	fr      dataspace.FacetRef
	relayed dataspace.HandleAssertions
}

func (d *directObserver) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	if d.st.bound {
		return nil
	}
	if !d.st.direct {
		d.st.direct = true
		t.StopFacet(d.st.bindFacet) // stop waiting for Binds
	}
	if d.relayed == nil {
		d.relayed = make(dataspace.HandleAssertions)
	}
	d.relayed[h] = t.Assert(d.obs, v)
	return nil
}

func (d *directObserver) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	d.relayed.Retract(t, h)
	return nil
}

// watchBinds answers every well-formed sturdy Bind in bs that names an
// observer with `<bound <ref {oid: O sig: SIG}>>` (the root signature).
func watchBinds(t *dataspace.Turn, bs *dataspace.Ref, log zerolog.Logger) {
	p := pattern.Rec(gkschema.LabelBind, pattern.Capture(), pattern.Capture(), pattern.Capture())
	t.During(bs, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		desc, target, obsv := caps[0], caps[1], caps[2]
		dr, ok := desc.(*preserves.Record)
		if ok && preserves.Equal(dr.Label, noisesession.SymNoise) {
			noiseBound(t, dr, target, obsv, log)
			return nil
		}
		if !ok || !preserves.Equal(dr.Label, sturdy.LabelRef) {
			return nil // other step types are not ours
		}
		d, err := parseSturdyDescription(dr)
		if err == nil {
			if _, ok := dataspace.RefOf(target); !ok {
				err = fmt.Errorf("target is not a capability")
			}
		}
		var obs *dataspace.Ref
		if err == nil {
			obs, err = bindObserver(obsv)
		}
		if err != nil {
			log.Error().Err(err).Str("bind", preserves.Show(preserves.NewRecord(gkschema.LabelBind, desc, target, obsv))).Msg("gatekeeper: malformed bind")
			return nil
		}
		if obs != nil {
			// <bound <ref {oid: OID sig: SIG}>>
			step := gkschema.PathStep{StepType: sturdy.LabelRef, Detail: caveat.Mint(d.Oid, d.Key).Parameters()}
			t.Assert(obs, gkschema.BoundBound{PathStep: step}.ToValue())
		}
		return nil
	})
}

// parseSturdyDescription parses `<ref {oid: … key: …}>` with the generated
// sturdy.prs parser; the record must have exactly one field (the
// gatekeeper.prs Description has one detail) and the oid must be
// signable.
func parseSturdyDescription(dr *preserves.Record) (sturdy.SturdyDescriptionDetail, error) {
	if len(dr.Fields) != 1 {
		return sturdy.SturdyDescriptionDetail{}, fmt.Errorf("description is not <ref {oid: … key: …}>")
	}
	d, err := sturdy.ParseSturdyDescriptionDetail(dr.Fields[0])
	if err != nil {
		return d, fmt.Errorf("description: %w", err)
	}
	if preserves.HasEmbedded(d.Oid) {
		// No canonical encoding to sign (caveat.Mint would panic).
		return d, fmt.Errorf("description oid contains an embedded value")
	}
	return d, nil
}

// bindObserver is the observer of a Bind (gatekeeper.prs BindObserver):
// nil for #f.
func bindObserver(v preserves.Value) (*dataspace.Ref, error) {
	o, _ := gkschema.ParseBindObserver(v)
	switch o := o.(type) {
	case gkschema.BindObserverAbsent:
		return nil, nil
	case gkschema.BindObserverPresent:
		if obs, ok := o.Value.(*dataspace.Ref); ok && obs != nil {
			return obs, nil
		}
	}
	return nil, fmt.Errorf("observer is neither #f nor a capability")
}

// Boot installs the gatekeeper service in env.Config: for each
// `<run-service <gatekeeper #:BS>>` a linked actor creates a gatekeeper
// over BS and asserts `<service-object NAME #:GK>` and `<service-state NAME
// started>`/`ready` (§6.1). restart-service is ignored (§2.4).
func Boot(t *dataspace.Turn, env services.Env) error {
	if env.Config == nil {
		return fmt.Errorf("gatekeeper: Boot needs a config dataspace")
	}
	services.Serve(t, env, services.Requests[*dataspace.Ref]{
		Label:     internalservices.LabelGatekeeper,
		Parse:     services.CapabilityName(internalservices.ParseGatekeeper, func(g internalservices.Gatekeeper) any { return g.Bindspace }),
		Malformed: "gatekeeper: malformed <gatekeeper #:bindspace> request",
		// A crashing gatekeeper restarts with a new service object.
		Boot: func(t *dataspace.Turn, req services.Request[*dataspace.Ref]) error {
			t.PreventInertCheck()
			gk := New(t, req.Spec, req.Log)
			t.Assert(env.Config, preserves.NewRecord(service.LabelServiceObject, req.Name, dataspace.Embed(gk)))
			t.Assert(env.Config, services.ServiceState(req.Name, services.StateReady))
			return nil
		},
	})
	return nil
}
