//go:build e2e

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// operatorConfig: app depends on db (ready); idle is declared, nothing
// requires it. Each writes its pid to dir/NAME.pid and its TERM (and
// app its HUP) to dir/order.
func operatorConfig(dir string) string {
	daemon := func(name, extra string) string {
		cmd := fmt.Sprintf("trap 'echo %s-term >> %s/order; exit 0' TERM; %s echo $$ > %s/%s.pid; while :; do sleep 0.02; done",
			name, dir, extra, dir, name)
		return fmt.Sprintf("<daemon %s {argv: %q, readyOnStart: #t}>\n", name, cmd)
	}
	return "<require-service <daemon app>>\n<depends-on <daemon app> <service-state <daemon db> ready>>\n" +
		daemon("db", "") + daemon("app", "trap 'echo app-hup >> "+dir+"/order' HUP;") + daemon("idle", "")
}

// TestE2EOperatorStopStartKill: issue 24 item 5 as an operator meets it.
// stop stops the dependents first and returns once the processes are
// gone; the stop is the server's (it outlasts the client and, with
// --state-dir, a restart) and shows in status; start brings both back;
// kill signals; status --all lists the declared daemon nobody requires,
// and start runs it.
func TestE2EOperatorStopStartKill(t *testing.T) {
	client := buildClient(t)
	dir := t.TempDir()
	sock, state, cfg := filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state"), filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "ops.pr"), operatorConfig(dir))
	cli := func(args ...string) (int, string) {
		out, err := exec.Command(client, append([]string{"--admin", sock}, args...)...).CombinedOutput()
		return exitCode(err), string(out)
	}
	order := func() string { b, _ := os.ReadFile(filepath.Join(dir, "order")); return string(b) }
	r := start(t, "-c", cfg, "--admin-socket", sock, "--state-dir", state)
	dbPid := waitPid(t, filepath.Join(dir, "db.pid"), "db to start")
	appPid := waitPid(t, filepath.Join(dir, "app.pid"), "app to start")

	// kill: the signal reaches the daemon.
	code, out := cli("kill", "-s", "HUP", "app")
	require.Equal(t, 0, code, out)
	eventually(t, 10*time.Second, "app to see SIGHUP", func() bool { return strings.Contains(order(), "app-hup") })
	code, out = cli("kill", "nosuch")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "nosuch")

	// stop: dependents first; when it returns, the processes are gone.
	code, out = cli("stop", "db")
	require.Equal(t, 0, code, out)
	require.Equal(t, "app-hup\napp-term\ndb-term\n", order())
	require.False(t, alive(dbPid))
	require.False(t, alive(appPid))
	db := statusOf(t, client, sock, "<daemon db>")
	require.Equal(t, "stopped", db["phase"])
	require.Contains(t, fmt.Sprint(db["reasons"]), "stopped by the operator at ")
	require.Empty(t, db["processes"])

	// The stop outlives the client and the server (--state-dir).
	require.Equal(t, 0, r.stop(t))
	require.NoError(t, os.Remove(filepath.Join(dir, "db.pid")))
	require.NoError(t, os.Remove(filepath.Join(dir, "app.pid")))
	r = start(t, "-c", cfg, "--admin-socket", sock, "--state-dir", state)
	eventually(t, 10*time.Second, "db reported stopped after the restart", func() bool {
		s := statusOf(t, client, sock, "<daemon db>")
		return s != nil && s["phase"] == "stopped"
	})
	app := statusOf(t, client, sock, "<daemon app>")
	require.Contains(t, fmt.Sprint(app["reasons"]), "waiting for <daemon db> ready")
	require.False(t, fileExists(filepath.Join(dir, "db.pid")), "a stopped daemon does not start after a restart")

	// start: db and its dependent come back.
	code, out = cli("start", "db")
	require.Equal(t, 0, code, out)
	waitPid(t, filepath.Join(dir, "db.pid"), "db to start again")
	waitPid(t, filepath.Join(dir, "app.pid"), "app to come back")

	// status --all: the declared daemon nothing requires; start runs it.
	code, out = cli("status")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "idle")
	code, out = cli("status", "--all")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `<daemon idle>\s+-\s+inactive`, out)
	code, out = cli("start", "idle")
	require.Equal(t, 0, code, out)
	idlePid := waitPid(t, filepath.Join(dir, "idle.pid"), "idle to start")
	code, out = cli("start", "nosuch")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "nosuch")
	code, out = cli("stop", "idle")
	require.Equal(t, 0, code, out)
	require.False(t, alive(idlePid))
	require.Equal(t, 0, r.stop(t))
}
