package testutil

import (
	"os"
	"testing"
)

// Missing skips a test whose prerequisite (a browser, unshare, cgroups) is
// not installed, or fails it under CI=true, where .ci/run installs
// everything the tests need: CI never passes by skipping.
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatal(why)
	}
	tb.Skip(why)
}
