package logger

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

func mustParse(t *testing.T, s string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(s)
	require.NoError(t, err)
	return v
}

func event(t *testing.T, ts, detail string) Event {
	t.Helper()
	ev, ok := FromLog(mustParse(t, ts), mustParse(t, detail), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	require.True(t, ok)
	return ev
}

func TestJSONShape(t *testing.T) {
	ev := event(t, `"2025-01-02T03:04:05.678901+00:00"`,
		`{pid: 4321, service: <daemon web>, stream: stderr, line: "oops \"quoted\"\n", extra: 1, ok: #t, note: "x", tags: [a b], time: "clash"}`)
	var got map[string]any
	b := AppendJSON(nil, ev)
	require.True(t, strings.HasSuffix(string(b), "}\n"), "one object per line: %s", b)
	require.Equal(t, 1, strings.Count(string(b), "\n"))
	require.NoError(t, json.Unmarshal(b, &got), "%s", b)
	require.Equal(t, map[string]any{
		"time":        "2025-01-02T03:04:05.678901Z", // one timestamp, the server's (the record's)
		"service":     "<daemon web>",
		"pid":         float64(4321),
		"stream":      "stderr",
		"line":        `oops "quoted"`,
		"extra":       float64(1),
		"ok":          true,
		"note":        "x",
		"tags":        "[a b]",
		"detail.time": "clash",
	}, got)

	// Not UTF-8: Preserves text. No timestamp: now. Control characters
	// are JSON escapes.
	ev = event(t, `"-"`, `{line: #"\xff\x01"}`)
	got = nil
	require.NoError(t, json.Unmarshal(AppendJSON(nil, ev), &got))
	require.Equal(t, map[string]any{"time": "2030-01-01T00:00:00Z", "line": `#x"ff01"`}, got)
	ev = event(t, `"-"`, `{line: "a\u0001b\tc"}`)
	got = nil
	require.NoError(t, json.Unmarshal(AppendJSON(nil, ev), &got))
	require.Equal(t, "a\x01b\tc", got["line"])
	// A timestamp that is not RFC 3339 is kept as a detail.
	ev = event(t, `"yesterday"`, `{line: "x"}`)
	got = nil
	require.NoError(t, json.Unmarshal(AppendJSON(nil, ev), &got))
	require.Equal(t, "yesterday", got["timestamp"])
	require.Equal(t, "2030-01-01T00:00:00Z", got["time"])
}

func TestAppendJSONStringIsJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "\"\\", "\x00\x1f\x7f", "héllo ☃", "bad \xff utf8", "\u2028"} {
		var back string
		b := appendJSONString(nil, s)
		require.NoError(t, json.Unmarshal(b, &back), "%q → %s", s, b)
		require.Equal(t, strings.ToValidUTF8(s, "\ufffd"), back)
	}
}

// appendJSONString's eight-bytes-at-a-time scan escapes every byte that
// needs it at every position of a word, across words and in the tail, and
// leaves the others as they are.
func TestAppendJSONStringWordScan(t *testing.T) {
	const text = "plain ascii text, longer!"
	for n := 1; n <= len(text); n++ {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < n; pos++ {
				line := []byte(text[:n])
				line[pos] = byte(c)
				s := string(line)
				b := appendJSONString(nil, s)
				var back string
				require.NoError(t, json.Unmarshal(b, &back), "%q → %s", s, b)
				require.Equal(t, strings.ToValidUTF8(s, "\ufffd"), back)
				if c >= 0x20 && c < 0x80 && c != '"' && c != '\\' {
					require.Equal(t, `"`+s+`"`, string(b))
				}
			}
		}
	}
}

