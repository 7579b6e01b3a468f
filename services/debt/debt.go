// Package debt is the debt reporter service (services spec §9): on
// `<run-service <debt-reporter SECONDS>>` it asserts `<service-state NAME
// started>` and `ready`, then immediately and every SECONDS logs scheduler
// statistics at INFO.
//
// The reference logs one line per flow-control account. Go's accounts are
// anonymous counters owned by whoever ingests external input, so there is
// nothing to enumerate; the spec lets Go log equivalent scheduler
// statistics instead, and those are what a stuck or overloaded server is
// diagnosed with: live actors, actors spawned, event batches handled (and
// their rate since the last report), batches waiting in mailboxes, and one
// line per actor whose mailbox holds at least BacklogThreshold batches
// (the longest MaxBacklogLines of them). The numbers come from
// dataspace.System.Stats, which reads state the runtime keeps anyway, so
// running the reporter costs the runtime nothing between reports.
//
// The reporter is not supervised (§2.5): the service's facet spawns a
// linked worker actor named `<debt_reporter NAME>` that makes the state
// assertions and runs the timer; withdrawing the run-service assertion
// stops it. A malformed request (SECONDS not a positive finite double) is
// reported with a warning and `<service-state NAME failed>`, like the
// other built-in services. restart-service is ignored (§2.4).
package debt

import (
	"fmt"
	"math"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var symWorker = preserves.Symbol("debt_reporter")

const (
	// BacklogThreshold is the mailbox length (in batches, one turn each)
	// from which an actor is listed individually; it matches the
	// reference's default flow-control credit.
	BacklogThreshold = 100
	// MaxBacklogLines bounds the per-actor lines of one report.
	MaxBacklogLines = 10
)

// ServiceName returns the service name `<debt-reporter SECONDS>` (what
// --debt-reporter requests with 1.0).
func ServiceName(seconds float64) preserves.Value {
	return preserves.NewRecord(internalservices.LabelDebtReporter, preserves.NewDouble(seconds))
}

// Boot installs the debt reporter service in env.Config.
func Boot(t *dataspace.Turn, env services.Env) error {
	if env.Config == nil {
		return fmt.Errorf("debt: Boot needs a config dataspace")
	}
	services.Serve(t, env, services.Requests[time.Duration]{
		Label:     internalservices.LabelDebtReporter,
		Parse:     internalservices.DebtPeriod,
		Malformed: "debt reporter: malformed <debt-reporter SECONDS> request (SECONDS must be a positive double)",
		Worker:    func(req services.Request[time.Duration]) string { return services.WorkerName(symWorker, req.Name) },
		Boot: func(t *dataspace.Turn, req services.Request[time.Duration]) error {
			t.Assert(env.Config, services.ServiceState(req.Name, services.StateReady))
			r := &reporter{sys: t.Actor().System(), log: req.Log}
			t.Every(req.Spec, func(*dataspace.Turn) error {
				r.report(time.Now())
				return nil
			})
			return nil
		},
	})
	return nil
}

// reporter logs one report per tick; it remembers the previous batch
// count for the rate. Only the worker's turns touch it.
type reporter struct {
	sys *dataspace.System
	log zerolog.Logger

	last    time.Time
	batches uint64
}

func (r *reporter) report(now time.Time) {
	st := r.sys.Stats(BacklogThreshold)
	ev := r.log.Info().
		Int("actors", st.Actors).
		Uint64("spawned", st.Spawned).
		Uint64("batches", st.Batches).
		Int("queued", st.Queued).
		Int("backlogged_actors", len(st.Backlogged))
	if !r.last.IsZero() {
		if secs := now.Sub(r.last).Seconds(); secs > 0 && st.Batches >= r.batches {
			ev = ev.Float64("batches_per_second", math.Round(float64(st.Batches-r.batches)/secs))
		}
	}
	ev.Msg("debt reporter: scheduler statistics")
	r.last, r.batches = now, st.Batches
	for i, b := range st.Backlogged {
		if i == MaxBacklogLines {
			break
		}
		r.log.Info().Uint64("actor_id", b.ID).Str("actor", b.Name).Int("queued", b.Queued).Msg("debt reporter: mailbox backlog")
	}
}
