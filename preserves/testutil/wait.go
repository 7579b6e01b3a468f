package testutil

import (
	"testing"
	"time"
)

// WaitPatience is how long WaitFor polls before failing the test. It only
// bounds failures: a passing test waits no longer than its condition takes,
// so it is generous enough for a loaded CI machine running -race.
const WaitPatience = 20 * time.Second

// WaitFor polls cond until it holds, failing the test (naming what it was
// waiting for) after WaitPatience. Tests use it instead of sleeping: the
// effects of asynchronous work are awaited, never assumed.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	WaitForWithin(tb, WaitPatience, what, cond)
}

// WaitForWithin is WaitFor with a patience of d, for conditions that take
// long by design (a flood of messages draining through a slow consumer).
func WaitForWithin(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}