func TestConsoleShape(t *testing.T) {
	local := time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC)
	hhmm := local.Local().Format("15:04:05.000")
	ev := event(t, `"2025-01-02T03:04:05.678901+00:00"`, `{pid: 4321, service: <daemon web>, stream: stdout, line: "listening on :8080\n"}`)
	require.Equal(t, hhmm+" <daemon web>[4321] out: listening on :8080\n", string(AppendConsole(nil, ev, false)))

	// A script's message: no pid, no stream; other keys as a dictionary.
	ev = event(t, `"-"`, `{line: "hello", extra: 1}`)
	require.Equal(t, ev.Time.Local().Format("15:04:05.000")+" -: hello {extra: 1}\n", string(AppendConsole(nil, ev, false)))

	// Control characters and invalid UTF-8 are escaped, never printed raw.
	ev = event(t, `"-"`, `{service: x, line: "red \u001b[31m"}`)
	out := string(AppendConsole(nil, ev, false))
	require.NotContains(t, out, "\x1b")
	require.Contains(t, out, `x: "red \u001b[31m"`)

	// Colours only when asked for; the stderr stream is highlighted.
	ev = event(t, `"-"`, `{pid: 1, service: <daemon web>, stream: stderr, line: "oops"}`)
	require.NotContains(t, string(AppendConsole(nil, ev, false)), "\x1b")
	coloured := string(AppendConsole(nil, ev, true))
	require.Contains(t, coloured, colErr+"err"+colReset)
	require.Contains(t, coloured, colName+"<daemon web>[1]"+colReset)

	// The file form: full UTC time, no service, no colour.
	ev = event(t, `"2025-01-02T03:04:05.678901+00:00"`, `{pid: 4321, service: <daemon web>, stream: stderr, line: "oops\n"}`)
	require.Equal(t, "2025-01-02T03:04:05.678901000Z [4321] err: oops\n", string(AppendFile(nil, ev)))
	ev = event(t, `"2025-01-02T03:04:05+00:00"`, `{line: "hello", extra: 1}`)
	require.Equal(t, "2025-01-02T03:04:05.000000000Z hello {extra: 1}\n", string(AppendFile(nil, ev)))
}

func TestDirName(t *testing.T) {
	require.Equal(t, "daemon-web", DirName("<daemon web>"))
	require.Equal(t, "-", DirName("-"))
	a, b := DirName(`<daemon "a/b">`), DirName(`<daemon "a_b">`)
	require.NotEqual(t, a, b, "lossy names get a hash")
	require.NotContains(t, a, "/")
	require.True(t, strings.HasPrefix(a, "daemon-_a_b_@"), a)
	require.NotContains(t, DirName("<x ..>"), "..")
	require.NotEqual(t, DirName("<daemon web>"), DirName("<daemon web.>"), "a dropped dot is a loss too")
	require.NotEqual(t, DirName("<daemon web>"), DirName("<daemon .web>"))
}

// logHarness runs the logger in an actor of a test system.
type logHarness struct {
	t      testing.TB
	sys    *dataspace.System
	fr     dataspace.FacetRef
	env    services.Env
	server *testutil.Buffer
}

func bootLogger(t testing.TB, o Options) *logHarness {
	h := &logHarness{t: t, server: &testutil.Buffer{}}
	h.sys = dataspacetest.NewSystem(t, dataspace.Options{Logger: zerolog.New(h.server)})
	ready := make(chan struct{})
	h.sys.Spawn("logger", func(t *dataspace.Turn) error {
		h.env = services.Env{Config: t.Create(dataspace.NewDataspace()), Log: t.Create(dataspace.NewDataspace()), Logger: zerolog.New(h.server)}
		h.fr = t.FacetRef()
		t.PreventInertCheck()
		close(ready)
		return BootWith(t, h.env, o)
	})
	<-ready
	return h
}

// send sends `<log TS DETAIL>` messages in one turn.
func (h *logHarness) send(msgs ...preserves.Value) {
	h.fr.Activate(func(t *dataspace.Turn) error {
		for _, m := range msgs {
			t.Message(h.env.Log, m)
		}
		return nil
	})
}

func logMsg(service preserves.Value, line string) preserves.Value {
	d := preserves.NewDictionary(preserves.DictEntry{Key: services.LogKeyLine, Value: preserves.String(line)})
	if service != nil {
		d = preserves.NewDictionary(preserves.DictEntry{Key: services.LogKeyLine, Value: preserves.String(line)},
			preserves.DictEntry{Key: services.LogKeyService, Value: service})
	}
	return preserves.Rec("log", preserves.String("-"), d)
}

// Scenario 7 of services spec §13: a message to $log prints a line, now in
// the console form.
func TestScenario07LogMessagePrinted(t *testing.T) {
	out := &testutil.Buffer{}
	h := bootLogger(t, Options{Console: out})
	h.send(preserves.Rec("log", preserves.String("T"),
		preserves.Dict(preserves.Symbol("line"), preserves.String("hi"), preserves.Symbol("extra"), preserves.Int(1))))
	// The timestamp, not being RFC 3339, is kept as a detail.
	testutil.WaitFor(t, "line printed", func() bool { return out.Has(` -: hi {extra: 1, timestamp: "T"}`) })
}

