package dataspace

import (
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/preserves"
)

// Sentinel errors of the runtime, tested with errors.Is.
var (
	// ErrKeepFacet, returned by a linked task, ends the task without
	// stopping its facet (runtime spec §7.10).
	ErrKeepFacet = errors.New("dataspace: keep facet")
	// ErrPanic is wrapped by the error of an actor whose callback panicked.
	ErrPanic = errors.New("dataspace: panic in actor")
)

// PanicError is the exit error of an actor whose callback panicked. It
// wraps ErrPanic, and the panic value when that is an error.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
	// Event is the assertion or message being delivered when the callback
	// panicked (nil for a retraction, a sync, or a panic outside event
	// delivery): the offending value a crash report names. Values a
	// script asserted carry their source position.
	Event preserves.Value
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("dataspace: panic in actor: %v", e.Value)
}

// Unwrap lets errors.Is see ErrPanic and, when the panic value was an
// error, that error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrPanic, err}
	}
	return []error{ErrPanic}
}

// ExitStatus is how an actor ended (runtime spec §3.3).
type ExitStatus uint8

const (
	// Running: not terminated yet.
	Running ExitStatus = iota
	// Normal: the root facet stopped cleanly.
	Normal
	// Failed: a turn failed, a linked task failed or a callback panicked;
	// Actor.Err says why.
	Failed
	// Dropped: the actor never ran (spawned by a turn that rolled back, or
	// after System.Shutdown began). Treated like Normal by Err.
	Dropped
)

func (s ExitStatus) String() string {
	switch s {
	case Running:
		return "running"
	case Normal:
		return "normal"
	case Failed:
		return "failed"
	case Dropped:
		return "dropped"
	}
	return fmt.Sprintf("ExitStatus(%d)", uint8(s))
}
