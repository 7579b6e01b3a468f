package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/logger"
)

// logServer is a server with the logger (a short history, a log
// directory) behind the admin socket.
type logServer struct {
	fr         dataspace.FacetRef
	logds      *dataspace.Ref
	path, dir  string
	start      time.Time
	sent       int
	web, other preserves.Value
}

func newLogServer(t *testing.T) *logServer {
	s := &logServer{path: filepath.Join(t.TempDir(), "admin.sock"), dir: t.TempDir(),
		start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		web:   preserves.Rec("daemon", preserves.Symbol("web")), other: preserves.Rec("daemon", preserves.Symbol("other"))}
	sys := dataspace.NewSystem(dataspace.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.Shutdown(ctx))
	})
	booted := make(chan error, 1)
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		env := services.Env{Config: t.Create(dataspace.NewDataspace()), Log: t.Create(dataspace.NewDataspace()), Logger: zerolog.Nop()}
		s.fr, s.logds = t.FacetRef(), env.Log
		if err := logger.BootWith(t, env, logger.Options{History: 5, Dir: s.dir}); err != nil {
			return err
		}
		booted <- admin.Listen(t, env, s.path)
		return nil
	})
	require.NoError(t, <-booted)
	return s
}

// line sends one line of service, a second after the previous one.
func (s *logServer) line(service preserves.Value, text string) {
	s.sent++
	ts := s.start.Add(time.Duration(s.sent) * time.Second).Format(time.RFC3339Nano)
	s.fr.Activate(func(t *dataspace.Turn) error {
		t.Message(s.logds, preserves.Rec("log", preserves.String(ts), preserves.Dict(
			preserves.Symbol("service"), service, preserves.Symbol("pid"), preserves.Int(42),
			preserves.Symbol("stream"), preserves.Symbol("stdout"), preserves.Symbol("line"), preserves.String(text+"\n"))))
		return nil
	})
}

// waitFiled waits for line to be written to the log directory of
// <daemon name>.
func (s *logServer) waitFiled(t *testing.T, name, line string) {
	t.Helper()
	waitFor(t, "the log directory of "+name, func() bool {
		b, _ := os.ReadFile(filepath.Join(s.dir, "daemon-"+name, "current"))
		return strings.Contains(string(b), line+"\n")
	})
}

func TestLogsHistoryFilesAndFollow(t *testing.T) {
	s := newLogServer(t)
	for i := 1; i <= 10; i++ {
		s.line(s.web, fmt.Sprintf("web %d", i))
		s.line(s.other, fmt.Sprintf("other %d", i))
	}
	s.waitFiled(t, "web", "web 10")

	// 8 lines: 5 from the server's history, 3 older ones from the files.
	code, out, errs := cliRun(t, "--admin", s.path, "logs", "web", "-n", "8")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 8, out)
	for i, l := range lines {
		require.True(t, strings.HasSuffix(l, fmt.Sprintf(" <daemon web>[42] out: web %d", i+3)), "line %d: %q", i, l)
	}
	require.NotContains(t, out, "\x1b", "no colours off a terminal")

	// All services: the last lines of the history, in order.
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "-n", "2")
	require.Equal(t, 0, code)
	require.Regexp(t, `<daemon web>\[42\] out: web 10\n.*<daemon other>\[42\] out: other 10\n$`, out)
	// More than the history holds: the older ones from every service's
	// files, in time order, named by their directories.
	s.waitFiled(t, "other", "other 10")
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "-n", "13")
	require.Equal(t, 0, code)
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 13, out)
	// The history holds 5 lines per service (web 6-10, other 6-10);
	// the three before them come from the files: other 4, web 5, other 5.
	require.Contains(t, lines[0], " daemon-other[42] out: other 4")
	require.Contains(t, lines[1], " daemon-web[42] out: web 5")
	require.Contains(t, lines[2], " daemon-other[42] out: other 5")
	require.Contains(t, lines[3], " <daemon web>[42] out: web 6")

	// JSON.
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "--json", "-n", "1", "<daemon other>")
	require.Equal(t, 0, code)
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &ev), out)
	require.Equal(t, map[string]any{"time": "2026-01-02T03:04:25Z", "service": "<daemon other>", "pid": float64(42), "stream": "stdout", "line": "other 10"}, ev)

	// Follow: only new lines of that service.
	b := startCLI("--admin", s.path, "logs", "-f", "-n", "1", "web")
	waitFor(t, "the history", func() bool { return strings.Contains(b.out.String(), "web 10\n") })
	s.line(s.other, "other 11")
	s.line(s.web, "web 11")
	waitFor(t, "a followed line", func() bool { return strings.Contains(b.out.String(), "web 11\n") })
	require.Equal(t, 0, b.stop(t))
	require.NotContains(t, b.out.String(), "other")
	require.Equal(t, 2, strings.Count(b.out.String(), "\n"), b.out.String())
}

