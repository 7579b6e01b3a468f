package vm

import (
	"fmt"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

// RuntimeError is a script error found while running. It prints as
// `file:line:col: message`; Trace lists the handlers (during, on-message,
// on-stop) the failing code ran under, innermost last: at most the 64
// innermost, Outer counting those left out.
//
// Its class, tested with errors.Is, is one of the sentinel errors declared
// beside the code that raises them: ErrBudget, ErrCancelled and ErrNoMatch
// (exec), ErrUndefined and ErrNotCapability (target), ErrAttenuation
// (attenuate), ErrPattern (pattern), all in vm.go, or ErrStringify below.
type RuntimeError struct {
	Pos   preserves.Pos
	Msg   string
	Err   error // the class (ErrUndefined, …); Unwrap returns it
	Trace []preserves.Pos
	Outer int
}

func (e *RuntimeError) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrStringify: a capability cannot be rendered as text.
var ErrStringify = script.ErrStringify

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
