// Package logger is the server's `logger` actor (services spec §1.9): it
// prints every `<log TIMESTAMP DETAIL>` message sent to the log dataspace as
// one diagnostic line, `TIMESTAMP SERVICE[PID] STREAM: LINE`, followed by any
// other detail keys. Assertions to the log dataspace are ignored.
package logger

import (
	"strings"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Boot subscribes, from the active facet, to log messages in env.Log; lines
// go to env.Logger at info level.
//
// The reference runs the logger in an actor of its own, spawned last at
// start-up, so a script's first messages can reach the log dataspace before
// the logger's subscription does and be lost. Subscribing in the caller's
// (boot) turn instead puts the Observe ahead of anything a script can send:
// the config watchers only start after that turn has committed.
func Boot(t *dataspace.Turn, env services.Env) error {
	log := env.Logger
	p := pattern.Rec(preserves.Symbol("log"), pattern.Capture(), pattern.Capture())
	t.OnMessage(env.Log, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		if line, ok := Format(caps[0], caps[1]); ok {
			log.Info().Msg(line)
		}
		return nil
	})
	return nil
}

var dash = preserves.Symbol("-")

// Format renders one log record as §1.9 specifies. It reports false when
// DETAIL is not a dictionary (such messages are ignored entirely).
func Format(timestamp, detail preserves.Value) (string, bool) {
	d, ok := preserves.Unwrap(detail).(*preserves.Dictionary)
	if !ok {
		return "", false
	}
	ts := "-"
	if s, ok := preserves.Unwrap(timestamp).(preserves.String); ok {
		ts = string(s)
	}
	take := func(key string) preserves.Value {
		if v, ok := d.Get(preserves.Symbol(key)); ok {
			return v
		}
		return dash
	}
	var b strings.Builder
	b.WriteString(ts)
	b.WriteByte(' ')
	b.WriteString(preserves.FormatText(take("service")))
	b.WriteByte('[')
	b.WriteString(preserves.FormatText(take("pid")))
	b.WriteString("] ")
	b.WriteString(preserves.FormatText(take("stream")))
	b.WriteString(": ")
	b.WriteString(preserves.FormatText(take("line")))
	var rest []preserves.DictEntry
	for _, e := range d.Entries() {
		switch preserves.Unwrap(e.Key) {
		case preserves.Symbol("service"), preserves.Symbol("pid"), preserves.Symbol("stream"), preserves.Symbol("line"):
			continue
		}
		rest = append(rest, e)
	}
	if len(rest) > 0 {
		b.WriteByte(' ')
		b.WriteString(preserves.FormatText(preserves.NewDictionary(rest...)))
	}
	return b.String(), true
}

// Discard is a logger for tests that do not look at output.
var Discard = zerolog.Nop()
