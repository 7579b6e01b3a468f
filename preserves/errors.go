package preserves

import (
	"errors"
	"fmt"
)

// Error classes. Every decoding error is an *Error whose Unwrap returns one of
// these, so callers test the class with errors.Is and never match strings.
var (
	// ErrSyntax: the input is malformed.
	ErrSyntax = errors.New("preserves: syntax error")
	// ErrUnexpectedEOF: the input ended inside a value (premature EOF). An
	// incremental decoder reports this as "need more bytes".
	ErrUnexpectedEOF = errors.New("preserves: premature end of input")
	// ErrEmpty: the input held no value at all (immediate EOF).
	ErrEmpty = errors.New("preserves: empty input")
	// ErrLimit: a configured nesting-depth or length limit was exceeded.
	ErrLimit = errors.New("preserves: limit exceeded")
)

// Error is a decoding error with the place it was found.
type Error struct {
	Pos   Pos    // for binary input, Offset is meaningful and Line is 0
	Msg   string // what went wrong, without the position
	Class error  // one of ErrSyntax, ErrUnexpectedEOF, ErrEmpty, ErrLimit
}

func (e *Error) Error() string {
	if e.Pos.IsValid() {
		return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
	}
	if e.Pos.File != "" {
		return fmt.Sprintf("%s: offset %d: %s", e.Pos.File, e.Pos.Offset, e.Msg)
	}
	return fmt.Sprintf("offset %d: %s", e.Pos.Offset, e.Msg)
}

func (e *Error) Unwrap() error { return e.Class }
