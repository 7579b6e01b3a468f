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
	deadline := time.Now().Add(WaitPatience)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", WaitPatience, what)
		}
		time.Sleep(time.Millisecond)
	}
}
