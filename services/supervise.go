package services

import (
	"context"
	"slices"
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
	// FailuresOnly reports no state but `failed` (services that report no
	// state, like <http-static-files …> (§2.5), still show a crash).
	FailuresOnly bool
}

// Supervisor runs the worker actor of one service (§2.3). The exported
// fields configure it; Run starts it. The rest is its state, touched only
// in turns of the supervising actor, and each event it reacts to is one
// method: [Supervisor.startWorker], [Supervisor.workerExited],
// [Supervisor.degradeChanged]. The decisions themselves are made by
// [supervision], a plain value tested with a transition table.
type Supervisor struct {
	Env  Env
	Name preserves.Value // the service name its state is reported for
	// Policy says whether a normal worker exit is restarted.
	Policy Policy
	// WorkerName names the worker actor (logs, traces).
	WorkerName string
	// Boot runs in the worker actor. degrade is a capability in the
	// supervisor: while anyone holds an assertion at it, a `started`
	// supervisor reports `failed` instead. The daemon worker uses it for
	// the Go deviation of §5.3 (an unparsable spec makes the daemon
	// `failed` without a crash loop); the assertion vanishes with the
	// worker or with the facet that made it.
	Boot    func(t *dataspace.Turn, degrade *dataspace.Ref) error
	Options SuperviseOptions

	m       supervision
	degrade *dataspace.Ref
	handle  dataspace.Handle // the one <service-state Name S> assertion
	shown   preserves.Symbol // S of handle
	since   time.Time        // when shown was first reported
	failure string           // the last worker error, while it is the cause
	info    InfoPublisher
}

// Supervise runs a supervisor for service name in the active facet; it is
// shorthand for filling in a [Supervisor] and calling Run.
func Supervise(t *dataspace.Turn, env Env, name preserves.Value, policy Policy, workerName string,
	boot func(t *dataspace.Turn, degrade *dataspace.Ref) error, opts SuperviseOptions) *Supervisor {
	s := &Supervisor{Env: env, Name: name, Policy: policy, WorkerName: workerName, Boot: boot, Options: opts}
	s.Run(t)
	return s
}

// Run starts the supervisor in the active facet: it spawns the worker
// actor, keeps exactly one `<service-state Name S>` assertion up to date
// in Env.Config (the new one made before the old one is withdrawn), and
// restarts the worker per Policy. Stopping the active facet stops the
// worker and withdraws the state, with no final `complete`.
func (s *Supervisor) Run(t *dataspace.Turn) {
	if s.Options.Now == nil {
		s.Options.Now = time.Now
	}
	s.m = supervision{policy: s.Policy, opts: s.Options}
	s.degrade = t.Create(&degradeEntity{s: s})
	s.startWorker(t)
}

// startWorker is the event "start (or restart) the worker".
func (s *Supervisor) startWorker(t *dataspace.Turn) {
	s.m.start()
	s.publish(t)
	// The worker reports its own termination through an exit hook: the
	// link alone cannot tell a worker that stopped normally (its link
	// assertion is retracted before it is marked dead) from a supervisor
	// being stopped. The hook only writes to a buffered channel, because
	// it runs under the worker's turn lock.
	exited := make(chan error, 1)
	_, _ = t.Facet(func(t *dataspace.Turn) error {
		// Linked, so that stopping the supervisor stops the worker.
		t.SpawnLink(s.WorkerName, func(t *dataspace.Turn) error {
			t.AddExitHook(func(_ *dataspace.Turn, err error) { exited <- err })
			return s.Boot(t, s.degrade)
		})
		return nil
	})
	fr := t.FacetRef()
	t.LinkedTask("supervise", func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			fr.ActivateNow(func(t *dataspace.Turn) error {
				s.workerExited(t, err)
				return nil
			})
			return dataspace.ErrKeepFacet
		}
	})
}

// workerExited is the event "the worker actor terminated with err".
func (s *Supervisor) workerExited(t *dataspace.Turn, err error) {
	s.failure = ""
	if err != nil {
		ReportFailure(s.Env.Logger, s.Name, err)
		s.failure = FailureSummary(err)
	}
	restart, delay := s.m.exit(err != nil, s.Options.Now())
	s.publish(t)
	if restart {
		t.After(delay, func(t *dataspace.Turn) error { s.startWorker(t); return nil })
	}
}

