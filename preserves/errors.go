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
	// Open is where the innermost compound still open was opened (its
	// `<`, `[`, `{` or `#{`), for a premature end of input or an item
	// that cannot start a value inside it; OpenWhat names it ("record",
	// "sequence", "set", "dictionary"). An unclosed compound is so
	// reported where it was written as well as where the reader noticed.
	Open     Pos
	OpenWhat string
}

func (e *Error) Error() string {
	if e.Pos.IsValid() {
		return fmt.Sprintf("%s: %s", e.Pos, e.Detail())
	}
	if e.Pos.File != "" {
		return fmt.Sprintf("%s: offset %d: %s", e.Pos.File, e.Pos.Offset, e.Detail())
	}
	return fmt.Sprintf("offset %d: %s", e.Pos.Offset, e.Detail())
}

// Detail is the message without the position: Msg, and where the
// innermost open compound was opened when that is known. Callers that
// print the position their own way print Detail after it.
func (e *Error) Detail() string {
	switch {
	case !e.Open.IsValid():
		return e.Msg
	case e.Class == ErrUnexpectedEOF:
		return fmt.Sprintf("%s: the %s opened at %s is not closed", e.Msg, e.OpenWhat, e.Open)
	}
	return fmt.Sprintf("%s, in the %s opened at %s", e.Msg, e.OpenWhat, e.Open)
}

func (e *Error) Unwrap() error { return e.Class }