func TestJSONConsoleAndLevelIndependence(t *testing.T) {
	out := &testutil.Buffer{}
	h := bootLogger(t, Options{Console: out, JSON: true})
	h.send(logMsg(preserves.Rec("daemon", preserves.Symbol("web")), "hello\n"))
	testutil.WaitFor(t, "json line", func() bool { return out.Has(`"line":"hello"`) })
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.Lines()[0]), &got))
	require.Equal(t, "<daemon web>", got["service"])
	require.Empty(t, h.server.String(), "service output is not a diagnostic")
}

// sink records what a `<log-tail …>` client receives.
type sink struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	msgs []preserves.Value
}

func (s *sink) Message(_ *dataspace.Turn, v preserves.Value) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, v)
	return nil
}

// texts lists the received lines and markers: "line" texts, "caught-up",
// "dropped N".
func (s *sink) texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		r := m.(*preserves.Record)
		switch r.Label {
		case services.LabelLog:
			ev, _ := FromLog(r.Fields[0], r.Fields[1], time.Time{})
			out = append(out, string(ev.Line.(preserves.String)))
		case syndicatego.LabelLogCaughtUp:
			out = append(out, "caught-up")
		case syndicatego.LabelLogDropped:
			out = append(out, fmt.Sprintf("dropped %d", r.Fields[0]))
		}
	}
	return out
}

func (h *logHarness) tail(service preserves.Value, n int, follow bool) (*sink, func()) {
	s := &sink{}
	var handle dataspace.Handle
	h.fr.Activate(func(t *dataspace.Turn) error {
		handle = t.Assert(h.env.Config, preserves.NewRecord(syndicatego.LabelLogTail, service, preserves.Int(n), preserves.Bool(follow), dataspace.Embed(t.Create(s))))
		return nil
	})
	return s, func() {
		h.fr.Activate(func(t *dataspace.Turn) error { t.Retract(handle); return nil })
	}
}

func TestTailHistoryAndFollow(t *testing.T) {
	h := bootLogger(t, Options{History: 3})
	web, db := preserves.Rec("daemon", preserves.Symbol("web")), preserves.Rec("daemon", preserves.Symbol("db"))
	h.send(logMsg(web, "w1"), logMsg(db, "d1"), logMsg(web, "w2"), logMsg(web, "w3"), logMsg(web, "w4"), logMsg(db, "d2"))

	// History only: the ring kept the last 3 of web.
	s, stop := h.tail(web, 10, false)
	testutil.WaitFor(t, "history", func() bool { return len(s.texts()) == 4 })
	require.Equal(t, []string{"w2", "w3", "w4", "caught-up"}, s.texts())
	stop()

	// All services: the last 2 of every service, in order of arrival
	// (issue 26: the chatty web does not hide db).
	s, stop = h.tail(preserves.Bool(false), 2, false)
	testutil.WaitFor(t, "all", func() bool { return len(s.texts()) == 5 })
	require.Equal(t, []string{"d1", "w3", "w4", "d2", "caught-up"}, s.texts())
	stop()

	// Follow: history, then new lines of that service only.
	s, stop = h.tail(db, 1, true)
	testutil.WaitFor(t, "caught up", func() bool { return len(s.texts()) == 2 })
	h.send(logMsg(web, "w5"), logMsg(db, "d3"))
	h.send(logMsg(db, "d4"))
	testutil.WaitFor(t, "followed", func() bool { return len(s.texts()) == 4 })
	require.Equal(t, []string{"d2", "caught-up", "d3", "d4"}, s.texts())
	stop()
	h.send(logMsg(db, "d5"))
	h.send(logMsg(db, "d6"))
	// After the retraction nothing more arrives: a follower that is still
	// registered would have received d5 before a new tail's history ends.
	s2, stop2 := h.tail(db, 0, false)
	testutil.WaitFor(t, "second tail", func() bool { return len(s2.texts()) == 1 })
	stop2()
	require.Equal(t, []string{"d2", "caught-up", "d3", "d4"}, s.texts())
}

