package dataspacetest

import (
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
)

// TestNewSystemShutsDownAtCleanup: an actor spawned on the test's System
// is stopped by the time the test's cleanups have run.
func TestNewSystemShutsDownAtCleanup(t *testing.T) {
	var a *dataspace.Actor
	t.Run("inner", func(t *testing.T) {
		s := NewSystem(t, dataspace.Options{})
		a = s.Spawn("lingering", func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			return nil
		})
	})
	select {
	case <-a.Done():
	default:
		t.Fatal("the actor outlived its test")
	}
}
