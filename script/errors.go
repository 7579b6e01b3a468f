package script

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// ErrScript is the class of every compile-time script error (as opposed to a
// Preserves syntax error, whose class is one of the preserves.Err* sentinels).
// Test with errors.Is on an *Error or an ErrorList.
var ErrScript = errors.New("script: invalid script")

// Error is one compile-time problem at a source position. It prints as
// `file:line:col: message`.
type Error struct {
	Pos preserves.Pos
	Msg string
	// Err is the underlying cause: ErrScript for script errors, or the
	// *preserves.Error of a syntax error. Unwrap returns it.
	Err error
}

func (e *Error) Error() string {
	if e.Pos.File == "" && !e.Pos.IsValid() {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// Unwrap returns the cause (ErrScript or a *preserves.Error).
func (e *Error) Unwrap() error { return e.Err }

// ErrorList collects every error of one or more files. The script front end
// never stops at the first error: --check and the config watcher report all
// of them.
type ErrorList []*Error

// Add appends an error at pos.
func (l *ErrorList) Add(pos preserves.Pos, msg string) {
	*l = append(*l, &Error{Pos: pos, Msg: msg, Err: ErrScript})
}

// Addf appends a formatted error at pos.
func (l *ErrorList) Addf(pos preserves.Pos, format string, args ...any) {
	l.Add(pos, fmt.Sprintf(format, args...))
}

func (l ErrorList) Len() int      { return len(l) }
func (l ErrorList) Swap(i, j int) { l[i], l[j] = l[j], l[i] }
func (l ErrorList) Less(i, j int) bool {
	a, b := l[i].Pos, l[j].Pos
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	if a.Col != b.Col {
		return a.Col < b.Col
	}
	return l[i].Msg < l[j].Msg
}

// Sort orders the list by file, line, column and message.
func (l ErrorList) Sort() { sort.Stable(l) }

// Error prints every error, one per line, so that a single log entry or a
// --check run shows all of them.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}
