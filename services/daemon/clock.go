package daemon

import (
	"context"
	"time"
)

// Clock is the package's one time source: restart delays, stop and kill
// timeouts, readiness deadlines, the stop order's waits and the
// timestamps of output and states all read it, so a test that replaces it
// ([Options.Clock]) sees every timer the daemon service arms. (File
// descriptor deadlines stay on the wall clock: the kernel keeps them.)
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a
	// function that releases the timer early. The restart loop waits on
	// it between two runs of a process, so a test clock that records
	// After sees exactly the restart delays.
	After(d time.Duration) (<-chan time.Time, func())
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the returned stop is called first; stop reports whether it
	// prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// since is the time elapsed on c from t.
func since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// timeout returns a channel closed once d has passed on c, and a function
// that releases the timer early.
func timeout(c Clock, d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	stop := c.AfterFunc(d, func() { close(ch) })
	return ch, func() { stop() }
}

// sleep waits d on c; it returns false if ctx ended first.
func sleep(ctx context.Context, c Clock, d time.Duration) bool {
	ch, release := timeout(c, d)
	defer release()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
