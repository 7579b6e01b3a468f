package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/services"
)

// Scheduled one-shots (docs/services.md, "Scheduled one-shots"): a spec
// with a `schedule` runs its process once at each time of the schedule,
// never two at once. The spec counts as ready as soon as its schedule is
// armed, so the daemon is `ready` from the start and stays so between and
// during runs (depends-on sees `ready`; never `complete`). It does not run
// when first required, only at the first time of its schedule, unless
// catchUp finds a run missed while the server was down. A run that is still
// going when a time comes makes that time skipped (counted in the status).
// The restart policy does not apply: a failed run waits for the next time,
// and the status shows its exit.
//
// The schedule is wall-clock time, so the wait is cut into pieces of at
// most scheduleRecheck: a step of the wall clock is noticed within it.

const scheduleRecheck = time.Second

// plan is one spec's schedule as the runner goroutine walks it: a plain
// value, tested without processes.
type plan struct {
	cron    cron.Schedule
	next    time.Time // the next time due; zero: never again
	skipped int       // times skipped in total
}

// newPlan arms schedule c at now. last is when the schedule last ran (or
// was armed) before the server went down, zero if unknown; with catchUp, a
// time between last and now was missed, and missed says to run at once.
func newPlan(c cron.Schedule, now, last time.Time, catchUp bool) (p plan, missed bool) {
	p = plan{cron: c, next: c.Next(now)}
	if catchUp && !last.IsZero() {
		if m := c.Next(last); !m.IsZero() && !m.After(now) {
			missed = true
		}
	}
	return p, missed
}

// take is the event "the run of the time due begins".
func (p *plan) take() {
	if !p.next.IsZero() {
		p.next = p.cron.Next(p.next)
	}
}

// finished is the event "the run ended at end": the times that came while
// it ran are skipped. It returns how many.
func (p *plan) finished(end time.Time) int {
	n := 0
	for !p.next.IsZero() && !p.next.After(end) {
		n++
		p.next = p.cron.Next(p.next)
	}
	p.skipped += n
	return n
}

// runReport is what the runner tells the worker about a scheduled spec: at
// the start of a run and after its exit.
type runReport struct {
	began, next time.Time
	skipped     int // in total
	running     bool
}

// waitUntil waits until the wall clock of c reaches at; false if ctx ended
// first.
func waitUntil(ctx context.Context, c Clock, at time.Time) bool {
	for {
		d := at.Sub(c.Now())
		if d <= 0 {
			return true
		}
		ch, release := c.After(min(d, scheduleRecheck))
		select {
		case <-ctx.Done():
			release()
			return false
		case <-ch:
		}
	}
}

// RunScheduled runs s at each time of its schedule until ctx is
// cancelled: at once first when runNow (a caught-up run). report is
// called when a run begins and when it has ended; ev.Exited gets each
// exit with Next{Action: ActScheduled}. Like Run, it returns only once
// every process it started is gone.
func (r *Runner) RunScheduled(ctx context.Context, s *Spec, p *plan, runNow bool, ev Events, report func(runReport)) Outcome {
	r.active.Add(1)
	defer r.active.Done()
	var cleanups sync.WaitGroup
	defer cleanups.Wait()
	for {
		if !runNow {
			if p.next.IsZero() {
				<-ctx.Done() // the schedule has no more times
				return Stopped
			}
			if !waitUntil(ctx, r.clock, p.next) {
				return Stopped
			}
			p.take()
		}
		runNow = false
		began := r.clock.Now()
		report(runReport{began: began, next: p.next, skipped: p.skipped, running: true})
		exit, stopped := r.runOnce(ctx, s, ev, &cleanups)
		if stopped {
			return Stopped
		}
		p.finished(r.clock.Now())
		report(runReport{began: began, next: p.next, skipped: p.skipped})
		if ev.Exited != nil {
			ev.Exited(exit, Next{Action: ActScheduled})
		}
	}
}

// runScheduled is a scheduled spec's linked task.
func (r *specRun) runScheduled(ctx context.Context) error {
	defer r.runEnded()
	d := r.w.d
	sched := r.spec.Schedule
	state := d.s.scheduleFile(d.key, r.key)
	now := d.s.clock.Now()
	p, missed := newPlan(sched.Cron, now, readScheduleState(state), sched.CatchUp)
	if missed {
		d.log.Info().Str("schedule", sched.Text).Msg("catching up a run missed while the server was down")
	}
	writeScheduleState(state, now, d.log)
	r.fr.ActivateNow(func(t *dataspace.Turn) error {
		r.sched = runReport{next: p.next}
		r.w.rec.Kick(t)
		return nil
	})
	ev := r.events()
	out := d.s.runner.RunScheduled(ctx, r.spec, &p, missed, ev, func(rep runReport) {
		if rep.running {
			writeScheduleState(state, rep.began, d.log)
		}
		r.fr.ActivateNow(func(t *dataspace.Turn) error {
			r.sched = rep
			r.w.rec.Kick(t)
			return nil
		})
	})
	if out == Stopped {
		return ctx.Err()
	}
	return dataspace.ErrKeepFacet
}

// scheduleInfo is the spec's part of the status.
func (r *specRun) scheduleInfo() services.Info {
	return services.Info{LastRun: r.sched.began, NextRun: r.sched.next, Skipped: r.sched.skipped}
}

// scheduleFile is where the last run of the spec keyed specKey of the
// daemon keyed daemonKey is kept ("" without a state directory).
func (s *Service) scheduleFile(daemonKey, specKey string) string {
	if s.stateDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(daemonKey + "\x00" + specKey))
	return filepath.Join(s.stateDir, "schedules", hex.EncodeToString(sum[:16]))
}

// readScheduleState reads the time kept in file; zero if there is none.
func readScheduleState(file string) time.Time {
	if file == "" {
		return time.Time{}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, string(b))
	return t
}

// writeScheduleState keeps at in file (atomically: a crash leaves the
// old time or the new one); a failure is logged, and costs at most a
// catch-up.
func writeScheduleState(file string, at time.Time, log zerolog.Logger) {
	if file == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(file), 0o755)
	if err == nil {
		tmp := file + ".tmp"
		if err = os.WriteFile(tmp, []byte(at.UTC().Format(time.RFC3339Nano)), 0o644); err == nil {
			err = os.Rename(tmp, file)
		}
	}
	if err != nil {
		log.Warn().Err(err).Msg("cannot keep the time of the last scheduled run (catchUp may repeat it)")
	}
}
