// Package resolve implements the client-side resolution services of
// services spec §10, for TCP transports and `ref` (sturdy) and `noise`
// path steps:
//
//   - `<q <connect-transport <tcp HOST PORT>>>`: keep a relay connection
//     open (importing the peer's oid 0), answering
//     `<a <connect-transport ADDR> <ok <connected-transport ADDR #:CTL #:PEER>>>`,
//     or `<error KIND>` while connecting fails; reconnect with the §2.3
//     delays when it ends. `<force-disconnect>` to CTL drops it.
//   - `<q <resolve-path <route [TRANSPORT…] STEP…>>>`: connect the
//     transports, pick the least connected one in Preserves order, resolve
//     the steps in turn through `resolve-path-step` questions, and answer
//     `<ok <resolved-path ADDR #:CTL #:TARGET>>`. Step errors are propagated
//     as the route's answer (Q13's recommendation).
//   - `<q <resolve-path-step #:ORIGIN <ref PARAMS>>>`: assert
//     `<resolve <ref PARAMS> #:OBS>` at ORIGIN and mirror each answer.
//   - `<q <resolve-path-step #:ORIGIN <noise SPEC>>>`: assert
//     `<resolve <noise SERVICE> #:OBS>` at ORIGIN; on `<ok #:RESPONDER>`
//     run the initiator side of a Noise session (services spec §6.5,
//     noise.prs): `<initiator #:ME>`, the handshake, then a relay over the
//     session importing the responder's oid 0 as PEER, answered
//     `<ok #:PEER>`. Error answers are mirrored; an unusable spec or a
//     failed session answers `<error "MESSAGE">`.
//
// Everything lives in facets of the actor that calls Boot (no worker
// actors): a connection attempt is a facet, its relay a child facet, and a
// retracted question stops its facet, which closes what it opened. A noise
// session is a facet too, living as long as the responder's `<ok>`: its
// withdrawal, a packet that does not decrypt, or a failing relay ends the
// session and retracts everything asserted through it.
//
// The session itself (spec parsing, handshake, Packet codec, the relay
// over the cipher states) is dataspace/relay/noisesession, shared with
// services/gatekeeper's responder; its package doc lists the caveats of
// github.com/flynn/noise. In short: a NoiseSpec carries no initiator
// identity, so patterns that transmit the initiator's static key (X, XX,
// IK, …) use a fresh key pair per session, and the K-initiator patterns
// (K, KN, KK, KX), whose initiator key the responder must know in advance,
// are refused with `<error "...">`, as are protocols with several psk
// modifiers (flynn/noise has one psk slot). A non-empty `key` is checked
// against the static key the responder proves even when the pattern sends
// it in the handshake (XX, NX, IX) rather than taking it in advance; a
// failed session answers `<error "...">` until the question goes or a
// later session succeeds.
//
// WebSocket and Unix transports are not handled here.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Options tunes the services; the zero value is the spec's behaviour.
type Options struct {
	// Delay and Backoff replace services.RestartDelay and RestartBackoff
	// between connection attempts (tests shorten them).
	Delay, Backoff time.Duration
	// Now is the clock of the restart window (time.Now if nil).
	Now func() time.Time
}

// Boot installs the three resolution services in env.Config.
func Boot(t *dataspace.Turn, env services.Env) error { return BootWith(t, env, Options{}) }

