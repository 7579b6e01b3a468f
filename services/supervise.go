package services

import (
	"context"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Policy is a supervisor's restart policy (§2.3).
type Policy uint8

const (
	// OnErrorOnly: a normal worker exit is final (`complete`); an abnormal
	// one is restarted. Used by daemons.
	OnErrorOnly Policy = iota
	// Always: every worker exit is followed by a restart.
	Always
)

// Restart timing of §2.3: a restart follows after RestartDelay, or after
// RestartBackoff when more than one worker termination (this one
// included) happened within TerminationWindow.
const (
	RestartDelay      = 200 * time.Millisecond
	RestartBackoff    = 10 * time.Second
	TerminationWindow = 5 * time.Second
)

// Supervisor options; the zero value is the spec's behaviour.
type SuperviseOptions struct {
	// Now is the clock used for the termination window (time.Now if nil).
	Now func() time.Time
	// Delay and Backoff replace RestartDelay and RestartBackoff when
	// non-zero (tests).
	Delay, Backoff time.Duration
}

// Supervise runs a supervisor for service name in the active facet (§2.3):
// it spawns the worker actor (boot runs there), keeps exactly one
// `<service-state name S>` assertion up to date in env.Config (the new one
// made before the old one is withdrawn), and restarts the worker per policy.
// Stopping the active facet stops the worker and withdraws the state, with
// no final `complete`.
//
// boot receives degrade, a capability in the supervisor: while anyone holds
// an assertion at it, a `started` supervisor reports `failed` instead. The
// daemon worker uses it for the Go deviation of §5.3 (an unparsable spec
// makes the daemon `failed` without a crash loop); the assertion vanishes
// with the worker or with the facet that made it.
func Supervise(t *dataspace.Turn, env Env, name preserves.Value, policy Policy, workerName string,
	boot func(t *dataspace.Turn, degrade *dataspace.Ref) error, opts SuperviseOptions) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &supervisor{env: env, name: name}
	degrade := t.Create(&degradeEntity{s: s})
	var terms []time.Time
	var start func(t *dataspace.Turn)
	var onExit func(t *dataspace.Turn, err error)
	start = func(t *dataspace.Turn) {
		s.base = StateStarted
		s.publish(t)
		// The worker reports its own termination through an exit hook:
		// the link alone cannot tell a worker that stopped normally (its
		// link assertion is retracted before it is marked dead) from a
		// supervisor being stopped. The hook only writes to a buffered
		// channel, because it runs under the worker's turn lock.
		exited := make(chan error, 1)
		_, _ = t.Facet(func(t *dataspace.Turn) error {
			// Linked, so that stopping the supervisor stops the worker.
			t.SpawnLink(workerName, func(t *dataspace.Turn) error {
				t.AddExitHook(func(_ *dataspace.Turn, err error) { exited <- err })
				return boot(t, degrade)
			})
			return nil
		})
		fr := t.FacetRef()
		t.LinkedTask("supervise", func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-exited:
				fr.Activate(func(t *dataspace.Turn) error {
					onExit(t, err)
					return nil
				})
				return dataspace.ErrKeepFacet
			}
		})
	}
	onExit = func(t *dataspace.Turn, err error) {
		failed := err != nil
		if failed {
			env.Logger.Warn().Str("service", preserves.FormatText(name)).Err(err).Msg("service worker failed")
		}
		if policy == OnErrorOnly && !failed {
			s.base = StateComplete
			s.publish(t)
			return
		}
		if failed {
			s.base = StateFailed
		} else {
			s.base = StateComplete
		}
		s.publish(t)
		var delay time.Duration
		terms, delay = nextDelay(terms, now(), opts)
		t.After(delay, func(t *dataspace.Turn) error { start(t); return nil })
	}
	start(t)
}

// supervisor holds the state assertion. Its fields are touched only in
// turns of the supervising actor.
type supervisor struct {
	env      Env
	name     preserves.Value
	base     preserves.Symbol // started, failed or complete
	degraded int              // assertions held at the degrade entity
	handle   dataspace.Handle
	shown    preserves.Symbol
}

// publish re-asserts the state if it changed. It must run with the
// supervisor's facet active: in its own stop actions' parent, its timers,
// or its degrade entity.
func (s *supervisor) publish(t *dataspace.Turn) {
	st := s.base
	if st == StateStarted && s.degraded > 0 {
		st = StateFailed
	}
	if st == s.shown && s.handle != 0 {
		return
	}
	s.shown = st
	t.Update(&s.handle, s.env.Config, ServiceState(s.name, st))
}

type degradeEntity struct {
	dataspace.BaseEntity
	s *supervisor
}

func (e *degradeEntity) Assert(t *dataspace.Turn, _ preserves.Value, _ dataspace.Handle) error {
	e.s.degraded++
	e.s.publish(t)
	return nil
}

func (e *degradeEntity) Retract(t *dataspace.Turn, _ dataspace.Handle) error {
	e.s.degraded--
	e.s.publish(t)
	return nil
}

// nextDelay records a worker termination at time at and returns the
// terminations still inside the window and the restart delay: the backoff
// when more than one termination (this one included) is remembered.
func nextDelay(terms []time.Time, at time.Time, opts SuperviseOptions) ([]time.Time, time.Duration) {
	kept := terms[:0]
	for _, x := range terms {
		if at.Sub(x) < TerminationWindow {
			kept = append(kept, x)
		}
	}
	kept = append(kept, at)
	if len(kept) > 1 {
		if opts.Backoff > 0 {
			return kept, opts.Backoff
		}
		return kept, RestartBackoff
	}
	if opts.Delay > 0 {
		return kept, opts.Delay
	}
	return kept, RestartDelay
}