// A follower that does not confirm (its syncs are never answered, as with
// a stalled client) gets a bounded queue and a count of what it missed.
func TestFollowerDropsCounted(t *testing.T) {
	h := bootLogger(t, Options{})
	// The client lives in an actor of its own, which we stall: it
	// answers no sync until released.
	s := &sink{}
	stall, stalled := make(chan struct{}), make(chan struct{})
	var client dataspace.FacetRef
	var sinkRef *dataspace.Ref
	h.sys.Spawn("client", func(t *dataspace.Turn) error {
		client = t.FacetRef()
		sinkRef = t.Create(s)
		t.PreventInertCheck()
		close(stalled)
		return nil
	})
	<-stalled
	var handle dataspace.Handle
	h.fr.Activate(func(t *dataspace.Turn) error {
		handle = t.Assert(h.env.Config, preserves.NewRecord(syndicatego.LabelLogTail, preserves.Bool(false), preserves.Int(0), preserves.Bool(true), dataspace.Embed(sinkRef)))
		return nil
	})
	defer h.fr.Activate(func(t *dataspace.Turn) error { t.Retract(handle); return nil })
	testutil.WaitFor(t, "caught up", func() bool { return len(s.texts()) == 1 })
	blocked := make(chan struct{})
	go client.Activate(func(*dataspace.Turn) error { close(blocked); <-stall; return nil })
	<-blocked
	total := followQueue + followBatch + 500
	for i := 0; i < total; i += 100 {
		var batch []preserves.Value
		for j := i; j < i+100 && j < total; j++ {
			batch = append(batch, logMsg(nil, fmt.Sprint(j)))
		}
		h.send(batch...)
	}
	close(stall)
	// Every line is either received or counted as dropped, and some were
	// dropped: the client could take at most one batch while stalled.
	var lines, dropped int
	testutil.WaitFor(t, "all accounted for", func() bool {
		lines, dropped = 0, 0
		for _, x := range s.texts()[1:] {
			var n int
			if _, err := fmt.Sscanf(x, "dropped %d", &n); err == nil {
				dropped += n
			} else {
				lines++
			}
		}
		return lines+dropped == total
	})
	require.Positive(t, dropped)
	require.LessOrEqual(t, lines, followQueue+2*followBatch)
}

func readDir(t *testing.T, dir string) (current string, rotated []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "current"))
	require.NoError(t, err)
	files, err := RotatedFiles(dir)
	require.NoError(t, err)
	for _, f := range files {
		c, err := os.ReadFile(f)
		require.NoError(t, err)
		rotated = append(rotated, string(c))
	}
	return string(b), rotated
}

func TestRotation(t *testing.T) {
	root := t.TempDir()
	w := newDirWriter(root, 100, 2, 1<<20, zerolog.Nop(), time.Now)
	var all []string
	for i := 0; i < 40; i++ {
		line := fmt.Sprintf("line %02d: %s\n", i, strings.Repeat("x", i%7))
		all = append(all, line)
		w.write(fileChunk{dir: "svc", data: []byte(line), lines: 1}, uint64(i))
	}
	// A chunk of several lines is split between files at line ends.
	chunk := "a 1234567890 1234567890 1234567890\nb 1234567890 1234567890 1234567890\nc 1234567890 1234567890 1234567890\n"
	w.write(fileChunk{dir: "svc", data: []byte(chunk), lines: 3}, 41)
	all = append(all, strings.SplitAfter(chunk, "\n")[:3]...)
	w.closeAll()

	cur, rotated := readDir(t, filepath.Join(root, "svc"))
	require.Len(t, rotated, 2, "count limit")
	joined := strings.Join(append(rotated, cur), "")
	require.True(t, strings.HasSuffix(strings.Join(all, ""), joined), "the newest lines, intact and in order:\n%s", joined)
	for _, f := range append(rotated, cur) {
		require.LessOrEqual(t, len(f), 100, "size limit")
		require.True(t, f == "" || strings.HasSuffix(f, "\n"), "files end at line ends")
	}

	// Append only: a new writer continues `current`.
	w = newDirWriter(root, 1000, 2, 1<<20, zerolog.Nop(), time.Now)
	w.write(fileChunk{dir: "svc", data: []byte("after restart\n"), lines: 1}, 1)
	w.closeAll()
	cur2, _ := readDir(t, filepath.Join(root, "svc"))
	require.Equal(t, cur+"after restart\n", cur2)
}