// BootWith is Boot with explicit options.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) error {
	if env.Config == nil {
		return fmt.Errorf("resolve: Boot needs a config dataspace")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &svc{cfg: env.Config, log: env.Logger, opts: opts}
	q := func(p pattern.Pattern) pattern.Pattern { return pattern.Rec(rpc.LabelQ, p) }
	t.During(env.Config, q(pattern.Rec(gkschema.LabelConnectTransport, pattern.Capture())), func(t *dataspace.Turn, caps []preserves.Value) error {
		s.connectTransport(t, caps[0])
		return nil
	})
	t.During(env.Config, q(pattern.Rec(gkschema.LabelResolvePath, pattern.Capture())), func(t *dataspace.Turn, caps []preserves.Value) error {
		s.resolvePath(t, caps[0])
		return nil
	})
	t.During(env.Config, q(pattern.Rec(gkschema.LabelResolvePathStep, pattern.Capture(), pattern.Rec(sturdy.LabelRef, pattern.Capture()))), func(t *dataspace.Turn, caps []preserves.Value) error {
		s.sturdyStep(t, caps[0], caps[1])
		return nil
	})
	t.During(env.Config, q(pattern.Rec(gkschema.LabelResolvePathStep, pattern.Capture(), pattern.Rec(noisesession.SymNoise, pattern.Capture()))), func(t *dataspace.Turn, caps []preserves.Value) error {
		s.noiseStep(t, caps[0], caps[1])
		return nil
	})
	return nil
}

type svc struct {
	cfg  *dataspace.Ref
	log  zerolog.Logger
	opts Options
}

func answer(req, result preserves.Value) preserves.Value {
	return rpc.Answer{Request: req, Response: result}.ToValue()
}

func ok(v preserves.Value) preserves.Value   { return rpc.Ok{Value: v}.ToValue() }
func fail(v preserves.Value) preserves.Value { return rpc.Error{Error: v}.ToValue() }

// ---- transport connector ----

func (s *svc) connectTransport(t *dataspace.Turn, addr preserves.Value) {
	ta, err := transport.ParseValue(addr)
	if err != nil || ta.Network != transport.TCP {
		return // non-TCP addresses are ignored
	}
	req := gkschema.ConnectTransport{Addr: addr}.ToValue()
	log := s.log.With().Str("transport", preserves.Show(addr)).Logger()
	var terms []time.Time
	var attempt func(t *dataspace.Turn)
	// The error answer of a failed attempt belongs to the question's facet
	// and stays up until an attempt succeeds (re-asserting an equal value
	// is invisible to observers).
	var errHandle dataspace.Handle
	// retry stops the attempt facet (withdrawing its answer) and schedules
	// the next attempt in the question's facet after the §2.3 delay.
	retry := func(t *dataspace.Turn, id dataspace.FacetID, failure preserves.Value) {
		t.StopFacetAndContinue(id, func(t *dataspace.Turn) error {
			if failure != nil {
				t.Update(&errHandle, s.cfg, answer(req, fail(failure)))
			}
			var d time.Duration
			terms, d = services.NextDelay(terms, s.opts.Now(), services.SuperviseOptions{Delay: s.opts.Delay, Backoff: s.opts.Backoff})
			t.After(d, func(t *dataspace.Turn) error { attempt(t); return nil })
			return nil
		})
	}
	attempt = func(t *dataspace.Turn) {
		_, _ = t.Facet(func(t *dataspace.Turn) error {
			fr := t.FacetRef()
			id := t.ActiveFacet()
			t.LinkedTask("connect", func(ctx context.Context) error {
				nc, err := ta.Dial(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					log.Debug().Err(err).Msg("connect failed")
					fr.Activate(func(t *dataspace.Turn) error {
						retry(t, id, errKind(err))
						return nil
					})
					return dataspace.ErrKeepFacet
				}
				var conn *relay.Conn
				if !fr.Activate(func(t *dataspace.Turn) error {
					c, peer := relay.Run(t, nc, relay.Options{ImportInitial: true, Logger: log})
					conn = c
					ctl := t.Create(&control{conn: c})
					t.Assert(s.cfg, answer(req, ok(gkschema.ConnectedTransport{Addr: addr, Control: ctl, ResponderSession: peer}.ToValue())))
					t.Retract(errHandle)
					errHandle = 0
					return nil
				}) || conn == nil {
					nc.Close()
					return ctx.Err()
				}
				select {
				case <-conn.Done():
				case <-ctx.Done():
					return ctx.Err()
				}
				log.Debug().Err(conn.Err()).Msg("connection ended")
				fr.Activate(func(t *dataspace.Turn) error { retry(t, id, nil); return nil })
				return dataspace.ErrKeepFacet
			})
			return nil
		})
	}
	attempt(t)
}

