package logger

import (
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
// lines and history the `<log …>` messages make; it is refused while a
// script or client observes `<log …>` in the log dataspace.
func TestDaemonOutputShortWay(t *testing.T) {
	for _, json := range []bool{false, true} {
		dir := t.TempDir()
		out := &testutil.Buffer{}
		o := Options{Console: out, JSON: json, Dir: dir}
		sk, err := NewSink(o, zerolog.Nop())
		require.NoError(t, err)
		o.Sink = sk
		h := bootLogger(t, o)
		t.Cleanup(sk.Close)
		web := preserves.Rec("daemon", preserves.Symbol("web"))
		at := time.Date(2026, 11, 29, 5, 6, 7, 123456789, time.Local)
		lines := []services.OutputLine{
			{Time: at, Pid: 42, Stream: services.StreamStdout, Text: "hello\n"},
			{Time: at, Pid: 42, Stream: services.StreamStderr, Text: "bad \xff\n"},
			{Time: at, Stream: services.StreamStdout, Text: "no pid"},
		}
		for _, l := range lines {
			h.send(daemonRecord(web, l))
		}
		testutil.WaitFor(t, "the messages logged", func() bool { return len(out.Lines()) == 3 })
		testutil.WaitFor(t, "the short way open", func() bool { d := sk.direct.Load(); return d != nil && !d.watched.Load() })
		require.True(t, sk.DaemonOutput(dataspace.NewAccount(), web, lines))
		testutil.WaitFor(t, "the short way logged", func() bool { return len(out.Lines()) == 6 })
		got := out.Lines()
		require.Equal(t, got[:3], got[3:], "console, json %v", json)

		s, stop := h.tail(web, 10, false)
		testutil.WaitFor(t, "history", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.msgs) == 7 })
		stop()
		s.mu.Lock()
		require.Equal(t, s.msgs[:3], s.msgs[3:6], "what `syndicate logs` receives")
		s.mu.Unlock()

		sk.Close()
		cur, _ := readDir(t, filepath.Join(dir, "daemon-web"))
		fileLines := strings.Split(strings.TrimSuffix(cur, "\n"), "\n")
		require.Len(t, fileLines, 6)
		require.Equal(t, fileLines[:3], fileLines[3:], "log directory")
	}
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
