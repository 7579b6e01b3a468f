package daemon

import "time"

// The life of one process, as a plain value: which phase it is in and
// what the supervisor must do to its process group on each event. The
// process type (process.go) feeds it the events under its mutex and
// carries out the signals; lifecycle_test.go checks every transition.
//
//	starting ─spawned→ running ─stop→ stopping (SIGTERM) ─killDue→ killed (SIGKILL)
//	    └─────────────── reaped (from any phase) ───────────────→ exited
//
// Once exited, nothing is signalled any more: the pid may be recycled.

// phase is where a process is in its life.
type phase uint8

const (
	phaseStarting phase = iota // being spawned
	phaseRunning               // spawned, not asked to stop
	phaseStopping              // SIGTERM sent to its group; SIGKILL due at the deadline
	phaseKilled                // SIGKILL sent to its group
	phaseExited                // reaped
)

func (p phase) String() string {
	return [...]string{"starting", "running", "stopping", "killed", "exited"}[p]
}

// event is what happens to a process.
type event uint8

const (
	evSpawned event = iota // the child exists
	evStop                 // stop it (its context ended, or readiness failed)
	evKillDue              // the stop timeout has passed
	evReaped               // Wait returned
)

func (e event) String() string {
	return [...]string{"spawned", "stop", "killDue", "reaped"}[e]
}

// groupSignal is what the supervisor does to the process group on an event.
type groupSignal uint8

const (
	sigNone groupSignal = iota
	sigTerm             // SIGTERM, and arm the kill timer for the stop timeout
	sigKill             // SIGKILL
)

func (s groupSignal) String() string { return [...]string{"none", "TERM", "KILL"}[s] }

// lifecycle is the phase of one process and what its stop recorded.
type lifecycle struct {
	phase    phase
	timeout  time.Duration // the spec's stopTimeout
	termAt   time.Time     // when SIGTERM was sent
	deadline time.Time     // when the group gets SIGKILL, once stopping
	report   *StopReport   // set by the stop; nil when it exited on its own
}

// step applies event e, happening at now, and returns the signal to send.
func (l *lifecycle) step(e event, now time.Time) groupSignal {
	switch {
	case e == evSpawned && l.phase == phaseStarting:
		l.phase = phaseRunning
	case e == evStop && l.phase == phaseRunning:
		l.phase = phaseStopping
		l.termAt, l.deadline = now, now.Add(l.timeout)
		l.report = &StopReport{}
		return sigTerm
	case e == evKillDue && l.phase == phaseStopping:
		l.phase = phaseKilled
		l.report.Killed = true
		return sigKill
	case e == evReaped && l.phase != phaseExited:
		if l.report != nil {
			l.report.Took = now.Sub(l.termAt)
		}
		l.phase = phaseExited
	}
	return sigNone
}

// leftoverDeadline is when what remains of the group after the leader's
// exit gets SIGKILL: the stop's deadline, or one stop timeout from now.
func (l *lifecycle) leftoverDeadline(now time.Time) time.Time {
	if l.deadline.IsZero() {
		return now.Add(l.timeout)
	}
	return l.deadline
}
