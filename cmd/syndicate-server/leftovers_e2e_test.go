//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 22 item 5: a server killed with SIGKILL leaves its daemon running
// (here with a setsid grandchild); the next server on the same config
// finds it in the dead server's record, stops it and its cgroup before it
// starts anything, and says so in its log and in the daemon's log stream.
// Whatever happens, the harness (start's cleanup, reapKilled) stops what
// the killed server left.
func TestE2EKilledServerLeftoversStopped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg")
	pidFile, gcFile := filepath.Join(dir, "pid"), filepath.Join(dir, "grandchild")
	writeFile(t, filepath.Join(cfg, "web.pr"), `<require-service <daemon web>>
<daemon web {argv: "setsid sh -c 'echo $$ > `+gcFile+`; exec sleep 1000' & echo $$ > `+pidFile+`; exec sleep 1000", stopTimeout: 2}>
`)
	first := start(t, "-c", cfg)
	old := waitPid(t, pidFile, "the first daemon")
	gc := waitPid(t, gcFile, "its setsid grandchild")
	oldCgroup, _ := os.ReadFile("/proc/" + strconv.Itoa(old) + "/cgroup")
	require.NoError(t, syscall.Kill(first.cmd.Process.Pid, syscall.SIGKILL))
	<-first.done
	require.True(t, alive(old), "the daemon outlives its killed server (the case at hand)")
	os.Remove(pidFile)

	again := start(t, "-c", cfg)
	newPid := waitPid(t, pidFile, "the second server's daemon")
	require.NotEqual(t, old, newPid)
	eventually(t, 10*time.Second, "the old daemon and its grandchild to be gone", func() bool { return !alive(old) && !alive(gc) })
	dead := `"deadServer":` + strconv.Itoa(first.cmd.Process.Pid)
	require.True(t, again.stderr.Has("a daemon left running by a dead server", dead, `"pid":`+strconv.Itoa(old), "stopped with SIGTERM"), again.stderr.String())
	eventually(t, 10*time.Second, "the leftover in the daemon's log stream", func() bool {
		return again.stderr.Has("left running by a dead server (pid " + strconv.Itoa(first.cmd.Process.Pid) + ") was found at start-up: pid " + strconv.Itoa(old))
	})
	// The old run's cgroup directories are gone.
	for _, l := range strings.Split(strings.TrimSpace(string(oldCgroup)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && strings.Contains(parts[2], "/daemon-web+") {
			matches, _ := filepath.Glob("/sys/fs/cgroup/*" + parts[2])
			matches2, _ := filepath.Glob("/sys/fs/cgroup" + parts[2])
			require.Empty(t, append(matches, matches2...), "the old run's cgroup %s is removed", parts[2])
		}
	}
	require.Equal(t, 0, again.stop(t))
	require.False(t, alive(newPid))
}