// degradeChanged is the event "an assertion at the degrade capability
// appeared (d = +1) or went (d = -1)".
func (s *Supervisor) degradeChanged(t *dataspace.Turn, d int) {
	s.m.degraded += d
	s.publish(t)
}

// publish re-asserts the state if it changed. It must run with the
// supervisor's facet active: in its own stop actions' parent, its timers,
// or its degrade entity.
func (s *Supervisor) publish(t *dataspace.Turn) {
	st := s.m.state()
	if s.Options.FailuresOnly && st != StateFailed {
		t.Update(&s.handle, s.Env.Config, nil)
		s.shown = ""
		// No state, but the status shows that it runs (operator
		// issue: a silent service is not `starting` for ever).
		i := Info{Restarts: s.m.starts - 1, Recent: s.m.recent()}
		if st == StateStarted {
			i.Phase = PhaseRunning
		}
		s.info.Publish(t, s.Env.Config, s.Name, i)
		return
	}
	if st != s.shown || s.handle == 0 {
		s.shown = st
		s.since = s.Options.Now()
		t.Update(&s.handle, s.Env.Config, ServiceState(s.Name, st))
	}
	i := Info{Since: s.since, Restarts: s.m.starts - 1, Recent: s.m.recent()}
	if st == StateFailed && s.failure != "" {
		i.Reasons = []string{"worker failed: " + s.failure}
	}
	s.info.Publish(t, s.Env.Config, s.Name, i)
}

type degradeEntity struct {
	dataspace.BaseEntity
	s *Supervisor
}

func (e *degradeEntity) Assert(t *dataspace.Turn, _ preserves.Value, _ dataspace.Handle) error {
	e.s.degradeChanged(t, +1)
	return nil
}

func (e *degradeEntity) Retract(t *dataspace.Turn, _ dataspace.Handle) error {
	e.s.degradeChanged(t, -1)
	return nil
}

// supervision is the decision state of a supervisor, free of any actor:
// the base state, the assertions held at the degrade capability, and the
// worker terminations inside the window. Its methods are the transitions.
type supervision struct {
	policy   Policy
	opts     SuperviseOptions
	base     preserves.Symbol // started, failed or complete
	degraded int              // assertions held at the degrade capability
	terms    []time.Time      // worker terminations inside the window
	starts   int              // workers started
}

// start: a worker is (re)started.
func (m *supervision) start() { m.base = StateStarted; m.starts++ }

// recent counts the restarts that followed a termination inside the
// window, as of the last termination.
func (m *supervision) recent() int {
	if len(m.terms) > 0 && m.starts > 1 {
		return len(m.terms) - 1
	}
	return 0
}

// exit: the worker terminated at time at, failed or not. It returns
// whether the worker is restarted, and after which delay.
func (m *supervision) exit(failed bool, at time.Time) (restart bool, delay time.Duration) {
	if failed {
		m.base = StateFailed
	} else {
		m.base = StateComplete
	}
	if m.policy == OnErrorOnly && !failed {
		m.terms = nil
		return false, 0
	}
	m.terms, delay = NextDelay(m.terms, at, m.opts)
	return true, delay
}

// state is the state to report: a degraded `started` shows as `failed`.
func (m *supervision) state() preserves.Symbol {
	if m.base == StateStarted && m.degraded > 0 {
		return StateFailed
	}
	return m.base
}

// NextDelay records a termination at time at and returns the
// terminations still inside the window and the restart delay: the backoff
// when more than one termination (this one included) is remembered. It is
// the one restart window of the tree's supervised workers (resolve's
// transport reconnects follow their own, quicker sequence:
// resolve.ReconnectFirst).
func NextDelay(terms []time.Time, at time.Time, opts SuperviseOptions) ([]time.Time, time.Duration) {
	kept := append(slices.DeleteFunc(terms, func(x time.Time) bool { return at.Sub(x) >= TerminationWindow }), at)
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
