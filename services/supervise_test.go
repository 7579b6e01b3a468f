package services

import (
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// TestSupervisionTransitions drives the supervisor's decision state
// through event sequences and checks, after each event, the reported
// state and (for exits) the restart decision.
func TestSupervisionTransitions(t *testing.T) {
	type step struct {
		ev      string        // start, ok, fail, degrade+, degrade-
		after   time.Duration // time since the previous step
		state   preserves.Symbol
		restart bool
		delay   time.Duration
	}
	cases := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"on-error: normal exit completes", OnErrorOnly, []step{
			{ev: "start", state: StateStarted},
			{ev: "ok", state: StateComplete},
		}},
		{"on-error: failure restarts after the delay", OnErrorOnly, []step{
			{ev: "start", state: StateStarted},
			{ev: "fail", state: StateFailed, restart: true, delay: RestartDelay},
			{ev: "start", after: RestartDelay, state: StateStarted},
			{ev: "ok", state: StateComplete},
		}},
		{"always: normal exit restarts", Always, []step{
			{ev: "start", state: StateStarted},
			{ev: "ok", state: StateComplete, restart: true, delay: RestartDelay},
		}},
		{"two terminations in the window back off", Always, []step{
			{ev: "start", state: StateStarted},
			{ev: "fail", state: StateFailed, restart: true, delay: RestartDelay},
			{ev: "start", after: RestartDelay, state: StateStarted},
			{ev: "fail", after: time.Second, state: StateFailed, restart: true, delay: RestartBackoff},
			{ev: "start", after: RestartBackoff, state: StateStarted},
			{ev: "fail", state: StateFailed, restart: true, delay: RestartDelay},
		}},
		{"terminations further apart than the window do not", OnErrorOnly, []step{
			{ev: "start", state: StateStarted},
			{ev: "fail", state: StateFailed, restart: true, delay: RestartDelay},
			{ev: "start", after: TerminationWindow, state: StateStarted},
			{ev: "fail", state: StateFailed, restart: true, delay: RestartDelay},
		}},
		{"degrade turns started into failed while held", OnErrorOnly, []step{
			{ev: "start", state: StateStarted},
			{ev: "degrade+", state: StateFailed},
			{ev: "degrade+", state: StateFailed},
			{ev: "degrade-", state: StateFailed},
			{ev: "degrade-", state: StateStarted},
		}},
		{"degrade does not hide complete", OnErrorOnly, []step{
			{ev: "start", state: StateStarted},
			{ev: "degrade+", state: StateFailed},
			{ev: "ok", state: StateComplete},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := supervision{policy: c.policy}
			at := time.Unix(1000, 0)
			for i, s := range c.steps {
				at = at.Add(s.after)
				var restart bool
				var delay time.Duration
				switch s.ev {
				case "start":
					m.start()
				case "ok", "fail":
					restart, delay = m.exit(s.ev == "fail", at)
				case "degrade+":
					m.degraded++
				case "degrade-":
					m.degraded--
				default:
					t.Fatalf("unknown event %q", s.ev)
				}
				if got := m.state(); got != s.state {
					t.Fatalf("step %d (%s): state %s, want %s", i, s.ev, got, s.state)
				}
				if restart != s.restart || delay != s.delay {
					t.Fatalf("step %d (%s): restart %v after %v, want %v after %v", i, s.ev, restart, delay, s.restart, s.delay)
				}
			}
		})
	}
}
