// Package resolve implements the client-side resolution services of
// services spec §10, for TCP transports and `ref` (sturdy) and `noise`
// path steps:
//
//   - `<q <connect-transport <tcp HOST PORT>>>`: keep a relay connection
//     open (importing the peer's oid 0), answering
//     `<a <connect-transport ADDR> <ok <connected-transport ADDR #:CTL #:PEER>>>`,
//     or `<error KIND>` while connecting fails; reconnect when it ends,
//     at once and then with delays doubling from ReconnectFirst up to
//     ReconnectCap (a deviation: the reference uses the §2.3 delays, up
//     to 10 s). `<force-disconnect>` to CTL drops it.
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
// Each transport and route shows in the config dataspace as
// `<connection-status outbound ADDR INFO>` / `<connection-status route
// ROUTE INFO>` (services.ConnInfo: state, since, the last error, the next
// attempt), for `syndicate status`; connects, disconnects and failures are
// logged at info level once each, not at every retry.
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
	// First and Cap replace ReconnectFirst and ReconnectCap (tests
	// shorten them).
	First, Cap time.Duration
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
	if opts.First <= 0 {
		opts.First = ReconnectFirst
	}
	if opts.Cap <= 0 {
		opts.Cap = ReconnectCap
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

// Reconnection timing of the transport connector. This deviates from the
// reference, which restarts its connector with the §2.3 delays (200 ms,
// then 10 s once two attempts fall within 5 s), so a peer that was down for
// a few seconds came back only after up to 10 s (docs/services.md,
// "Federation"). Here the first attempt after a loss follows at once, the
// next ones after ReconnectFirst, doubling up to ReconnectCap; a
// connection that held for ReconnectStable starts the sequence afresh, so
// a peer that accepts and drops at once is still retried at the cap.
const (
	ReconnectFirst  = 50 * time.Millisecond
	ReconnectCap    = time.Second
	ReconnectStable = 2 * time.Second
)

// link is one `<q <connect-transport ADDR>>`: its attempts, its answer
// and its `<connection-status outbound ADDR …>` record.
type link struct {
	s        *svc
	addr     preserves.Value
	ta       transport.Address
	req      preserves.Value
	log      zerolog.Logger
	status   *dataspace.Ref // a statusHolder in the question's facet
	failures int            // attempts since the last stable connection
	// The error answer of a failed attempt belongs to the question's
	// facet and stays up until an attempt succeeds (re-asserting an equal
	// value is invisible to observers).
	errHandle dataspace.Handle
	logged    string // the failure last logged, so retries are not
	info      services.ConnInfo
}

func (s *svc) connectTransport(t *dataspace.Turn, addr preserves.Value) {
	ta, err := transport.ParseValue(addr)
	if err != nil || ta.Network != transport.TCP {
		return // non-TCP addresses are ignored
	}
	l := &link{s: s, addr: addr, ta: ta, req: gkschema.ConnectTransport{Addr: addr}.ToValue(),
		log: s.log.With().Str("transport", preserves.Show(addr)).Logger()}
	l.status = t.Create(&statusHolder{cfg: s.cfg, kind: services.ConnOutbound, subject: addr})
	l.publish(t, services.ConnInfo{State: services.ConnConnecting, Since: s.opts.Now(), Attempts: 1})
	l.attempt(t)
}

// publish records the link's state.
func (l *link) publish(t *dataspace.Turn, c services.ConnInfo) {
	l.info = c
	t.Message(l.status, c.ToValue())
}

// delay is the wait before the next attempt after n consecutive failures.
func (l *link) delay(n int) time.Duration {
	first, cap := l.s.opts.First, l.s.opts.Cap
	if n <= 1 {
		return 0
	}
	d := first
	for i := 2; i < n && d < cap; i++ {
		d *= 2
	}
	return min(d, cap)
}

// retry stops the attempt facet (withdrawing its answer) and schedules
// the next attempt in the question's facet.
func (l *link) retry(t *dataspace.Turn, id dataspace.FacetID, err error) {
	t.StopFacetAndContinue(id, func(t *dataspace.Turn) error {
		l.failures++
		d := l.delay(l.failures)
		now := l.s.opts.Now()
		c := services.ConnInfo{State: services.ConnConnecting, Since: now, Attempts: l.failures + 1}
		if err != nil {
			kind := errKind(err)
			t.Update(&l.errHandle, l.s.cfg, answer(l.req, fail(kind)))
			c.State, c.Error = services.ConnFailed, string(kind)+": "+err.Error()
			if l.info.State == services.ConnFailed {
				c.Since = l.info.Since // still failing: the state began with the first failure
			}
			if c.Error != l.logged {
				l.logged = c.Error
				l.log.Info().Err(err).Str("next_attempt_in", d.String()).Msg("connect failed")
			}
		}
		if d > 0 {
			c.Next = now.Add(d)
		}
		l.publish(t, c)
		t.After(d, func(t *dataspace.Turn) error { l.attempt(t); return nil })
		return nil
	})
}

func (l *link) attempt(t *dataspace.Turn) {
	_, _ = t.Facet(func(t *dataspace.Turn) error {
		fr := t.FacetRef()
		id := t.ActiveFacet()
		t.LinkedTask("connect", func(ctx context.Context) error {
			nc, err := l.ta.Dial(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				fr.ActivateNow(func(t *dataspace.Turn) error { l.retry(t, id, err); return nil })
				return dataspace.ErrKeepFacet
			}
			conn, at := l.connected(fr, nc)
			if conn == nil {
				nc.Close()
				return ctx.Err()
			}
			select {
			case <-conn.Done():
			case <-ctx.Done():
				return ctx.Err()
			}
			fr.ActivateNow(func(t *dataspace.Turn) error {
				ev := l.log.Info()
				if err := conn.Err(); err != nil {
					ev = ev.Err(err)
				}
				ev.Str("after", l.s.opts.Now().Sub(at).Round(time.Millisecond).String()).Msg("disconnected")
				if l.s.opts.Now().Sub(at) >= ReconnectStable {
					l.failures = 0
				}
				l.retry(t, id, nil)
				return nil
			})
			return dataspace.ErrKeepFacet
		})
		return nil
	})
}

// connected runs the relay over nc in the attempt's facet and answers the
// question; a nil Conn if the facet is gone.
func (l *link) connected(fr dataspace.FacetRef, nc net.Conn) (conn *relay.Conn, at time.Time) {
	fr.ActivateNow(func(t *dataspace.Turn) error {
		c, peer := relay.Run(t, nc, relay.Options{ImportInitial: true, Logger: l.log})
		conn, at = c, l.s.opts.Now()
		ctl := t.Create(&control{conn: c})
		t.Assert(l.s.cfg, answer(l.req, ok(gkschema.ConnectedTransport{Addr: l.addr, Control: ctl, ResponderSession: peer}.ToValue())))
		t.Retract(l.errHandle)
		l.errHandle = 0
		l.log.Info().Int("attempts", l.failures+1).Msg("connected")
		l.logged = ""
		l.publish(t, services.ConnInfo{State: services.ConnConnected, Since: at})
		return nil
	})
	return conn, at
}

// statusHolder keeps a `<connection-status KIND SUBJECT INFO>` record in
// the facet that created it (the question's), whatever facet the news
// comes from: each message is the latest INFO.
type statusHolder struct {
	dataspace.BaseEntity
	cfg     *dataspace.Ref
	kind    preserves.Symbol
	subject preserves.Value
	pub     services.ConnPublisher
}

func (h *statusHolder) Message(t *dataspace.Turn, v preserves.Value) error {
	h.pub.Publish(t, h.cfg, h.kind, h.subject, services.ParseConnInfo(v))
	return nil
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
	status := t.Create(&statusHolder{cfg: s.cfg, kind: services.ConnRoute, subject: route})
	report := func(t *dataspace.Turn, c services.ConnInfo) {
		c.Since = s.opts.Now()
		t.Message(status, c.ToValue())
	}
	report(t, services.ConnInfo{State: services.ConnWaiting})
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
			report(t, services.ConnInfo{State: services.ConnWaiting})
			return nil
		}
		c := up[best]
		report(t, services.ConnInfo{State: services.ConnResolving, Via: c.addr})
		stepsFacet, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			s.resolveSteps(t, req, c, c.ref, steps, func(t *dataspace.Turn, res preserves.Value) {
				ci := services.ConnInfo{State: services.ConnResolved, Via: c.addr}
				if r, _ := rpc.ParseResult(res); r != nil {
					if e, isErr := r.(rpc.ResultError); isErr {
						ci.State, ci.Error = services.ConnFailed, preserves.Show(e.Value.Error)
					}
				}
				report(t, ci)
				t.OnStop(func(t *dataspace.Turn) error {
					report(t, services.ConnInfo{State: services.ConnResolving, Via: c.addr})
					return nil
				})
			})
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
//
// answered is told of the route's answer, in the facet that holds it.
func (s *svc) resolveSteps(t *dataspace.Turn, req preserves.Value, c connected, origin preserves.Value, steps []preserves.Value, answered func(*dataspace.Turn, preserves.Value)) {
	if len(steps) == 0 {
		res := ok(preserves.NewRecord(gkschema.LabelResolvedPath, c.addr, c.ctl, origin))
		t.Assert(s.cfg, answer(req, res))
		answered(t, res)
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
			s.resolveSteps(t, req, c, res.Value.Value, steps[1:], answered)
		case rpc.ResultError:
			t.Assert(s.cfg, answer(req, caps[0])) // Q13: propagated
			answered(t, caps[0])
		}
		return nil
	})
}
