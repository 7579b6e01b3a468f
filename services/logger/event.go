package logger

import (
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Event is one line of service output: a daemon's output line, a
// lifecycle event of a service, or a `$log` message, with the server's
// timestamp. Service, Pid, Stream and Source are nil when the message did
// not name them.
type Event struct {
	Seq     uint64 // order of arrival at the logger, from 1
	Time    time.Time
	Service preserves.Value
	Pid     preserves.Value
	Stream  preserves.Value
	Source  preserves.Value // services.SourceDaemon, SourceServer, SourceScript
	Line    preserves.Value // nil when the message had no line
	Extra   []preserves.DictEntry

	serviceText string // cache of ServiceText, set by the logger
}

var dash = preserves.Symbol("-")

// FromLog reads the TIMESTAMP and DETAIL of a `<log TIMESTAMP DETAIL>`
// message. It reports false when DETAIL is not a dictionary (services spec
// §1.9: such messages are ignored). The event's time is TIMESTAMP when that
// is an RFC 3339 string (daemon lines carry the time they were read), now
// otherwise; any other string but "-" is kept as the detail `timestamp`.
func FromLog(timestamp, detail preserves.Value, now time.Time) (Event, bool) {
	return fromLog(timestamp, detail, func() time.Time { return now }, nil)
}

// fromLog is FromLog asking for the time only when the message has none.
func fromLog(timestamp, detail preserves.Value, now func() time.Time, tp *timeParser) (Event, bool) {
	d, ok := detail.(*preserves.Dictionary)
	if !ok {
		return Event{}, false
	}
	var ev Event
	for _, e := range d.Entries() {
		v := e.Value
		switch e.Key {
		case services.LogKeyService:
			ev.Service = v
		case services.LogKeyPid:
			ev.Pid = v
		case services.LogKeyStream:
			ev.Stream = v
		case services.LogKeyLine:
			ev.Line = v
		case services.LogKeySource:
			ev.Source = v
		default:
			ev.Extra = append(ev.Extra, preserves.DictEntry{Key: e.Key, Value: v})
		}
	}
	if s, ok := timestamp.(preserves.String); ok && s != "-" {
		if t, err := tp.parse(string(s)); err == nil {
			ev.Time = t
		} else {
			ev.Extra = append(ev.Extra, preserves.DictEntry{Key: preserves.Symbol("timestamp"), Value: s})
		}
	}
	if ev.Time.IsZero() {
		ev.Time = now()
	}
	return ev, true
}

// timeParser is time.Parse(RFC3339Nano) with a one-entry cache: the lines
// of one read of a daemon's pipe share their timestamp. Each user owns its
// parser; a nil one does not cache.
type timeParser struct {
	s string
	t time.Time
}

func (p *timeParser) parse(s string) (time.Time, error) {
	if p != nil && s == p.s {
		return p.t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil && p != nil {
		p.s, p.t = s, t
	}
	return t, err
}

// Record is the event as a `<log "TIMESTAMP" DETAIL>` message again, with
// the server's timestamp (what `syndicate logs` receives).
func (ev Event) Record() preserves.Value {
	entries := make([]preserves.DictEntry, 0, 5+len(ev.Extra))
	add := func(k preserves.Symbol, v preserves.Value) {
		if v != nil {
			entries = append(entries, preserves.DictEntry{Key: k, Value: v})
		}
	}
	add(services.LogKeyService, ev.Service)
	add(services.LogKeySource, ev.Source)
	add(services.LogKeyPid, ev.Pid)
	add(services.LogKeyStream, ev.Stream)
	add(services.LogKeyLine, ev.Line)
	entries = append(entries, ev.Extra...)
	return preserves.NewRecord(services.LabelLog, preserves.String(ev.Time.UTC().Format(time.RFC3339Nano)), preserves.NewDictionary(entries...))
}

// ServiceText is the service as Preserves text, "-" when unnamed.
func (ev Event) ServiceText() string {
	switch {
	case ev.Service == nil:
		return "-"
	case ev.serviceText != "":
		return ev.serviceText
	}
	return preserves.FormatText(ev.Service)
}

// text renders v as Preserves text, except that a symbol or a string is
// taken as its contents (stream names, detail keys).
func text(v preserves.Value) string {
	switch x := v.(type) {
	case preserves.Symbol:
		return string(x)
	case preserves.Int:
		return strconv.FormatInt(int64(x), 10)
	}
	return preserves.FormatText(v)
}

// appendText is text appended to b.
func appendText(b []byte, v preserves.Value) []byte {
	switch x := v.(type) {
	case preserves.Symbol:
		return append(b, x...)
	case preserves.Int:
		return strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, preserves.FormatText(v)...)
}

// timeCache remembers the last rendering of a time in one layout: the
// lines of one read of a daemon's pipe share their time. Each user owns
// its cache (the logger actor, a client).
type timeCache struct {
	t      time.Time
	layout string
	text   []byte
}

func (c *timeCache) append(b []byte, t time.Time, layout string) []byte {
	if c == nil {
		return t.AppendFormat(b, layout)
	}
	if !t.Equal(c.t) || layout != c.layout || c.text == nil {
		c.t, c.layout = t, layout
		c.text = t.AppendFormat(c.text[:0], layout)
	}
	return append(b, c.text...)
}

// plainLine returns the line as it should be printed and whether it is
// plain text: a valid UTF-8 string without control characters other than
// tab, once one trailing newline is dropped. Anything else is rendered as
// Preserves text (quoted, escaped), so no daemon can write escape
// sequences to the operator's terminal.
func plainLine(v preserves.Value) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(preserves.String)
	if !ok {
		return preserves.FormatText(v), false
	}
	line := strings.TrimSuffix(string(s), "\n")
	if !preserves.TerminalSafe(line) { // the one rule: preserves/terminal.go
		return preserves.FormatText(preserves.String(line)), false
	}
	return line, true
}

// streamName shortens the daemon's stream symbols for console lines.
func streamName(v preserves.Value) string {
	switch v {
	case services.StreamStdout:
		return "out"
	case services.StreamStderr:
		return "err"
	}
	return text(v)
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// UseColor reports whether console lines to w get colours: only on a
// terminal, and never when NO_COLOR is set (https://no-color.org).
func UseColor(w io.Writer) bool {
	return IsTerminal(w) && os.Getenv("NO_COLOR") == ""
}

// ANSI colours of console lines (only on a terminal, and never with
// NO_COLOR set); the time is dim as in the server's own lines.
const (
	colDim   = "\x1b[90m"
	colName  = "\x1b[36m"
	colErr   = "\x1b[31m"
	colReset = "\x1b[0m"
)

// AppendConsole appends the console form of ev and a newline:
//
//	15:04:05.000 <daemon web>[1234] out: listening on :8080
//
// The service is `-` when unnamed; [PID] and the stream are left out when
// absent; other detail keys follow as a Preserves dictionary.
func AppendConsole(b []byte, ev Event, color bool) []byte {
	return appendConsole(b, ev, color, nil)
}

func appendConsole(b []byte, ev Event, color bool, tc *timeCache) []byte {
	if color {
		b = append(b, colDim...)
	}
	b = tc.append(b, ev.Time.Local(), "15:04:05.000")
	if color {
		b = append(b, colReset...)
	}
	b = append(b, ' ')
	if ev.Source == services.SourceScript {
		b = append(b, scriptMark...)
	}
	if color {
		b = append(b, colName...)
	}
	b = append(b, ev.ServiceText()...)
	b = appendBody(b, ev, color)
	return append(b, '\n')
}

// The marks that tell lines apart whatever their text says (issue 22, 26):
// a daemon's line names its pid and stream (`[1234] out:`); the server's
// lifecycle events of the service have `syndicate:` where a daemon line
// has its stream; a line a script sent to `$log` starts with `(script)`,
// before any part the script chose, so no script can pass for a daemon or
// for the server.
const (
	scriptMark = "(script) "
	serverMark = "syndicate"
)

// streamOf is what a line shows in the stream's place: `syndicate` for
// the server's lifecycle events, else the stream, if any.
func streamOf(ev Event) preserves.Value {
	if ev.Source == services.SourceServer {
		return preserves.Symbol(serverMark)
	}
	return ev.Stream
}

// appendBody appends `[PID] STREAM: LINE {extra}` (the part of a line after
// the service name); colour starts, if color, with the service's.
func appendBody(b []byte, ev Event, color bool) []byte {
	if ev.Pid != nil {
		b = append(b, '[')
		b = appendText(b, ev.Pid)
		b = append(b, ']')
	}
	if color {
		b = append(b, colReset...)
	}
	if stream := streamOf(ev); stream != nil {
		b = append(b, ' ')
		errStream := color && stream == services.StreamStderr
		if errStream {
			b = append(b, colErr...)
		}
		b = append(b, streamName(stream)...)
		if errStream {
			b = append(b, colReset...)
		}
	}
	b = append(b, ':')
	if ev.Line != nil {
		line, _ := plainLine(ev.Line)
		b = append(b, ' ')
		b = append(b, line...)
	}
	if extra := shownExtra(ev); len(extra) > 0 {
		b = append(b, ' ')
		if color {
			b = append(b, colDim...)
		}
		b = append(b, preserves.FormatText(preserves.NewDictionary(extra...))...)
		if color {
			b = append(b, colReset...)
		}
	}
	return b
}

// keyEvent names a lifecycle event (`event: spawned`): JSON shows it; the
// console and files leave it out of the server's lines, whose text says
// it already.
var keyEvent = preserves.Symbol("event")

// shownExtra is the detail keys a console or file line shows.
func shownExtra(ev Event) []preserves.DictEntry {
	if ev.Source != services.SourceServer {
		return ev.Extra
	}
	for i, e := range ev.Extra {
		if e.Key == keyEvent {
			return append(ev.Extra[:i:i], ev.Extra[i+1:]...)
		}
	}
	return ev.Extra
}

// FileTimeFormat is the timestamp of lines in log directories: UTC, fixed
// width, so lines and files sort by time as text.
const FileTimeFormat = "2006-01-02T15:04:05.000000000Z"

// AppendFile appends the form of ev kept in a service's log directory: the
// full UTC time, then `[PID] STREAM: ` when present, the line and any other
// detail keys, without colours (the directory names the service):
//
//	2026-11-24T23:57:38.123456789Z [1234] out: listening on :8080
//	2026-11-24T23:57:39.000000000Z hello {extra: 1}
func AppendFile(b []byte, ev Event) []byte { return appendFile(b, ev, nil) }

func appendFile(b []byte, ev Event, tc *timeCache) []byte {
	b = tc.append(b, ev.Time.UTC(), FileTimeFormat)
	b = append(b, ' ')
	if ev.Source == services.SourceScript {
		b = append(b, scriptMark...)
	}
	if ev.Pid != nil {
		b = append(b, '[')
		b = appendText(b, ev.Pid)
		b = append(b, "] "...)
	}
	if stream := streamOf(ev); stream != nil {
		b = append(b, streamName(stream)...)
		b = append(b, ": "...)
	}
	line, _ := plainLine(ev.Line)
	b = append(b, line...)
	if extra := shownExtra(ev); len(extra) > 0 {
		if ev.Line != nil {
			b = append(b, ' ')
		}
		b = append(b, preserves.FormatText(preserves.NewDictionary(extra...))...)
	}
	return append(b, '\n')
}

// AppendJSON appends ev as one JSON object and a newline:
//
//	{"time":"…","service":"<daemon web>","pid":1234,"stream":"stdout","line":"listening on :8080"}
//
// service is Preserves text; stream and symbol-keyed details are plain
// names; line is the text itself when it is a UTF-8 string (one trailing
// newline dropped), Preserves text otherwise. Every other detail key is a
// field of its own: numbers, booleans and strings as JSON, anything else
// as Preserves text. Keys that would repeat a field get a `detail.` prefix.
func AppendJSON(b []byte, ev Event) []byte { return appendJSON(b, ev, nil) }

func appendJSON(b []byte, ev Event, tc *timeCache) []byte {
	b = append(b, `{"time":"`...)
	b = tc.append(b, ev.Time.UTC(), time.RFC3339Nano)
	b = append(b, '"')
	if ev.Service != nil {
		b = append(b, `,"service":`...)
		b = appendJSONString(b, ev.ServiceText())
	}
	if ev.Pid != nil {
		b = append(b, `,"pid":`...)
		b = appendJSONValue(b, ev.Pid)
	}
	if ev.Stream != nil {
		b = append(b, `,"stream":`...)
		b = appendJSONString(b, text(ev.Stream))
	}
	if ev.Source != nil {
		b = append(b, `,"source":`...)
		b = appendJSONString(b, text(ev.Source))
	}
	if ev.Line != nil {
		b = appendJSONLine(append(b, `,"line":`...), ev.Line)
	}
	for _, e := range ev.Extra {
		k := text(e.Key)
		switch k {
		case "time", "service", "pid", "stream", "source", "line", "level", "message":
			k = "detail." + k
		}
		b = append(b, ',')
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONValue(b, e.Value)
	}
	return append(b, "}\n"...)
}

// appendJSONLine appends the JSON of a line: its text when it is a UTF-8
// string (one trailing newline dropped), its Preserves text otherwise.
func appendJSONLine(b []byte, line preserves.Value) []byte {
	if s, ok := line.(preserves.String); ok && utf8.ValidString(string(s)) {
		return appendJSONString(b, strings.TrimSuffix(string(s), "\n"))
	}
	return appendJSONString(b, preserves.FormatText(line))
}

func appendJSONValue(b []byte, v preserves.Value) []byte {
	switch x := v.(type) {
	case preserves.Int:
		return strconv.AppendInt(b, int64(x), 10)
	case preserves.Bool:
		return strconv.AppendBool(b, bool(x))
	case preserves.Double:
		if f := x.Float64(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	case preserves.String:
		if utf8.ValidString(string(x)) {
			return appendJSONString(b, string(x))
		}
	case preserves.Symbol:
		return appendJSONString(b, string(x))
	}
	return appendJSONString(b, preserves.FormatText(v))
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string (RFC 8259): quotes,
// backslashes and control characters escaped, invalid UTF-8 replaced by
// U+FFFD, everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look (the console's
		// JSON lines are mostly plain ASCII).
		for i+8 <= len(s) && jsonPlainWord(s[i:]) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlainWord reports whether the first eight bytes of s go into a JSON
// string as they are: ASCII from 0x20 up but for '"' and '\\'.
func jsonPlainWord(s string) bool {
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) &^ v }
	below := (w - 0x20*ones) &^ w // a byte below 0x20
	return (below|w|hasZero(w^'"'*ones)|hasZero(w^'\\'*ones))&highs == 0
}

// ParseFileLine reads back a line written by AppendFile for service: the
// time, `[PID]`, the stream and the rest as the line (any detail
// dictionary stays part of it). It reports false for a line that does not
// start with a timestamp.
func ParseFileLine(service preserves.Value, line string) (Event, bool) {
	ts, rest, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if !ok {
		return Event{}, false
	}
	t, err := time.Parse(FileTimeFormat, ts)
	if err != nil {
		return Event{}, false
	}
	ev := Event{Time: t, Service: service}
	if r, ok := strings.CutPrefix(rest, scriptMark); ok {
		ev.Source, rest = services.SourceScript, r
	}
	if strings.HasPrefix(rest, "[") {
		if i := strings.Index(rest, "] "); i > 0 {
			if n, err := strconv.ParseInt(rest[1:i], 10, 64); err == nil {
				ev.Pid = preserves.Int(n)
			} else {
				ev.Pid = preserves.Symbol(rest[1:i])
			}
			rest = rest[i+2:]
		}
	}
	for short, stream := range map[string]preserves.Symbol{"out: ": services.StreamStdout, "err: ": services.StreamStderr, serverMark + ": ": ""} {
		if strings.HasPrefix(rest, short) {
			if stream == "" && ev.Source == nil {
				ev.Source = services.SourceServer
			} else if stream != "" {
				ev.Stream = stream
			} else {
				break // a script's line naming the stream syndicate
			}
			rest = rest[len(short):]
			break
		}
	}
	ev.Line = preserves.String(rest)
	return ev, true
}
