package services

import (
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
)

// Run-time counterparts of the whole-tree analysis of `--check` (operator
// issue). The reference's semantics are kept: nothing here changes what
// runs. But a condition that would otherwise pass in silence becomes, once
// it has lasted DiagnosisGrace, a warning in the log and a reason in
// `<service-info NAME …>` (so `syndicate status` shows it):
//
//   - a running service (`<run-service NAME>`) that nothing reports a
//     state for: no built-in service and no script provides it (a
//     misspelt `<deamon x>` would otherwise stay `starting` for ever);
//   - a required service held back by a dependency cycle, with the cycle
//     named.
//
// The daemon service adds its own (a daemon with no declaration, a daemon
// declared in several files, unknown spec keys).

// DiagnosisGrace is how long a condition must last before it is reported.
const DiagnosisGrace = 2 * time.Second

// diagnosis is the state of the diagnostics facet; one goroutine (the
// framework actor's) owns it.
type diagnosis struct {
	*StatusModel
	env       Env
	grace     time.Duration
	since     map[string]time.Time // when the service's condition was first seen
	published map[string]*InfoPublisher
	reported  map[string]string // name → reason already logged
	pending   bool
}

// BootDiagnostics starts the diagnostics in an actor of their own, linked
// to the active facet, so that their bookkeeping stays off the path from
// a requirement to its service's start (the dependency tracker's actor).
func BootDiagnostics(t *dataspace.Turn, env Env) { bootDiagnostics(t, env, DiagnosisGrace) }

func bootDiagnostics(t *dataspace.Turn, env Env, grace time.Duration) {
	t.SpawnLink("service-diagnostics", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		d := &diagnosis{StatusModel: NewStatusModel(nil), env: env, grace: grace,
			since: map[string]time.Time{}, published: map[string]*InfoPublisher{}, reported: map[string]string{}}
		d.Changed = d.changed
		d.Track(t, env.Config)
		// A silent service (§2.5: http-static-files) reports no state, but
		// publishes its object.
		d.Watch(t, env.Config, service.LabelServiceObject, 2, func(c []preserves.Value, n int) {
			Count2(d.States, d.Key(c[0]), "object", n)
		})
		return nil
	})
}

// changed schedules a check one grace period after the first change of a
// burst, and again while conditions are pending.
func (d *diagnosis) changed(t *dataspace.Turn) {
	if d.pending {
		return
	}
	d.pending = true
	t.After(d.grace/2, func(t *dataspace.Turn) error {
		d.pending = false
		if d.check(t, time.Now()) {
			d.changed(t) // a condition is not yet old enough: look again
		}
		return nil
	})
}

// check reports conditions older than the grace period; it returns
// whether some condition is still waiting for its grace to pass.
func (d *diagnosis) check(t *dataspace.Turn, now time.Time) (waiting bool) {
	reasons := map[string]string{}
	for k := range d.Running {
		if len(d.States[k]) == 0 {
			reasons[k] = "no built-in service and no script provides " + k + " (nothing reports its state)"
		}
	}
	for k := range d.Required {
		if !d.Waiting(k) {
			continue
		}
		if c := d.Cycle(k); c != nil {
			reasons[k] = "dependency cycle: " + strings.Join(c, " → ")
		}
	}
	for k := range d.since {
		if _, ok := reasons[k]; !ok {
			delete(d.since, k)
		}
	}
	for k, r := range reasons {
		first, ok := d.since[k]
		if !ok {
			d.since[k] = now
			first = now
		}
		if now.Sub(first) < d.grace {
			waiting = true
			delete(reasons, k)
			continue
		}
		if d.reported[k] != r {
			d.reported[k] = r
			d.env.Logger.Warn().Str("service", k).Msg(r)
		}
	}
	for k, p := range d.published {
		if _, ok := reasons[k]; !ok {
			p.Clear(t)
			delete(d.published, k)
			delete(d.reported, k)
		}
	}
	// Forget the names nothing refers to any more (a long-running
	// server sees many come and go).
	for k := range d.Names {
		_, pub := d.published[k]
		_, rep := reasons[k]
		if !pub && !rep && !d.Referenced(k) {
			delete(d.Names, k)
		}
	}
	for k, r := range reasons {
		p := d.published[k]
		if p == nil {
			p = &InfoPublisher{}
			d.published[k] = p
		}
		p.Publish(t, d.env.Config, d.Names[k], Info{Reasons: []string{r}})
	}
	return waiting
}
