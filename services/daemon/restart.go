package daemon

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/ledger"
)

// Restart delays of §5.5. They are fixed: no growth, no jitter.
const (
	DelayAfterSuccess = 200 * time.Millisecond
	DelayAfterError   = 1000 * time.Millisecond
)

// Action is what happens after a process exits (§5.5).
type Action uint8

const (
	ActRestart   Action = iota // run it again after Next.Delay
	ActComplete                // counts as completed; not restarted
	ActCrash                   // crash the worker: the whole daemon restarts
	ActGiveUp                  // restartLimit reached: no restart, daemon failed
	ActScheduled               // a scheduled run ended: wait for the next time (schedule.go)
)

func (a Action) String() string {
	switch a {
	case ActRestart:
		return "restart"
	case ActComplete:
		return "complete"
	case ActCrash:
		return "crash"
	case ActGiveUp:
		return "give up"
	case ActScheduled:
		return "wait for the schedule"
	}
	return "?"
}

// Next is the decision taken on an exit.
type Next struct {
	Action Action
	Delay  time.Duration // for ActRestart
}

// Decide applies the restart policy table of §5.5 to an exit.
func Decide(p RestartPolicy, e Exit) Next {
	ok := e.Success()
	if e.Failure != nil && p == RestartNever {
		// A process the supervisor had to stop (never ready, watchdog)
		// did not complete: the daemon has failed (readiness.go).
		return Next{Action: ActGiveUp}
	}
	switch p {
	case RestartOnError:
		if ok {
			return Next{Action: ActComplete}
		}
		return Next{Action: ActRestart, Delay: DelayAfterError}
	case RestartAll:
		if ok {
			return Next{Action: ActComplete}
		}
		return Next{Action: ActCrash}
	case RestartNever:
		return Next{Action: ActComplete}
	}
	if ok {
		return Next{Action: ActRestart, Delay: DelayAfterSuccess}
	}
	return Next{Action: ActRestart, Delay: DelayAfterError}
}

// Events receives the life of one supervised spec. Callbacks run on the
// goroutine of Runner.Run (Line on a reader goroutine) and must not block
// for long; the dataspace integration forwards them into its actor.
type Events struct {
	Started func(pid int) // a process was spawned
	Line    func(Line)    // a line of output
	// Output, when set, replaces Line: the lines of one read of a pipe as
	// one batch, on that pipe's reader goroutine. It may block until the
	// log can take them (the child then blocks on its pipe); once ctx is
	// done it must deliver without waiting. It must keep neither the
	// slice nor the lines' texts, which are reused after it returns.
	Output func(ctx context.Context, batch []Line)
	Exited func(e Exit, next Next) // a process is down; next is what follows
	// Stdio, for Syndicate-protocol specs, is called after Started with
	// the child's stdout (read end) and stdin (write end). The callee owns
	// both and must close them; it returns a channel closed once it has
	// finished reading stdout. The exit is reported after that (or after a
	// short grace), so the child's last packets are handled first.
	Stdio func(pid int, stdout, stdin *os.File) <-chan struct{}
	// Ready is called when a process with a readiness protocol signals
	// readiness (once per process); Notify for each sd_notify datagram
	// with news (readiness.go); Warn for protocol trouble worth logging.
	Ready  func(pid int)
	Notify func(pid int, n Notification)
	Warn   func(pid int, msg string)
	// BeforeStop runs before a process being stopped is signalled; it
	// may block (dependents first) and returns how long it did.
	BeforeStop func() time.Duration
	// Stopped is called instead of Exited for a process that was
	// stopped because ctx ended; e.Stop says how the stop went.
	Stopped func(e Exit)
	// Name names the daemon's cgroups (cgroup.go).
	Name string
	// Spawned receives each process's handle, before Started.
	Spawned func(*ProcHandle)
	// Sockets, for a spec with listen, are passed to every process
	// (sockets.go); Gate, when set, runs before every start and holds it
	// until it returns (true) or ctx ends (false): `start: on-demand`.
	Sockets *sockets
	Gate    func(ctx context.Context) bool
}

// Outcome is how Runner.Run ended.
type Outcome uint8

const (
	Stopped   Outcome = iota // ctx was cancelled (the process was killed)
	Completed                // the policy said complete
	Crashed                  // the policy said crash the worker
	GaveUp                   // the spec's restartLimit was reached
)

