// Package timeline keeps the time of every service state change, so that an
// operator can ask a running server when each service was requested,
// started, became ready, failed or completed (`syndicate analyze`, and the
// "held for" of `syndicate status`).
//
// # What is recorded
//
// The recorder observes the config dataspace for the three facts of the
// service framework and notes, with the server's wall clock, each time one
// of them appears or disappears for a service NAME:
//
//	<require-service NAME>    fact `require-service` (the service is wanted)
//	<run-service NAME>        fact `run-service` (its dependencies are met)
//	<service-state NAME S>    fact `<service-state S>`
//
// A fact asserted by several parties at once (a milestone's `ready` comes
// from the boot script and from the built-in) is one fact: only its first
// appearance and its last disappearance are changes.
//
// # How it is exposed
//
// For each service the recorder asserts, in the config dataspace (and so
// through the admin socket, whose oid 0 is that dataspace):
//
//	<service-history NAME [<asserted "TS" FACT> | <retracted "TS" FACT> …] DROPPED>
//
// with TS in RFC 3339 (UTC, nanoseconds) and DROPPED the number of changes
// left out of the list (see Bounds). It also asserts
// `<history-origin "TS">`, the time recording began (the server's boot),
// which analysis uses as time zero. Both records are our extension, defined
// in dataspace/schemas/syndicateGo.prs (syndicatego.ServiceHistory,
// syndicatego.HistoryOrigin); a change this package does not know is
// skipped by [ParseHistory]. A service's history outlives its
// facts: a one-shot that completed and was released can still be analysed.
//
// # Bounds
//
// The server may be PID 1 and its config dataspace may be written by many
// parties, so memory is bounded twice. A service keeps its first
// [Options.Head] changes (its boot record, which analysis needs) and its
// last Options.Tail changes; those in between are counted in DROPPED. At
// most [Options.MaxServices] services are tracked: beyond that, the
// history of the service that changed least recently and holds no fact is
// forgotten; if every tracked service holds a fact, new services are not
// recorded and a warning is logged once.
//
// # Ownership
//
// One entity in the recorder's facet owns all the state; histories are
// re-asserted at most once per turn of changes, through a
// [services.Reconciler].
package timeline

import (
	"math/big"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// FactRequire and FactRun name the require-service and run-service facts;
// a state S is the record <service-state S>. The records this package
// asserts are defined in dataspace/schemas/syndicateGo.prs
// (syndicatego.ServiceHistory, syndicatego.HistoryOrigin).
const (
	FactRequire = service.LabelRequireService
	FactRun     = service.LabelRunService
)

// Options bounds and clocks the recorder; zero fields take the defaults.
type Options struct {
	Now         func() time.Time // time.Now
	Head        int              // 16 first changes kept per service
	Tail        int              // 48 last changes kept per service
	MaxServices int              // 16384
}

// Boot installs the recorder with default options in the active facet.
func Boot(t *dataspace.Turn, env services.Env) error {
	BootWith(t, env, Options{})
	return nil
}

// Change is one recorded change of one fact of a service.
type Change struct {
	Time     time.Time
	Asserted bool            // false: retracted
	Fact     preserves.Value // FactRequire, FactRun or <service-state S>
}

// history is what the recorder keeps for one service.
type history struct {
	name    preserves.Value
	head    []Change
	tail    []Change // ring of at most opts.Tail, oldest at tailAt
	tailAt  int
	dropped int
	live    map[string]int // fact text → assertions holding it
	last    time.Time      // last change (eviction order)
	handle  dataspace.Handle
	dirty   bool
}

type recorder struct {
	dataspace.BaseEntity
	opts     Options
	cfg      *dataspace.Ref
	log      zerolog.Logger
	services map[string]*history
	held     dataspace.Held[heldFact]
	rec      *services.Reconciler
	full     bool // warned that MaxServices was reached
	// allLive: the table is full and every history holds a fact, so a
	// new service is not recorded without the scan for a victim (which
	// made 10,000 services beyond a full table quadratic). A retraction
	// that leaves a history without facts clears it.
	allLive bool
}

type heldFact struct {
	key, fact string
	factVal   preserves.Value
}

// BootWith installs the recorder with options in the active facet.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Head <= 0 {
		opts.Head = 16
	}
	if opts.Tail <= 0 {
		opts.Tail = 48
	}
	if opts.MaxServices <= 0 {
		opts.MaxServices = 16384
	}
	r := &recorder{opts: opts, cfg: env.Config, log: env.Logger.With().Str("service", "timeline").Logger(),
		services: map[string]*history{}, held: dataspace.Held[heldFact]{}}
	r.rec = services.NewReconciler(t, r.flush)
	t.Assert(env.Config, syndicatego.HistoryOrigin{At: services.StatusTime(opts.Now())}.ToValue())
	ref := t.Create(r)
	capt := pattern.Bind{Pattern: pattern.Discard{}}
	for _, p := range []pattern.Pattern{
		pattern.Rec(service.LabelRequireService, capt),
		pattern.Rec(service.LabelRunService, capt),
		pattern.Rec(service.LabelServiceState, capt, capt),
	} {
		t.Assert(env.Config, dataspace.Observe(pattern.Bind{Pattern: p}, ref))
	}
}

