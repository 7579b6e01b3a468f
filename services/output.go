package services

import (
	"time"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// OutputLine is one line a daemon printed, as the daemon service reads it
// from the pipe: the form in which it takes the short way to the log
// (LogDirect) without becoming a `<log …>` message.
type OutputLine struct {
	Time   time.Time // when it was read
	Pid    int       // of the process; 0 when unknown
	Stream preserves.Symbol
	Text   string // with its newline, if it had one
}

// PidValue is the `pid` of the line's `<log …>` detail.
func (l OutputLine) PidValue() preserves.Value {
	if l.Pid > 0 {
		return preserves.Int(l.Pid)
	}
	return preserves.Symbol("unknown")
}

// LineValue is the `line` of the line's `<log …>` detail: a string when
// the text is UTF-8, else a byte string.
func (l OutputLine) LineValue() preserves.Value {
	if utf8.ValidString(l.Text) {
		return preserves.String(l.Text)
	}
	return preserves.ByteString(l.Text)
}

// LogDirect is the short way from a daemon's pipe to the log writers
// (issue 28): while nothing but the logger observes the log dataspace, a
// daemon's lines go to the logger actor in one activation per read,
// charged to acct as the messages would be, instead of as one `<log …>`
// message each through the log dataspace. The logger makes of them the
// very events the messages would have made (console, files, `syndicate
// logs`). DaemonOutput reports false when it did not take the lines: no
// logger runs, or something else observes `<log …>` there (a script, a
// client), which must see them as messages; the caller then sends them as
// usual. It runs the logger's turn before it returns and keeps nothing
// of the slice but the texts, so the caller may reuse it afterwards.
type LogDirect interface {
	DaemonOutput(acct *dataspace.Account, service preserves.Value, lines []OutputLine) bool
}
