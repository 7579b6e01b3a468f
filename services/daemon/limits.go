package daemon

import (
	"slices"
	"time"
)

// Restart limits: optional keys of the dictionary form of a daemon spec
// (operator issue; docs/protocol.md "Extra daemon-spec keys"). The
// reference ignores them, so a configuration using them stays portable,
// and without them the reference's fixed delays of §5.5 apply exactly.
//
//   - restartDelay D (seconds): the delay before a restart, whatever the
//     exit (instead of 200 ms after exit 0 and 1 s after an error).
//   - restartMaxDelay M (seconds): exponential back-off. The delay doubles
//     after each consecutive restart, starting from D (or the reference's
//     delay for that exit when D is absent), capped at M. A process that
//     stayed up at least M before exiting counts as healthy: the next delay
//     starts from the base again.
//   - restartLimit N within restartWindow W (seconds): when a restart would
//     be the (N+1)-th within the last W seconds (the whole life of the spec
//     when W is absent or 0), the daemon gives up instead: the process is
//     not restarted, the daemon reports `failed` while the spec stays
//     asserted, and this is logged once.
//
// The limits count only restarts of one spec's process (§5.5); a crash of
// the whole worker under policy `all` is the supervisor's business (§2.3).

// limiter applies Limits to the decisions of one spec's restart loop. It
// is owned by the goroutine running Runner.Run.
type limiter struct {
	l        Limits
	streak   int         // consecutive restarts without a healthy run
	restarts []time.Time // restarts within the window (all, when unbounded)
}

// next adjusts the policy's decision n for an exit of a process that ran
// from began until now.
func (m *limiter) next(n Next, began, now time.Time) Next {
	if n.Action != ActRestart || m.l.IsZero() {
		return n
	}
	if m.l.HasLimit {
		if m.l.Window > 0 {
			m.restarts = slices.DeleteFunc(m.restarts, func(at time.Time) bool { return now.Sub(at) >= m.l.Window })
		}
		if len(m.restarts) >= m.l.Limit {
			return Next{Action: ActGiveUp}
		}
		m.restarts = append(m.restarts, now)
	}
	if m.l.HasDelay {
		n.Delay = m.l.Delay
	}
	if m.l.HasMaxDelay {
		if now.Sub(began) >= m.l.MaxDelay {
			m.streak = 0 // a healthy run: back to the base delay
		}
		d := n.Delay
		for i := 0; i < m.streak && d < m.l.MaxDelay; i++ {
			d *= 2
		}
		n.Delay = min(d, m.l.MaxDelay)
		m.streak++
	}
	return n
}