// Issue 26: --since takes a duration or a time; without -n it shows every
// line since then (from the server's history and the log directory),
// with -n the last n of them.
func TestLogsSince(t *testing.T) {
	s := newLogServer(t)
	for i := 1; i <= 10; i++ {
		s.line(s.web, fmt.Sprintf("web %d", i)) // at 03:04:05 + (2i-1) s
		s.line(s.other, fmt.Sprintf("other %d", i))
	}
	s.waitFiled(t, "web", "web 10")
	// web 3 is at 03:04:10: three lines from the files, five from the history.
	code, out, errs := cliRun(t, "--admin", s.path, "logs", "web", "--since", "2026-01-02T03:04:10Z")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 8, out)
	for i, l := range lines {
		require.True(t, strings.HasSuffix(l, fmt.Sprintf(" out: web %d", i+3)), "line %d: %q", i, l)
	}
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "web", "--since", "2026-01-02T03:04:10Z", "-n", "2")
	require.Equal(t, 0, code)
	require.Regexp(t, `out: web 9\n.*out: web 10\n$`, out)
	// Inside the history only: no file is read for older lines.
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "--since", "2026-01-02T03:04:24Z")
	require.Equal(t, 0, code)
	require.Regexp(t, `^[^\n]*out: web 10\n[^\n]*out: other 10\n$`, out)
	// Durations count back from now: the lines are older than a minute,
	// and younger than a hundred thousand hours.
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "web", "--since", "1m")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	code, out, _ = cliRun(t, "--admin", s.path, "logs", "web", "--since", "100000h")
	require.Equal(t, 0, code)
	require.Equal(t, 10, strings.Count(out, "\n"), out)
	code, _, errs = cliRun(t, "--admin", s.path, "logs", "--since", "last tuesday")
	require.Equal(t, 2, code)
	require.Contains(t, errs, `"last tuesday" is neither a duration`)
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"10m":                  now.Add(-10 * time.Minute),
		"-1h30m":               now.Add(-90 * time.Minute),
		"2d":                   now.Add(-48 * time.Hour),
		"1d12h":                now.Add(-36 * time.Hour),
		"today":                time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		"yesterday":            time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		"05:15":                time.Date(2026, 11, 29, 5, 15, 0, 0, time.UTC),
		"05:15:07":             time.Date(2026, 11, 29, 5, 15, 7, 0, time.UTC),
		"2026-11-01":           time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-01 12:00":     time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),
		"2026-11-01T12:00:00Z": time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),
	} {
		got, err := parseSince(in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: %v, want %v", in, got, want)
	}
	for _, bad := range []string{"", "d", "-5", "1x", "25:00", "2026-13-01"} {
		_, err := parseSince(bad, now)
		require.Error(t, err, bad)
	}
}

// A name that is neither running nor logged is an error, with or without
// -f (issue 26: `logs nosuch` printed nothing with status 0, and `logs -f
// nosuch` waited for ever).
func TestLogsUnknownServiceFails(t *testing.T) {
	s := newLogServer(t)
	code, out, errs := cliRun(t, "--admin", s.path, "logs", "nobody")
	require.Equal(t, 1, code, errs)
	require.Empty(t, out)
	require.Equal(t, "syndicate: no service matches nobody\n", errs)
	code, _, errs = cliRun(t, "--admin", s.path, "logs", "-f", "nobody")
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, "no service matches nobody")
	code, _, errs = cliRun(t, "--admin", s.path, "logs", "-n", "-1")
	require.Equal(t, 2, code, errs)
}

// Lines the log directory could not take show in the status.
func TestStatusShowsLogDrops(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, `<require-service <daemon web>>`)
	s.assert(t, `<run-service <daemon web>>`)
	s.assert(t, `<log-dropped <daemon web> 12 "no space left on device">`)
	code, out, errs := cliRun(t, "--admin", s.path, "status")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "12 log lines dropped (no space left on device)")
	code, out, _ = cliRun(t, "--admin", s.path, "status", "--json")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"logDropped":12`)
	require.Contains(t, out, `"logDropReason":"no space left on device"`)
}

// A server without the logger: an error, not a hang.
func TestLogsWithoutLogger(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	code, _, errs := cliRun(t, "--admin", s.path, "logs", "--timeout", "300ms")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "no answer to <log-tail …>")
}
