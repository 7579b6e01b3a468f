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

// ErrDialect is the class of the warnings about caveat patterns written in
// another dialect's structural notation (`<not P>`, `<rec L [P…]>`, …),
// which this dialect reads as literal values (docs/language.md, "Dialects").
var ErrDialect = errors.New("script: caveat pattern in another dialect's notation")

// ErrLegacyComment is the class of the syntax error for a pre-2023 `;`
// comment: it wraps the *preserves.Error as well, so errors.Is finds both.
var ErrLegacyComment = errors.New("script: legacy ';' comment")

// Error is one compile-time problem at a source position. It prints as
// `file:line:col: message`, or `file:line:col: warning: message` when
// Warning is set.
type Error struct {
	Pos preserves.Pos
	Msg string
	// Err is the underlying cause: ErrScript for script errors, ErrDialect
	// for dialect warnings, or the *preserves.Error of a syntax error.
	// Unwrap returns it.
	Err error
	// Warning marks a problem that does not stop the script from running
	// (it compiles and runs, but probably not as its author meant).
	Warning bool
	// Fixes are the edits the message suggests, when it suggests some
	// (ApplyFixes applies them).
	Fixes []Fix
}

func (e *Error) Error() string {
	msg := e.Msg
	if e.Warning {
		msg = "warning: " + msg
	}
	return e.Pos.Prefix(msg)
}

// Unwrap returns the cause (ErrScript or a *preserves.Error).
func (e *Error) Unwrap() error { return e.Err }

// legacyError is the syntax error of a file using `;` comments: it wraps
// both ErrLegacyComment and the reader's error.
type legacyError struct{ syntax error }

func (e legacyError) Error() string   { return e.syntax.Error() }
func (e legacyError) Unwrap() []error { return []error{ErrLegacyComment, e.syntax} }

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

// Warnf appends a formatted warning of class class at pos.
func (l *ErrorList) Warnf(pos preserves.Pos, class error, format string, args ...any) {
	*l = append(*l, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Err: class, Warning: true})
}

// Count returns how many entries are errors and how many are warnings.
func (l ErrorList) Count() (errs, warnings int) {
	for _, e := range l {
		if e.Warning {
			warnings++
		} else {
			errs++
		}
	}
	return errs, warnings
}

// Failed reports whether err holds an error proper: it is not nil, and not
// an ErrorList of warnings only. Checks (`--check`, `syndicate check`) exit
// non-zero exactly when Failed holds.
func Failed(err error) bool {
	if err == nil {
		return false
	}
	var l ErrorList
	if errors.As(err, &l) {
		n, _ := l.Count()
		return n > 0
	}
	return true
}

// Summary is the closing line of a check: "2 error(s)", "1 warning(s)" or
// "2 error(s), 1 warning(s)" (empty for an empty list).
func (l ErrorList) Summary() string {
	n, w := l.Count()
	switch {
	case n > 0 && w > 0:
		return fmt.Sprintf("%d error(s), %d warning(s)", n, w)
	case n > 0:
		return fmt.Sprintf("%d error(s)", n)
	case w > 0:
		return fmt.Sprintf("%d warning(s)", w)
	}
	return ""
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
