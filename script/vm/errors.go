package vm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

// Run-time error classes; test with errors.Is on a *RuntimeError.
var (
	// ErrUndefined: a variable (or target) is not bound.
	ErrUndefined = errors.New("vm: undefined variable")
	// ErrNotCapability: a target or attenuation subject is not a capability.
	ErrNotCapability = errors.New("vm: not a capability")
	// ErrNoMatch: a let pattern did not match its value.
	ErrNoMatch = errors.New("vm: pattern did not match")
	// ErrAttenuation: caveats could not be attached to a capability.
	ErrAttenuation = errors.New("vm: bad attenuation")
	// ErrPattern: a pattern could not be built from a variable's value.
	ErrPattern = errors.New("vm: bad pattern")
	// ErrStringify: a capability cannot be rendered as text.
	ErrStringify = script.ErrStringify
	// ErrBudget: an activation exceeded Options.MaxSteps.
	ErrBudget = errors.New("vm: step budget exceeded")
	// ErrCancelled: Options.Context was cancelled.
	ErrCancelled = errors.New("vm: cancelled")
	// ErrNilProgram is returned by Run (not a RuntimeError) when given no
	// program.
	ErrNilProgram = errors.New("vm: nil program")
)

// RuntimeError is a script error found while running. It prints as
// `file:line:col: message`; Trace lists the handlers (during, on-message,
// on-stop) the failing code ran under, innermost last: at most the 64
// innermost, Outer counting those left out.
type RuntimeError struct {
	Pos   preserves.Pos
	Msg   string
	Err   error // the class (ErrUndefined, …); Unwrap returns it
	Trace []preserves.Pos
	Outer int
}

func (e *RuntimeError) Error() string { return e.Pos.String() + ": " + e.Msg }

// Unwrap returns the error class.
func (e *RuntimeError) Unwrap() error { return e.Err }

// Backtrace renders the error with the handlers it ran under.
func (e *RuntimeError) Backtrace() string {
	var b strings.Builder
	b.WriteString(e.Error())
	for i := len(e.Trace) - 1; i >= 0; i-- {
		b.WriteString("\n\tin handler at ")
		b.WriteString(e.Trace[i].String())
	}
	if e.Outer > 0 {
		fmt.Fprintf(&b, "\n\tin %d more handlers", e.Outer)
	}
	return b.String()
}
