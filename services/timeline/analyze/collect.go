package analyze

import (
	"errors"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/timeline"
)

// ErrNoHistory: the server keeps no history (no `<history-origin …>`), so
// it is not one of ours, or its timeline service is not running.
var ErrNoHistory = errors.New("no service history (no <history-origin …>)")

// Collector gathers what the analysis reads from a config dataspace: the
// history origin, the service histories and the dependencies. It belongs
// to the actor whose turn called Collect; read it (Boot) once that actor
// has seen a sync answer, so that everything present has arrived.
type Collector struct {
	origins, hists []preserves.Value
	deps           [][]preserves.Value
	infos          [][]preserves.Value // <service-info NAME INFO>: scheduled runs
}

// Collect subscribes, from t's facet, to what the analysis needs in cfg.
func Collect(t *dataspace.Turn, cfg *dataspace.Ref) *Collector {
	c := &Collector{}
	d := pattern.Discard{}
	capt := pattern.Bind{Pattern: d}
	sub := func(p pattern.Pattern, on func(caps []preserves.Value)) {
		t.Assert(cfg, dataspace.Observe(p, t.Create(&collectEntity{on: on})))
	}
	sub(pattern.Bind{Pattern: pattern.Rec(syndicatego.LabelHistoryOrigin, d)}, func(v []preserves.Value) { c.origins = append(c.origins, v[0]) })
	sub(pattern.Bind{Pattern: pattern.Rec(syndicatego.LabelServiceHistory, d, d, d)}, func(v []preserves.Value) { c.hists = append(c.hists, v[0]) })
	sub(pattern.Rec(serviceschema.LabelDependsOn, capt, capt), func(v []preserves.Value) { c.deps = append(c.deps, v) })
	sub(pattern.Rec(syndicatego.LabelServiceInfo, capt, capt), func(v []preserves.Value) { c.infos = append(c.infos, v) })
	return c
}

// Boot is the analysis of what was collected, as of now.
func (c *Collector) Boot(now time.Time) (*Boot, error) {
	b := &Boot{Units: map[string]*Unit{}, Now: now}
	for _, o := range c.origins {
		if t, ok := timeline.ParseOrigin(o); ok {
			b.Origin = t
		}
	}
	if b.Origin.IsZero() {
		return nil, ErrNoHistory
	}
	for _, h := range c.hists {
		if name, changes, dropped, ok := timeline.ParseHistory(h); ok {
			u := UnitOf(name, changes, dropped)
			if old := b.Units[u.Key]; old != nil {
				u.Deps = old.Deps
			}
			b.Units[u.Key] = u
		}
	}
	for _, d := range c.deps {
		if len(d) == 2 {
			b.AddDep(d[0], d[1])
		}
	}
	for _, i := range c.infos {
		if len(i) == 2 {
			b.addInfo(i[0], i[1])
		}
	}
	return b, nil
}

// collectEntity hands the captures of each assertion to on (retractions
// do not matter: the collector is read once).
type collectEntity struct {
	dataspace.BaseEntity
	on func(caps []preserves.Value)
}

func (e *collectEntity) Assert(_ *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	if caps, ok := preserves.Unwrap(v).(preserves.Sequence); ok && len(caps) > 0 {
		e.on(caps)
	}
	return nil
}