// A disk slower than the services: lines beyond the bounded queue are
// dropped, counted, and the count reaches the service's file, the server's
// log and <log-dropped …> in the config dataspace.
func TestLogDirDropsCounted(t *testing.T) {
	root := t.TempDir()
	gate := make(chan struct{})
	h := bootLogger(t, Options{Dir: root, FileQueue: 4096, fileGate: gate})
	web := preserves.Rec("daemon", preserves.Symbol("web"))
	const total = 200
	for i := 0; i < total; i++ {
		h.send(logMsg(web, fmt.Sprintf("line %d %s", i, strings.Repeat("y", 40))))
	}
	testutil.WaitFor(t, "drops reported", func() bool { return h.server.Has("dropping this service's lines") })
	var dropped int64
	h.fr.Activate(func(t *dataspace.Turn) error {
		t.During(h.env.Config, pattern.Rec(syndicatego.LabelLogDropped, pattern.Capture(), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			if preserves.Equal(caps[0], web) {
				dropped = int64(caps[1].(preserves.Int))
			}
			return nil
		})
		return nil
	})
	close(gate)
	// One more line after the disk has caught up ends the spell.
	lates := 0
	testutil.WaitFor(t, "queue drained", func() bool {
		lates++
		h.send(logMsg(web, "late"))
		return h.server.Has("log directory caught up")
	})
	dir := filepath.Join(root, "daemon-web")
	// Every line is written or counted (the last lates may still be on
	// their way to the disk).
	var cur string
	noted := 0
	testutil.WaitFor(t, "every line written or counted", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "current"))
		cur = string(b)
		kept := strings.Count(cur, " line ") + strings.Count(cur, " late\n")
		noted = 0
		for _, l := range strings.Split(cur, "\n") {
			if i := strings.Index(l, "{dropped: "); i >= 0 {
				var n int
				_, _ = fmt.Sscanf(l[i:], "{dropped: %d}", &n)
				noted += n
			}
		}
		return kept+noted == total+lates
	})
	require.Positive(t, noted)
	testutil.WaitFor(t, "count in the config dataspace", func() bool {
		var reported int64
		h.fr.Activate(func(*dataspace.Turn) error { reported = dropped; return nil })
		return reported == int64(noted)
	})
}

func TestParseFileLine(t *testing.T) {
	web := preserves.Rec("daemon", preserves.Symbol("web"))
	for _, detail := range []string{
		`{pid: 4321, service: <daemon web>, stream: stderr, line: "oops\n"}`,
		`{pid: 7, service: <daemon web>, stream: stdout, line: "out: not a stream"}`,
		`{service: <daemon web>, line: "hello"}`,
		`{pid: 7, service: <daemon web>, stream: stdout, source: daemon, line: "x"}`,
		`{pid: 7, service: <daemon web>, source: server, line: "spawned"}`,
		`{pid: 7, service: <daemon web>, stream: stdout, source: script, line: "forged"}`,
		`{service: <daemon web>, source: script, line: "syndicate: forged"}`,
	} {
		ev := event(t, `"2025-01-02T03:04:05.678901+00:00"`, detail)
		back, ok := ParseFileLine(web, string(AppendFile(nil, ev)))
		require.True(t, ok)
		require.Equal(t, string(AppendConsole(nil, ev, false)), string(AppendConsole(nil, back, false)), detail)
	}
	forged := event(t, `"-"`, `{pid: 7, service: <daemon web>, stream: stdout, source: script, line: "x"}`)
	require.Contains(t, string(AppendConsole(nil, forged, false)), " (script) <daemon web>[7] out: x\n")
	server := event(t, `"-"`, `{pid: 7, service: <daemon web>, source: server, line: "spawned"}`)
	require.Contains(t, string(AppendConsole(nil, server, false)), " <daemon web>[7] syndicate: spawned\n")
	require.Contains(t, string(AppendJSON(nil, server)), `"source":"server"`)
	_, ok := ParseFileLine(web, "not a log line")
	require.False(t, ok)
}

// A disk that is slow but makes room within the patience loses nothing:
// the logger waits for it (and so, through the account, do the daemons).
func TestLogDirWaitsForSlowDisk(t *testing.T) {
	root := t.TempDir()
	gate := make(chan struct{})
	h := bootLogger(t, Options{Dir: root, FileQueue: 4096, FilePatience: time.Hour, fileGate: gate})
	web := preserves.Rec("daemon", preserves.Symbol("web"))
	const total = 200
	go func() {
		for i := 0; i < total; i++ {
			h.send(logMsg(web, fmt.Sprintf("line %d %s", i, strings.Repeat("y", 40))))
		}
	}()
	testutil.WaitFor(t, "the logger to wait for the disk", func() bool { return filesWaiting.Load() > 0 })
	close(gate)
	cur := filepath.Join(root, "daemon-web", "current")
	testutil.WaitFor(t, "every line written", func() bool {
		b, _ := os.ReadFile(cur)
		return strings.Count(string(b), " line ") == total
	})
	b, _ := os.ReadFile(cur)
	require.NotContains(t, string(b), "dropped")
	require.False(t, h.server.Has("dropping"), h.server.String())
}

