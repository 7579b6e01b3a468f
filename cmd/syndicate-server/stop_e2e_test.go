//go:build e2e

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// trapDaemon declares daemon name, which writes its pid to dir/name.pid
// and, on SIGTERM, waits pause seconds, appends its name to dir/order and
// exits. deps are the daemons it waits for (ready).
func trapDaemon(dir, name, pause string, deps ...string) string {
	cmd := fmt.Sprintf("trap 'sleep %s; echo %s >> %s/order; exit 0' TERM; echo $$ > %s/%s.pid; while :; do sleep 0.02; done",
		pause, name, dir, dir, name)
	s := fmt.Sprintf("<require-service <daemon %s>>\n<daemon %s {argv: %q, readyOnStart: #t}>\n", name, name, cmd)
	for _, d := range deps {
		s += fmt.Sprintf("<depends-on <daemon %s> <service-state <daemon %s> ready>>\n", name, d)
	}
	return s
}

// TestE2EOrderedShutdown: on SIGTERM the server stops dependents before
// their dependees (web → app → db), though the dependents take longer to
// stop, and logs every stop with its duration.
func TestE2EOrderedShutdown(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "db.pr"), trapDaemon(dir, "db", "0"))
	writeFile(t, filepath.Join(cfg, "app.pr"), trapDaemon(dir, "app", "0.3", "db"))
	writeFile(t, filepath.Join(cfg, "web.pr"), trapDaemon(dir, "web", "0.2", "app"))
	r := start(t, "-c", cfg)
	for _, name := range []string{"db", "app", "web"} {
		waitPid(t, filepath.Join(dir, name+".pid"), name+" to start (its TERM trap set)")
	}
	require.Equal(t, 0, r.stop(t))
	order, err := os.ReadFile(filepath.Join(dir, "order"))
	require.NoError(t, err)
	require.Equal(t, "web\napp\ndb\n", string(order), "dependents stop first")
	logs := r.stderr.String()
	for _, name := range []string{"web", "app", "db"} {
		require.Regexp(t, `"service":"<daemon `+name+`>".*"took":"[0-9.]+(ms|s|µs)","sigkill":false.*"message":"process stopped"`, logs)
	}
	require.Contains(t, logs, `"waitedForDependents"`)
}

// TestE2EOutputWhileStoppingReachesTheLog: what a daemon prints after
// SIGTERM, including an unterminated last line, is logged when it is
// stopped by an edit of its spec, by its file's removal and by shutdown.
func TestE2EOutputWhileStoppingReachesTheLog(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	script := func(gen int) string {
		cmd := fmt.Sprintf("trap 'echo goodbye-%d; printf tail-%d; exit 0' TERM; echo $$ > %s/d.pid; while :; do sleep 0.02; done", gen, gen, dir)
		return fmt.Sprintf("<require-service <daemon d>>\n<daemon d {argv: %q, readyOnStart: #t}>\n", cmd)
	}
	file := filepath.Join(cfg, "d.pr")
	writeFile(t, file, script(1))
	r := start(t, "-c", cfg)
	// logged: a log line of the daemon's output (not the log of its
	// command line, which also holds the text).
	logged := func(text string) bool {
		for _, l := range strings.Split(r.stderr.String(), "\n") {
			if strings.Contains(l, "stdout") && strings.Contains(l, text) && !strings.Contains(l, `"command"`) {
				return true
			}
		}
		return false
	}
	waitPid(t, filepath.Join(dir, "d.pid"), "d to start")

	// An edit replaces the spec: the old process is stopped.
	require.NoError(t, os.Remove(filepath.Join(dir, "d.pid")))
	writeFile(t, file, script(2))
	eventually(t, 10*time.Second, "output of the process stopped by an edit", func() bool {
		return logged("goodbye-1") && logged("tail-1")
	})
	waitPid(t, filepath.Join(dir, "d.pid"), "d to start again")

	// Removing the file stops it too.
	require.NoError(t, os.Remove(file))
	eventually(t, 10*time.Second, "output of the process stopped by the file's removal", func() bool {
		return logged("goodbye-2") && logged("tail-2")
	})

	// And so does shutdown.
	require.NoError(t, os.Remove(filepath.Join(dir, "d.pid")))
	writeFile(t, file, script(3))
	waitPid(t, filepath.Join(dir, "d.pid"), "d to start a third time")
	require.Equal(t, 0, r.stop(t))
	require.True(t, logged("goodbye-3") && logged("tail-3"), "output of the process stopped by shutdown")
}

// TestE2EDryRunFailsOnCycle: --dry-run names a dependency cycle, shows
// each daemon's command, and exits 1 because the services would wait for
// ever.
func TestE2EDryRunFailsOnCycle(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cycle.pr"), `<require-service <daemon a>>
<daemon a "run-a">
<daemon b ["/usr/bin/b" "--flag"]>
<depends-on <daemon a> <service-state <daemon b> ready>>
<depends-on <daemon b> <service-state <daemon a> ready>>
`)
	cmd := exec.Command(serverBin, "--dry-run", "--no-banner", "--log-format", "json", "--admin-socket", "-", "-c", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.Equal(t, 1, exitCode(err), "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, out.String(), "dependency cycle: <daemon a> → <daemon b> → <daemon a>\n")
	require.Contains(t, out.String(), `      command: "sh" "-c" "run-a"`)
	require.Contains(t, out.String(), `      command: "/usr/bin/b" "--flag"`)
	require.Contains(t, out.String(), "dry run: 0 service(s) would fail, 2 would wait for ever\n")
}