// Runner runs process specs with their restart policy. The zero value is
// not usable; use NewRunner.
type Runner struct {
	clock Clock
	// run runs one process instance, adding goroutines that terminate
	// leftover process groups to cleanups; replaced in tests of the policy
	// loop.
	run func(ctx context.Context, s *Spec, h procHooks, cleanups *sync.WaitGroup) Exit
	// active counts Run calls in progress.
	active sync.WaitGroup
	// cgroups, when set, gives every process run a cgroup (cgroup.go).
	cgroups *cgroup.Manager
	// ledger, when set, records every process run (leftover.go).
	ledger *ledger.Ledger
}

// NewRunner returns a Runner that starts real processes, timing restarts
// with clock (RealClock when nil).
func NewRunner(clock Clock) *Runner {
	if clock == nil {
		clock = RealClock
	}
	r := &Runner{clock: clock}
	r.run = func(ctx context.Context, s *Spec, h procHooks, cleanups *sync.WaitGroup) Exit {
		return runProcess(ctx, s, h, r.clock, cleanups)
	}
	return r
}

// runOnce runs one process of s with ev's hooks. stopped is true when
// ctx ended meanwhile: ev.Stopped has then been told of a process that
// started, and the caller stops too.
func (r *Runner) runOnce(ctx context.Context, s *Spec, ev Events, cleanups *sync.WaitGroup) (exit Exit, stopped bool) {
	h := ev.hooks()
	h.cgroups, h.ledger = r.cgroups, r.ledger
	exit = r.run(ctx, s, h, cleanups)
	if ctx.Err() != nil {
		if ev.Stopped != nil && exit.Pid != 0 {
			ev.Stopped(exit)
		}
		return exit, true
	}
	return exit, false
}

// Run runs s until its policy says it is completed or crashed, or ctx is
// cancelled, restarting it after the delays of §5.5 in between. When it
// returns, every process it started is gone, leftovers of their process
// groups included, so a caller that waits for Run (the actor runtime waits
// for linked tasks at shutdown) leaves no process behind.
func (r *Runner) Run(ctx context.Context, s *Spec, ev Events) Outcome {
	r.active.Add(1)
	defer r.active.Done()
	var cleanups sync.WaitGroup
	defer cleanups.Wait()
	lim := limiter{l: s.Limits}
	spawnFailures := 0 // consecutive
	for {
		if ev.Gate != nil && !ev.Gate(ctx) {
			return Stopped
		}
		began := r.clock.Now()
		exit, stopped := r.runOnce(ctx, s, ev, &cleanups)
		if stopped {
			return Stopped
		}
		next := lim.next(Decide(s.Restart, exit), began, r.clock.Now())
		if exit.SpawnErr != nil && next.Action == ActRestart {
			spawnFailures++
			next.Delay = spawnDelay(spawnFailures, next.Delay)
		} else {
			spawnFailures = 0
		}
		if ev.Exited != nil {
			ev.Exited(exit, next)
		}
		switch next.Action {
		case ActComplete:
			return Completed
		case ActCrash:
			return Crashed
		case ActGiveUp:
			return GaveUp
		}
		c, release := r.clock.After(next.Delay)
		select {
		case <-ctx.Done():
			release()
			return Stopped
		case <-c:
		}
	}
}

// hooks adapts ev to one process instance: the readiness callbacks learn
// its pid when it starts.
func (ev Events) hooks() procHooks {
	h := procHooks{line: ev.Line, output: ev.Output, stdio: ev.Stdio, beforeStop: ev.BeforeStop,
		name: ev.Name, spawned: ev.Spawned, sockets: ev.Sockets}
	var pid int
	h.started = func(p int) {
		pid = p
		if ev.Started != nil {
			ev.Started(p)
		}
	}
	if ev.Ready != nil {
		h.ready = func() { ev.Ready(pid) }
	}
	if ev.Notify != nil {
		h.notify = func(n Notification) { ev.Notify(pid, n) }
	}
	if ev.Warn != nil {
		h.warn = func(format string, args ...any) { ev.Warn(pid, fmt.Sprintf(format, args...)) }
	}
	return h
}

// Wait waits until no Run call is in progress.
func (r *Runner) Wait() { r.active.Wait() }