// The histories of all services together stay within totalHistoryBytes;
// the least recently heard services lose their oldest lines first.
func TestHistoryBoundedAcrossServices(t *testing.T) {
	l := &logger{o: Options{History: DefaultHistory}, svcs: map[string]*svcState{}}
	big := strings.Repeat("x", 80<<10) // three fit in one ring (historyBytes)
	for i := 0; i < 300; i++ {
		svc := preserves.Rec("daemon", preserves.Int(int64(i)))
		for j := 0; j < 3; j++ {
			l.seq++
			s := l.state(svc)
			s.used = l.seq
			l.remember(s, eventSlot(Event{Seq: l.seq, Service: svc, Line: preserves.String(big)}))
		}
	}
	sum := 0
	for _, s := range l.svcs {
		sum += s.ring.bytes
	}
	require.Equal(t, sum, l.histBytes)
	require.LessOrEqual(t, l.histBytes, totalHistoryBytes)
	require.Greater(t, l.histBytes, totalHistoryBytes/2, "not needlessly emptied")
	// The newest service kept its lines; the oldest lost theirs.
	require.Equal(t, 3, l.svcs[preserves.FormatText(preserves.Rec("daemon", preserves.Int(299)))].ring.n)
	if s, ok := l.svcs[preserves.FormatText(preserves.Rec("daemon", preserves.Int(0)))]; ok {
		require.Zero(t, s.ring.n)
	}
}

// A malformed <log-tail …> request (syndicatego.LogTail) is ignored: its
// sink hears nothing, while a good request made after it is answered.
func TestMalformedTailIgnored(t *testing.T) {
	h := bootLogger(t, Options{})
	web := preserves.Rec("daemon", preserves.Symbol("web"))
	h.send(logMsg(web, "w1"))
	bad := []*sink{{}, {}, {}}
	h.fr.Activate(func(t *dataspace.Turn) error {
		t.Assert(h.env.Config, preserves.NewRecord(syndicatego.LabelLogTail, web, preserves.Int(-1), preserves.Bool(false), dataspace.Embed(t.Create(bad[0]))))
		t.Assert(h.env.Config, preserves.NewRecord(syndicatego.LabelLogTail, web, preserves.Int(1), preserves.Symbol("yes"), dataspace.Embed(t.Create(bad[1]))))
		t.Assert(h.env.Config, preserves.NewRecord(syndicatego.LabelLogTail, web, preserves.Int(1), preserves.Bool(false), preserves.Symbol("sink")))
		t.Assert(h.env.Config, preserves.NewRecord(syndicatego.LabelLogTail, web, preserves.String("1"), preserves.Bool(false), dataspace.Embed(t.Create(bad[2]))))
		return nil
	})
	s, stop := h.tail(web, 1, false)
	defer stop()
	testutil.WaitFor(t, "the good request answered", func() bool { return len(s.texts()) == 2 })
	require.Equal(t, []string{"w1", "caught-up"}, s.texts())
	for i, b := range bad {
		require.Empty(t, b.texts(), "bad request %d", i)
	}
}

// A script's line sent before the logger listens (the config watcher ran
// its script first) waits in the forwarder of Env.LogListening and is
// printed once the logger has booted, instead of reaching a dataspace
// nobody observes yet.
func TestLinesSentBeforeTheLoggerListensArePrinted(t *testing.T) {
	out := &testutil.Buffer{}
	server := &testutil.Buffer{}
	sys := dataspacetest.NewSystem(t, dataspace.Options{Logger: zerolog.New(server)})
	envs := make(chan services.Env, 1)
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		env := services.Env{Config: t.Create(dataspace.NewDataspace()), Log: t.Create(dataspace.NewDataspace()), Logger: zerolog.New(server)}
		var early *dataspace.Ref
		early, env.LogListening = services.NewForwarder(t)
		t.Message(early, logMsg(nil, "sent before the logger"))
		envs <- env
		return nil
	})
	env := <-envs
	sys.Spawn("logger", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		return BootWith(t, env, Options{Console: out})
	})
	testutil.WaitFor(t, "the early line", func() bool { return out.Has("sent before the logger") })
}
