//go:build e2e

package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin/status"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup/cgrouptest"
)

// Issue 24: `syndicate status NAME` and `status --json` show a running
// daemon's memory and task count, read from its cgroup by the real
// server (a shell and two sleeps: three tasks at least).
func TestE2EStatusShowsDaemonFigures(t *testing.T) {
	t.Parallel()
	cgrouptest.Open(t, "v2") // the server's daemons get cgroups here (fails under CI=true without)
	client := buildClient(t)
	dir := t.TempDir()
	sock, cfg, pid := filepath.Join(dir, "admin.sock"), filepath.Join(dir, "cfg"), filepath.Join(dir, "pid")
	writeFile(t, filepath.Join(cfg, "busy.pr"), `<require-service <daemon busy>>
<daemon busy "x=$(seq 100000); sleep 300 & sleep 300 & echo $$ > `+pid+`; wait">
`)
	r := start(t, "-c", cfg, "--admin-socket", sock)
	waitPid(t, pid, "the daemon")
	var one status.Service
	// The shell holds a few hundred kB of its own (the output of seq)
	// before it starts the sleeps: a group holding only a shell and two
	// sleeps read 0 bytes of memory about one run in eight.
	eventually(t, 10*time.Second, "three tasks and some memory in status --json", func() bool {
		out, err := exec.Command(client, "--admin", sock, "status", "--json", "<daemon busy>").Output()
		var arr []status.Service
		if err != nil || json.Unmarshal(out, &arr) != nil || len(arr) != 1 || len(arr[0].Processes) != 1 {
			return false
		}
		one = arr[0]
		p := one.Processes[0]
		return p.Tasks != nil && *p.Tasks >= 3 && p.Memory != nil && *p.Memory > 0
	})
	if m := one.Processes[0].Memory; m == nil || *m <= 0 {
		t.Errorf("no memory figure: %+v", one.Processes[0])
	}
	out, err := exec.Command(client, "--admin", sock, "status", "<daemon busy>").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^  memory: +[0-9.]+ [KMG]?i?B$`, string(out))
	require.Regexp(t, `(?m)^  tasks: +[3-9]$`, string(out))
	require.Equal(t, 0, r.stop(t))
}
