package main

// The rows of issue 26's table, each a test that failed before.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/cmdline/cmdlinetest"
	"github.com/syndicate-go/syndicate/services/admin/status"
)

// A bare word names `<daemon word>`: `status app` showed an empty table
// and `no service matches app`; `restart db` said db was not running.
func TestBareNamesInEveryCommand(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<require-service <daemon app>>")
	s.assert(t, "<run-service <daemon app>>")
	s.assert(t, "<service-state <daemon app> ready>")
	s.assert(t, "<run-service <daemon db>>")

	code, out, errs := cliRun(t, "--admin", s.path, "status", "app")
	require.Equal(t, 0, code, errs)
	require.True(t, strings.HasPrefix(out, "<daemon app>\n  wanted:"), out)

	code, _, errs = cliRun(t, "--admin", s.path, "restart", "db")
	require.Equal(t, 0, code, errs)
	waitFor(t, "the restart", func() bool { return len(s.messages()) == 1 })
	require.Equal(t, []string{"<restart-service <daemon db>>"}, s.messages())
	// Sent before it by the admin endpoint: who asked (the lifecycle log
	// says "restart requested by …").
	require.Len(t, s.origins(), 1)
	require.Regexp(t, `^<request-origin <restart-service <daemon db>> "uid \d+, pid \d+ \(.*\), over the admin socket">$`, s.origins()[0])

	// Unknown names fail with a suggestion, in every command.
	for _, args := range [][]string{{"status", "ap"}, {"restart", "ap"}} {
		code, out, errs := cliRun(t, append([]string{"--admin", s.path}, args...)...)
		require.Equal(t, 1, code, "%v", args)
		require.Empty(t, out, "%v", args)
		require.Equal(t, "syndicate: no service matches ap (did you mean app?)\n", errs, "%v", args)
	}
	// A word two services carry is ambiguous.
	s.assert(t, "<run-service <milestone app>>")
	code, _, errs = cliRun(t, "--admin", s.path, "restart", "app")
	require.Equal(t, 1, code)
	require.Equal(t, "syndicate: app names 2 services: <daemon app>, <milestone app>; write the one you mean\n", errs)
}

// `status` on a 100-column terminal: built-ins hidden unless --all, a
// long name cut in the middle, no row wider than the terminal, and the
// last exit not repeated in REASON.
func TestStatusFitsTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "100")
	s := newTestServer(t, admin.Options{})
	for _, b := range []string{"gatekeeper", "daemons", "logger"} {
		s.assert(t, "<run-service <builtin "+b+">>")
		s.assert(t, "<service-state <builtin "+b+"> ready>")
	}
	long := `<config-watcher "/etc/syndicate/a/very/long/path/that/goes/on/and/on/services.d" {config: #t}>`
	s.assert(t, "<run-service "+long+">")
	s.assert(t, "<service-state "+long+" ready>")
	s.assert(t, "<require-service <daemon web>>")
	s.assert(t, "<run-service <daemon web>>")
	s.assert(t, "<service-state <daemon web> failed>")
	s.assert(t, `<service-info <daemon web> {restarts: 3, recent: 3, exit: "exit status: 1", exit-at: "2026-01-01T00:00:00Z", phase: gave-up, reason: ["restart limit reached (3 restarts within 1m0s); last exit: exit status: 1 and a great deal more text that would run far past the edge of any terminal"]}>`)

	var out string
	waitFor(t, "the services", func() bool {
		_, out, _ = cliRun(t, "--admin", s.path, "status")
		return strings.Contains(out, "<daemon web>") && strings.Contains(out, "<config-wat")
	})
	require.NotContains(t, out, "<builtin")
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(l), 100, "%q", l)
		if strings.HasPrefix(l, "<config-wat") {
			name := strings.SplitN(l, "  ", 2)[0]
			require.Regexp(t, `^<config-wat.*….*#t}>$`, name, "cut in the middle, both ends kept")
		}
	}
	require.Equal(t, 1, strings.Count(out, "exit status: 1"), "the last exit once: %s", out)
	require.Contains(t, out, "  ↳ last exit: exit status: 1", "under its row, with the reason")
	_, all, _ := cliRun(t, "--admin", s.path, "status", "--all")
	require.Equal(t, 3, strings.Count(all, "<builtin "), all)
}

// RESTARTS: recent ≤ total, in the table and in JSON (issue 26: `1 (2
// recent)`, `"restarts": 3, "recentRestarts": 4`).
func TestRestartCountersAreConsistent(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon crash>>")
	s.assert(t, `<service-info <daemon crash> {restarts: 1}>`)
	s.assert(t, `<service-info <daemon crash> {recent: 2}>`)
	var svcs []status.Service
	waitFor(t, "both infos", func() bool {
		_, js, _ := cliRun(t, "--admin", s.path, "status", "--json")
		svcs = nil
		return json.Unmarshal([]byte(js), &svcs) == nil && len(svcs) == 1 && svcs[0].Restarts == 1
	})
	require.Equal(t, 1, svcs[0].Recent)
	_, out, _ := cliRun(t, "--admin", s.path, "status")
	require.Contains(t, out, "1 (1 recent)")
}

// --watch on a terminal redraws in place, and keeps FOR counting between
// changes (issue 26: it appended a new table on every change, and FOR
// stood still).
func TestStatusWatchRedrawsInPlace(t *testing.T) {
	t.Parallel()
	master, tty := cmdlinetest.OpenPTY(t)
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon web>>")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var errb testutil.Buffer
		done <- runCtx(ctx, []string{"--admin", s.path, "status", "--watch"}, strings.NewReader(""), tty, &errb)
	}()
	var seen testutil.Buffer
	go func() { _, _ = io.Copy(&seen, master) }()
	waitFor(t, "two redraws without a change", func() bool {
		return strings.Count(seen.String(), "\x1b[H\x1b[2J") >= 2
	})
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("status --watch did not stop")
	}
	require.NotContains(t, seen.String(), "--- ", "no appended headers on a terminal")
	_ = os.Stdout
}

// observe prints `-` only for what the server retracted, not for what
// the session drops when it ends (issue 26: `- …started` and `- …ready`
// at exit).
func TestObserveNoRetractionsAtExit(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<service-state <daemon db> started>")
	s.assert(t, "<service-state <daemon db> ready>")
	obs := startCLI("--admin", s.path, "observe", "<service-state <daemon db> ?>")
	waitFor(t, "both states", func() bool { return strings.Count(obs.out.String(), "+ ") == 2 })
	require.Equal(t, 0, obs.stop(t))
	require.NotContains(t, obs.out.String(), "- ")
}