// Assert notes a fact appearing.
func (r *recorder) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	caps, _ := v.(preserves.Sequence)
	if len(caps) < 2 {
		return nil
	}
	rec, ok := caps[0].(*preserves.Record)
	if !ok {
		return nil
	}
	name := caps[1]
	var fact preserves.Value
	// A script's assertion carries positions, on its label too.
	switch rec.Label {
	case service.LabelRequireService:
		fact = FactRequire
	case service.LabelRunService:
		fact = FactRun
	case service.LabelServiceState:
		if len(caps) < 3 {
			return nil
		}
		fact = preserves.NewRecord(service.LabelServiceState, caps[2])
	default:
		return nil
	}
	key := preserves.FormatText(name)
	hs := r.lookup(t, key, name)
	if hs == nil {
		return nil
	}
	ft := preserves.FormatText(fact)
	r.held[h] = heldFact{key: key, fact: ft, factVal: fact}
	hs.live[ft]++
	if hs.live[ft] == 1 {
		r.note(t, hs, Change{Time: r.opts.Now(), Asserted: true, Fact: fact})
	}
	return nil
}

// Retract notes a fact disappearing.
func (r *recorder) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	hf, ok := r.held.Take(h)
	if !ok {
		return nil
	}
	hs := r.services[hf.key]
	if hs == nil {
		return nil
	}
	hs.live[hf.fact]--
	if hs.live[hf.fact] <= 0 {
		delete(hs.live, hf.fact)
		if len(hs.live) == 0 {
			r.allLive = false
		}
		r.note(t, hs, Change{Time: r.opts.Now(), Asserted: false, Fact: hf.factVal})
	}
	return nil
}

// lookup returns the history of key, creating it (and evicting another if
// the table is full); nil when nothing can be evicted.
func (r *recorder) lookup(t *dataspace.Turn, key string, name preserves.Value) *history {
	if hs := r.services[key]; hs != nil {
		return hs
	}
	if len(r.services) >= r.opts.MaxServices {
		if r.allLive {
			return nil
		}
		var victim *history
		var vkey string
		for k, hs := range r.services {
			if len(hs.live) == 0 && (victim == nil || hs.last.Before(victim.last)) {
				victim, vkey = hs, k
			}
		}
		if victim == nil {
			r.allLive = true
			if !r.full {
				r.full = true
				r.log.Warn().Int("maxServices", r.opts.MaxServices).Str("name", key).
					Msg("service history table full of live services; not recording new services")
			}
			return nil
		}
		if victim.handle != 0 {
			t.Retract(victim.handle)
		}
		delete(r.services, vkey)
	}
	hs := &history{name: name, live: map[string]int{}}
	r.services[key] = hs
	return hs
}

func (r *recorder) note(t *dataspace.Turn, hs *history, c Change) {
	hs.last = c.Time
	switch {
	case len(hs.head) < r.opts.Head:
		hs.head = append(hs.head, c)
	case len(hs.tail) < r.opts.Tail:
		hs.tail = append(hs.tail, c)
	default:
		hs.tail[hs.tailAt] = c
		hs.tailAt = (hs.tailAt + 1) % len(hs.tail)
		hs.dropped++
	}
	hs.dirty = true
	r.rec.Kick(t)
}

// flush re-asserts the history of every service changed since the last
// flush.
func (r *recorder) flush(t *dataspace.Turn) error {
	for _, hs := range r.services {
		if !hs.dirty {
			continue
		}
		hs.dirty = false
		t.Update(&hs.handle, r.cfg, HistoryRecord(hs.name, hs.changes(), hs.dropped))
	}
	return nil
}

func (hs *history) changes() []Change {
	out := make([]Change, 0, len(hs.head)+len(hs.tail))
	out = append(out, hs.head...)
	out = append(out, hs.tail[hs.tailAt:]...)
	return append(out, hs.tail[:hs.tailAt]...)
}

// HistoryRecord returns `<service-history NAME [CHANGE …] DROPPED>`.
func HistoryRecord(name preserves.Value, changes []Change, dropped int) preserves.Value {
	h := syndicatego.ServiceHistory{ServiceName: name, Changes: make([]syndicatego.HistoryChange, len(changes)), Dropped: big.NewInt(int64(dropped))}
	for i, c := range changes {
		if at := services.StatusTime(c.Time); c.Asserted {
			h.Changes[i] = syndicatego.HistoryChangeAsserted{At: at, Fact: c.Fact}
		} else {
			h.Changes[i] = syndicatego.HistoryChangeRetracted{At: at, Fact: c.Fact}
		}
	}
	return h.ToValue()
}

// ParseHistory reads a `<service-history NAME [CHANGE …] DROPPED>` record
// (as the client receives it). Changes it cannot read are skipped.
func ParseHistory(v preserves.Value) (name preserves.Value, changes []Change, dropped int, ok bool) {
	h, err := syndicatego.ParseServiceHistory(v)
	if err != nil || !h.Dropped.IsInt64() {
		return nil, nil, 0, false
	}
	for _, x := range h.Changes {
		var c Change
		var at string
		switch x := x.(type) {
		case syndicatego.HistoryChangeAsserted:
			c.Asserted, at, c.Fact = true, x.At, x.Fact
		case syndicatego.HistoryChangeRetracted:
			at, c.Fact = x.At, x.Fact
		default:
			continue // a change a newer server may write
		}
		if c.Time, err = time.Parse(time.RFC3339Nano, at); err == nil {
			changes = append(changes, c)
		}
	}
	return h.ServiceName, changes, int(h.Dropped.Int64()), true
}

// ParseOrigin reads `<history-origin "TS">`.
func ParseOrigin(v preserves.Value) (time.Time, bool) {
	o, err := syndicatego.ParseHistoryOrigin(v)
	if err != nil {
		return time.Time{}, false
	}
	tm, err := time.Parse(time.RFC3339Nano, o.At)
	return tm, err == nil
}

// StateOf returns S when fact is <service-state S>.
func StateOf(fact preserves.Value) (preserves.Value, bool) {
	r, ok := fact.(*preserves.Record)
	if !ok || r.Label != service.LabelServiceState || len(r.Fields) != 1 {
		return nil, false
	}
	return r.Fields[0], true
}
