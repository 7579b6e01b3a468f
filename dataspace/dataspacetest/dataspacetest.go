// Package dataspacetest holds test helpers for code built on the actor
// runtime. Only tests import it.
package dataspacetest

import (
	"context"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
)

// ShutdownPatience bounds the shutdown at the end of a test. It only
// bounds failures (an actor that will not stop), so it is generous enough
// for a loaded CI machine running -race.
const ShutdownPatience = 20 * time.Second

// NewSystem returns a System that is shut down when the test ends: every
// actor stopped and its goroutines waited for, so nothing a test spawned
// outlives it. A shutdown that does not finish within ShutdownPatience
// fails the test.
func NewSystem(tb testing.TB, opts dataspace.Options) *dataspace.System {
	tb.Helper()
	s := dataspace.NewSystem(opts)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownPatience)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	})
	return s
}
