package logger

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// daemonRecord is the `<log …>` message the daemon service sends for l
// when it does not take the short way (services/daemon's logRecord).
func daemonRecord(service preserves.Value, l services.OutputLine) preserves.Value {
	return preserves.NewRecord(services.LabelLog, preserves.String(l.Time.UTC().Format(time.RFC3339Nano)), preserves.NewDictionary(
		preserves.DictEntry{Key: services.LogKeyLine, Value: l.LineValue()},
		preserves.DictEntry{Key: services.LogKeyPid, Value: l.PidValue()},
		preserves.DictEntry{Key: services.LogKeyService, Value: service},
		preserves.DictEntry{Key: services.LogKeySource, Value: services.SourceDaemon},
		preserves.DictEntry{Key: services.LogKeyStream, Value: l.Stream},
	))
}

// Daemon output taking the short way makes the very console lines, file
// lines and history the `<log …>` messages make, and followers receive
// the same; it is refused while a script or client observes `<log …>` in
// the log dataspace. The lines cover what the short way formats once per
// run (a change of pid, stream or time within a read) and per line (plain
// text, text with escapes, text that is not UTF-8, no newline).
func TestDaemonOutputShortWay(t *testing.T) {
	for _, c := range []struct{ json, color bool }{{false, false}, {true, false}, {false, true}} {
		dir := t.TempDir()
		out := &testutil.Buffer{}
		o := Options{Console: out, JSON: c.json, Color: c.color, Dir: dir}
		sk, err := NewSink(o, zerolog.Nop())
		require.NoError(t, err)
		o.Sink = sk
		h := bootLogger(t, o)
		t.Cleanup(sk.Close)
		web := preserves.Rec("daemon", preserves.Symbol("web"))
		at := time.Date(2026, 11, 29, 5, 6, 7, 123456789, time.Local)
		later := at.Add(1500 * time.Microsecond)
		lines := []services.OutputLine{
			{Time: at, Pid: 42, Stream: services.StreamStdout, Text: "hello\n"},
			{Time: at, Pid: 42, Stream: services.StreamStdout, Text: "\ttabbed \"quoted\" \\ ünïcode\n"},
			{Time: at, Pid: 42, Stream: services.StreamStderr, Text: "bad \xff\n"},
			{Time: at, Pid: 42, Stream: services.StreamStderr, Text: "\x1b[31mred\x1b[0m\n"},
			{Time: at, Pid: 43, Stream: services.StreamStderr, Text: "\n"},
			{Time: later, Pid: 43, Stream: services.StreamStderr, Text: "later\n"},
			{Time: later, Pid: 43, Stream: services.StreamStdout, Text: "out again\n"},
			{Time: later, Stream: services.StreamStdout, Text: "no pid"},
		}
		n := len(lines)
		follow, stopFollow := h.tail(web, 0, true)
		for _, l := range lines {
			h.send(daemonRecord(web, l))
		}
		testutil.WaitFor(t, "the messages logged", func() bool { return len(out.Lines()) == n })
		testutil.WaitFor(t, "the short way open", func() bool { d := sk.direct.Load(); return d != nil && !d.watched.Load() })
		require.True(t, sk.DaemonOutput(dataspace.NewAccount(), web, lines))
		testutil.WaitFor(t, "the short way logged", func() bool { return len(out.Lines()) == 2*n })
		got := out.Lines()
		require.Equal(t, got[:n], got[n:], "console %+v", c)

		s, stop := h.tail(web, 2*n, false)
		testutil.WaitFor(t, "history", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.msgs) == 2*n+1 })
		stop()
		s.mu.Lock()
		require.Equal(t, s.msgs[:n], s.msgs[n:2*n], "what `syndicate logs` receives")
		s.mu.Unlock()
		testutil.WaitFor(t, "followed", func() bool { follow.mu.Lock(); defer follow.mu.Unlock(); return len(follow.msgs) == 2*n+1 })
		stopFollow()
		follow.mu.Lock()
		require.Equal(t, follow.msgs[1:n+1], follow.msgs[n+1:], "what `syndicate logs -f` receives")
		follow.mu.Unlock()

		sk.Close()
		cur, _ := readDir(t, filepath.Join(dir, "daemon-web"))
		fileLines := strings.Split(strings.TrimSuffix(cur, "\n"), "\n")
		require.Len(t, fileLines, 2*n)
		require.Equal(t, fileLines[:n], fileLines[n:], "log directory")
	}
}

