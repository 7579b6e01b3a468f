package daemon

import (
	"testing"
	"time"
)

// TestLifecycleTransitions runs every event in every phase: the phase it
// leads to and the signal it sends.
func TestLifecycleTransitions(t *testing.T) {
	parallel(t)
	type row struct {
		from phase
		ev   event
		to   phase
		sig  groupSignal
	}
	table := []row{
		{phaseStarting, evSpawned, phaseRunning, sigNone},
		{phaseStarting, evStop, phaseStarting, sigNone},
		{phaseStarting, evKillDue, phaseStarting, sigNone},
		{phaseStarting, evReaped, phaseExited, sigNone},

		{phaseRunning, evSpawned, phaseRunning, sigNone},
		{phaseRunning, evStop, phaseStopping, sigTerm},
		{phaseRunning, evKillDue, phaseRunning, sigNone},
		{phaseRunning, evReaped, phaseExited, sigNone},

		{phaseStopping, evSpawned, phaseStopping, sigNone},
		{phaseStopping, evStop, phaseStopping, sigNone},
		{phaseStopping, evKillDue, phaseKilled, sigKill},
		{phaseStopping, evReaped, phaseExited, sigNone},

		{phaseKilled, evSpawned, phaseKilled, sigNone},
		{phaseKilled, evStop, phaseKilled, sigNone},
		{phaseKilled, evKillDue, phaseKilled, sigNone},
		{phaseKilled, evReaped, phaseExited, sigNone},

		// Reaped, the pid may be recycled: nothing is signalled.
		{phaseExited, evSpawned, phaseExited, sigNone},
		{phaseExited, evStop, phaseExited, sigNone},
		{phaseExited, evKillDue, phaseExited, sigNone},
		{phaseExited, evReaped, phaseExited, sigNone},
	}
	now := time.Unix(100, 0)
	for _, r := range table {
		l := lifecycle{phase: r.from, timeout: time.Second}
		if r.from >= phaseStopping && r.from != phaseExited {
			l.report = &StopReport{}
		}
		sig := l.step(r.ev, now)
		if l.phase != r.to || sig != r.sig {
			t.Errorf("%v --%v--> %v, %v; want %v, %v", r.from, r.ev, l.phase, sig, r.to, r.sig)
		}
	}
}

// TestLifecycleStopReport follows one stop: SIGTERM, SIGKILL at the
// deadline, the reap; the report says how long it took and that SIGKILL
// was needed. A process that exits on its own has no report.
func TestLifecycleStopReport(t *testing.T) {
	parallel(t)
	t0 := time.Unix(100, 0)
	l := lifecycle{timeout: 3 * time.Second}
	l.step(evSpawned, t0)
	if l.step(evStop, t0.Add(time.Second)) != sigTerm {
		t.Fatal("stop sent no SIGTERM")
	}
	if want := t0.Add(4 * time.Second); !l.deadline.Equal(want) || !l.leftoverDeadline(t0).Equal(want) {
		t.Errorf("deadline %v, want %v", l.deadline, want)
	}
	if l.step(evKillDue, t0.Add(4*time.Second)) != sigKill {
		t.Fatal("kill due sent no SIGKILL")
	}
	l.step(evReaped, t0.Add(5*time.Second))
	if r := l.report; r == nil || !r.Killed || r.Took != 4*time.Second {
		t.Errorf("report %+v, want killed after 4s", r)
	}

	l = lifecycle{timeout: 3 * time.Second}
	l.step(evSpawned, t0)
	l.step(evReaped, t0.Add(time.Second))
	if l.report != nil {
		t.Errorf("exit on its own has a stop report %+v", l.report)
	}
	if got := l.leftoverDeadline(t0); !got.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("leftover deadline %v, want one stop timeout from now", got)
	}
}