// control accepts `<force-disconnect>`.
type control struct {
	dataspace.BaseEntity
	conn *relay.Conn
}

func (c *control) Message(t *dataspace.Turn, v preserves.Value) error {
	if _, err := gkschema.ParseForceDisconnect(v); err == nil {
		c.conn.StopIn(t)
	}
	return nil
}

// errKind names an OS error kind the way the reference does (Rust's
// io::ErrorKind).
func errKind(err error) preserves.Symbol {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ConnectionRefused"
	case errors.Is(err, syscall.ECONNRESET):
		return "ConnectionReset"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "HostUnreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "NetworkUnreachable"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "AddrNotAvailable"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return "TimedOut"
	case errors.Is(err, os.ErrPermission):
		return "PermissionDenied"
	case errors.As(err, &dns):
		return "NotFound"
	}
	return "Other"
}

// ---- sturdy path step ----

// stepQuestion is the question `<resolve-path-step #:ORIGIN STEP>` being
// answered, and ORIGIN; false when ORIGIN is no capability.
func stepQuestion(originv preserves.Value, step gkschema.PathStep) (*dataspace.Ref, preserves.Value, bool) {
	origin, isRef := dataspace.RefOf(originv)
	return origin, gkschema.ResolvePathStep{Origin: origin, PathStep: step}.ToValue(), isRef
}

func (s *svc) sturdyStep(t *dataspace.Turn, originv, params preserves.Value) {
	step := gkschema.PathStep{StepType: sturdy.LabelRef, Detail: params}
	origin, req, isRef := stepQuestion(originv, step)
	if !isRef {
		return
	}
	obs := t.Create(&mirror{cfg: s.cfg, req: req, out: make(dataspace.HandleAssertions)})
	t.Assert(origin, gkschema.Resolve{Step: gkschema.Step(step), Observer: obs}.ToValue())
}

// mirror relays each answer asserted to it as `<a REQ ANSWER>`.
type mirror struct {
	dataspace.BaseEntity
	cfg *dataspace.Ref
	req preserves.Value
	out dataspace.HandleAssertions
}

func (m *mirror) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	m.out[h] = t.Assert(m.cfg, answer(m.req, v))
	return nil
}

func (m *mirror) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	m.out.Retract(t, h)
	return nil
}

// ---- path resolver ----

type connected struct {
	addr     preserves.Value
	ctl, ref preserves.Value
}

// parseRoute checks `<route [TRANSPORT …] STEP …>` with the generated
// gatekeeper.prs Route parser. The steps are passed on as they came: a
// parsed PathStep keeps only its first detail field.
func parseRoute(route preserves.Value) (transports, steps []preserves.Value, err error) {
	r, err := gkschema.ParseRoute(route)
	if err != nil {
		return nil, nil, err
	}
	return r.Transports, preserves.Unwrap(route).(*preserves.Record).Fields[1:], nil
}

