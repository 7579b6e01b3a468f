package timer

import "time"

// Clock is the driver's time source; tests replace it with a fake whose
// wall clock and monotonic clock move independently.
type Clock interface {
	// Now reads the wall clock. later-than deadlines, absolute timers and
	// the SECONDS of timer-expired are wall-clock times.
	Now() time.Time
	// Elapsed reads the monotonic clock: the time since an arbitrary
	// origin, which never steps. Periodic ticks and relative timers
	// follow it.
	Elapsed() time.Duration
	// After returns a channel that receives once d has passed on the
	// monotonic clock, and a function that releases the timer early.
	After(d time.Duration) (<-chan time.Time, func())
}

// RealClock returns the system's clocks: Now is the wall clock without
// its monotonic reading, Elapsed the monotonic time since the call.
func RealClock() Clock { return realClock{origin: time.Now()} }

type realClock struct{ origin time.Time }

func (realClock) Now() time.Time           { return time.Now().Round(0) }
func (c realClock) Elapsed() time.Duration { return time.Since(c.origin) }
func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