// The history's bounds hold for lines taking the short way as for
// messages: the newest lines within the line count and historyBytes,
// counting a byte string line as evSize does.
func TestDaemonOutputHistoryBounds(t *testing.T) {
	sk, err := NewSink(Options{}, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(sk.Close)
	h := bootLogger(t, Options{Sink: sk, History: 5})
	testutil.WaitFor(t, "the short way open", func() bool { d := sk.direct.Load(); return d != nil && !d.watched.Load() })
	web := preserves.Rec("daemon", preserves.Symbol("web"))
	big := strings.Repeat("x", 130<<10) + "\n" // two do not fit in historyBytes
	var lines []services.OutputLine
	for i, text := range []string{"a\n", "b\xff\n", big, "c\n", big, "d\xff\n", "e\n", big} {
		lines = append(lines, services.OutputLine{Time: time.Now(), Pid: 7, Stream: services.StreamStdout, Text: fmt.Sprint(i) + text})
	}
	require.True(t, sk.DaemonOutput(dataspace.NewAccount(), web, lines))
	s, stop := h.tail(web, 100, false)
	defer stop()
	testutil.WaitFor(t, "history", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.msgs) > 0 })
	// Five lines at most; of those, the newest within historyBytes:
	// 7big, 6e, 5d (a byte string: 128), 4big would pass 256 kB.
	s.mu.Lock()
	defer s.mu.Unlock()
	var got []string
	for _, m := range s.msgs {
		if r := m.(*preserves.Record); r.Label == services.LabelLog {
			ev, _ := FromLog(r.Fields[0], r.Fields[1], time.Time{})
			switch l := ev.Line.(type) {
			case preserves.String:
				got = append(got, string(l))
			case preserves.ByteString:
				got = append(got, "bytes "+string(l))
			}
		}
	}
	require.Len(t, got, 3, "lines kept")
	require.Equal(t, []string{"bytes 5d\xff\n", "6e\n"}, got[:2])
	require.Equal(t, "7"+big, got[2])
}

// The short way closes while anything observes what may be a `<log …>`
// record in the log dataspace, and opens again when it is gone.
func TestDaemonOutputRefusedWhileWatched(t *testing.T) {
	sk, err := NewSink(Options{}, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(sk.Close)
	h := bootLogger(t, Options{Sink: sk})
	open := func() bool { d := sk.direct.Load(); return d != nil && !d.watched.Load() }
	testutil.WaitFor(t, "open", open)
	// Observing something else leaves it open: were this counted, it
	// would not open again below.
	h.fr.Activate(func(t *dataspace.Turn) error {
		t.OnMessage(h.env.Log, pattern.Rec(preserves.Symbol("other"), pattern.Capture()), func(*dataspace.Turn, []preserves.Value) error { return nil })
		return nil
	})
	for _, p := range []pattern.Pattern{
		pattern.Rec(services.LabelLog, pattern.Discard{}, pattern.Capture()),
		pattern.Capture(),
		pattern.Discard{},
	} {
		var handle dataspace.Handle
		h.fr.Activate(func(t *dataspace.Turn) error {
			handle = t.OnMessage(h.env.Log, p, func(*dataspace.Turn, []preserves.Value) error { return nil })
			return nil
		})
		testutil.WaitFor(t, "closed", func() bool { return !open() })
		require.False(t, sk.DaemonOutput(dataspace.NewAccount(), preserves.Symbol("x"), nil))
		h.fr.Activate(func(t *dataspace.Turn) error { t.Retract(handle); return nil })
		testutil.WaitFor(t, "open again", open)
	}
}