func (s *svc) resolvePath(t *dataspace.Turn, route preserves.Value) {
	transports, steps, err := parseRoute(route)
	if err != nil {
		s.log.Warn().Err(err).Str("route", preserves.Show(route)).Msg("resolve-path: malformed route ignored")
		return
	}
	req := preserves.NewRecord(gkschema.LabelResolvePath, route) // the route as asked, not as parsed
	// Every question this route will ask must be observable: a transport
	// or step holding a set can never be answered (no pattern matches it),
	// so the route is refused at once.
	transportPats := make([]pattern.Pattern, len(transports))
	for i, tr := range transports {
		p, err := pattern.Lift(gkschema.ConnectTransport{Addr: tr}.ToValue())
		if err != nil {
			s.refuseRoute(t, req, "transport", tr, err)
			return
		}
		transportPats[i] = p
	}
	for _, st := range steps {
		if _, err := pattern.Lift(st); err != nil {
			s.refuseRoute(t, req, "step", st, err)
			return
		}
	}
	up := make(map[string]connected)
	var chosen string
	var stepsFacet dataspace.FacetID
	var rec *services.Reconciler
	rec = services.NewReconciler(t, func(t *dataspace.Turn) error {
		best := ""
		var bestV preserves.Value
		for k, c := range up {
			if bestV == nil || preserves.Compare(c.addr, bestV) < 0 {
				best, bestV = k, c.addr
			}
		}
		if best == chosen && (best == "" || stepsFacet != 0) {
			return nil
		}
		if stepsFacet != 0 {
			t.StopFacet(stepsFacet)
			stepsFacet = 0
		}
		chosen = best
		if best == "" {
			return nil
		}
		c := up[best]
		stepsFacet, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			s.resolveSteps(t, req, c, c.ref, steps)
			return nil
		})
		return nil
	})
	for i, tr := range transports {
		t.Assert(s.cfg, rpc.Question{Request: gkschema.ConnectTransport{Addr: tr}.ToValue()}.ToValue())
		p := pattern.Rec(rpc.LabelA, transportPats[i], pattern.Rec(rpc.LabelOk, pattern.Rec(gkschema.LabelConnectedTransport, pattern.Capture(), pattern.Capture(), pattern.Capture())))
		t.During(s.cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			k := preserves.FormatText(tr)
			up[k] = connected{addr: caps[0], ctl: caps[1], ref: caps[2]}
			rec.Kick(t)
			t.OnStop(func(t *dataspace.Turn) error {
				delete(up, k)
				rec.Kick(t)
				return nil
			})
			return nil
		})
	}
}

// refuseRoute answers req with `<error "MESSAGE">` naming the part of the
// route that cannot be resolved, and logs it.
func (s *svc) refuseRoute(t *dataspace.Turn, req preserves.Value, what string, part preserves.Value, err error) {
	ev := s.log.Warn().Err(err).Str(what, preserves.Show(part))
	if pos := services.ErrorPos(err, part); pos.IsValid() {
		ev = ev.Str("pos", pos.String())
	}
	ev.Msg("resolve-path: route refused")
	msg := fmt.Sprintf("resolve-path: %s %s cannot be resolved: %v", what, preserves.Show(part), err)
	t.Assert(s.cfg, answer(req, fail(preserves.String(msg))))
}

// resolveSteps asks for step 0 at origin and continues with the rest at
// its answer, in nested facets: a withdrawn answer stops everything
// downstream of it.
func (s *svc) resolveSteps(t *dataspace.Turn, req preserves.Value, c connected, origin preserves.Value, steps []preserves.Value) {
	if len(steps) == 0 {
		t.Assert(s.cfg, answer(req, ok(preserves.NewRecord(gkschema.LabelResolvedPath, c.addr, c.ctl, origin))))
		return
	}
	sreq := preserves.NewRecord(gkschema.LabelResolvePathStep, origin, steps[0])
	sp, err := pattern.Lift(sreq)
	if err != nil {
		// resolvePath checked every step, and origin is a capability.
		s.refuseRoute(t, req, "step", steps[0], err)
		return
	}
	t.Assert(s.cfg, rpc.Question{Request: sreq}.ToValue())
	t.During(s.cfg, pattern.Rec(rpc.LabelA, sp, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		res, _ := rpc.ParseResult(caps[0])
		switch res := res.(type) {
		case rpc.ResultOk:
			if _, isRef := dataspace.RefOf(res.Value.Value); !isRef {
				t.Assert(s.cfg, answer(req, fail(preserves.Symbol("invalid-path-step-result"))))
				return nil
			}
			s.resolveSteps(t, req, c, res.Value.Value, steps[1:])
		case rpc.ResultError:
			t.Assert(s.cfg, answer(req, caps[0])) // Q13: propagated
		}
		return nil
	})
}
