package listener

import (
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// gatekeeperTap stands between a connection's relay and the gatekeeper
// (the connection's oid 0): it passes everything on unchanged, and watches
// the answers to the peer's `<resolve STEP #:OBS>` so that, once the peer
// has resolved something, the connection shows in `syndicate status --all`
// as `<connection-status inbound SUBJECT {state: connected, since: …,
// resolved: [STEP…]}>` for as long as it holds what it resolved (docs/services.md, "Federation"). The steps are
// shown without their credentials (a sturdy ref's signature, a noise
// key): the status record lives in the config dataspace, which holders of
// an attenuated $config may read.
//
// It lives in the connection actor's root facet, so the record goes with
// the connection.
type gatekeeperTap struct {
	services.Proxy // to the gatekeeper
	cfg            *dataspace.Ref
	subject        preserves.Value
	now            func() time.Time
	granted        map[*answerTap]preserves.Value // taps holding an ok answer → their step
	since          time.Time
	pub            services.ConnPublisher
}

func newGatekeeperTap(gk, cfg *dataspace.Ref, subject preserves.Value) *gatekeeperTap {
	return &gatekeeperTap{Proxy: services.Proxy{Target: gk}, cfg: cfg, subject: subject, now: time.Now,
		granted: make(map[*answerTap]preserves.Value)}
}

func (g *gatekeeperTap) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	if r, err := gkschema.ParseResolve(v); err == nil {
		if obs, isRef := r.Observer.(*dataspace.Ref); isRef {
			tap := &answerTap{Proxy: services.Proxy{Target: obs}, g: g, step: services.RedactStep(r.Step.StepType, r.Step.Detail),
				oks: make(map[dataspace.Handle]bool)}
			r.Observer = t.Create(tap)
			v = r.ToValue()
		}
	}
	g.Pass(t, v, h)
	return nil
}

// publish re-asserts the status record after a grant came or went: it
// shows while the peer holds something it resolved.
func (g *gatekeeperTap) publish(t *dataspace.Turn) {
	if len(g.granted) == 0 {
		g.pub.Clear(t)
		g.since = time.Time{}
		return
	}
	if g.since.IsZero() {
		g.since = g.now()
	}
	var steps []preserves.Value
	for _, s := range g.granted {
		steps = append(steps, s)
	}
	slices.SortFunc(steps, preserves.Compare)
	g.pub.Publish(t, g.cfg, services.ConnInbound, g.subject,
		services.ConnInfo{State: services.ConnConnected, Since: g.since, Resolved: steps})
}

// answerTap passes the gatekeeper's answers to the peer's observer, noting
// the grants.
type answerTap struct {
	services.Proxy // to the peer's observer
	g              *gatekeeperTap
	step           preserves.Value
	oks            map[dataspace.Handle]bool // the answers that granted
}

func (a *answerTap) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	a.Pass(t, v, h)
	if r, _ := rpc.ParseResult(v); r != nil {
		if _, isOk := r.(rpc.ResultOk); isOk {
			a.oks[h] = true
			a.g.granted[a] = a.step
			a.g.publish(t)
		}
	}
	return nil
}

func (a *answerTap) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	_ = a.Proxy.Retract(t, h)
	if a.oks[h] {
		delete(a.oks, h)
		if len(a.oks) == 0 {
			delete(a.g.granted, a)
		}
		a.g.publish(t)
	}
	return nil
}

// Sync is answered by the tap itself (BaseEntity's), not forwarded to
// the observer.
func (a *answerTap) Sync(t *dataspace.Turn, peer *dataspace.Ref) error {
	return dataspace.BaseEntity{}.Sync(t, peer)
}
