package cgroup_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup/cgrouptest"
)

// With CGROUP_TEST_HELPER=alloc the test binary is the daemon of
// TestMemoryMaxEnforced: once told to go (a line on stdin, sent after it
// joined its cgroups) it touches 256 MiB and says "survived".
func TestMain(m *testing.M) {
	if os.Getenv("CGROUP_TEST_HELPER") == "alloc" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		var keep [][]byte
		for range 256 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("survived", len(keep))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// start runs argv inside g: born in its v2 cgroup, attached to its v1 ones.
func start(t *testing.T, g *cgroup.Group, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.SysProcAttr(cmd.SysProcAttr)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.NoError(t, g.Attach(cmd.Process.Pid))
}

// The test: a grandchild that left the daemon's session and
// process group dies with the daemon all the same.
func TestKillTakesSetsidGrandchild(t *testing.T) {
	t.Parallel()
	m := cgrouptest.Open(t, "v2")
	g := cgrouptest.New(t, m, "setsid", cgroup.Limits{})
	cmd := exec.Command("sh", "-c", "setsid sleep 300 & exec sleep 300")
	start(t, g, cmd)

	var grandchild int
	testutil.WaitFor(t, "the setsid grandchild in the group", func() bool {
		for _, pid := range g.Procs() {
			if pid != cmd.Process.Pid {
				if sid, err := unix.Getsid(pid); err == nil && sid == pid {
					grandchild = pid
					return true
				}
			}
		}
		return false
	})
	pgid, err := unix.Getpgid(grandchild)
	require.NoError(t, err)
	require.NotEqual(t, cmd.Process.Pid, pgid, "the grandchild left the daemon's process group")

	require.NoError(t, g.Kill())
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	testutil.WaitFor(t, "the group to empty", func() bool { return !g.Populated() })
	testutil.WaitFor(t, "the grandchild to die", func() bool { return cgrouptest.Exited(grandchild) })
	require.NoError(t, g.Remove())
}

// Signal reaches every process of the group, whatever its session.
func TestSignalReachesTheGroup(t *testing.T) {
	t.Parallel()
	m := cgrouptest.Open(t, "v2")
	g := cgrouptest.New(t, m, "hup", cgroup.Limits{})
	out, err := os.CreateTemp(t.TempDir(), "hup")
	require.NoError(t, err)
	defer out.Close()
	cmd := exec.Command("sh", "-c", `trap "echo outer" HUP; setsid sh -c 'trap "echo hup; exit 0" HUP; echo up; while :; do sleep 0.01; done' & wait; wait`)
	cmd.Stdout = out
	start(t, g, cmd)
	testutil.WaitFor(t, "the grandchild to trap HUP", func() bool {
		b, _ := os.ReadFile(out.Name())
		return strings.Contains(string(b), "up")
	})
	require.NoError(t, g.Signal(syscall.SIGHUP, 0))
	testutil.WaitFor(t, "the grandchild to see SIGHUP", func() bool {
		b, _ := os.ReadFile(out.Name())
		return strings.Contains(string(b), "hup") && strings.Contains(string(b), "outer")
	})
	require.NoError(t, cmd.Wait())
}

// memoryMax is enforced: through v1 on these machines, v2 elsewhere. The
// OOM kill shows in Stats.
func TestMemoryMaxEnforced(t *testing.T) {
	t.Parallel()
	m := cgrouptest.Open(t, "memory")
	t.Logf("memory controller: %s", m.Where("memory"))
	g := cgrouptest.New(t, m, "alloc", cgroup.Limits{MemoryMax: 64 << 20})
	require.Empty(t, g.Unapplied())
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CGROUP_TEST_HELPER=alloc")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out strings.Builder
	cmd.Stdout = &out
	start(t, g, cmd)
	st := g.Stats()
	require.GreaterOrEqual(t, st.Tasks, int64(1))
	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	err = cmd.Wait()
	require.NotContains(t, out.String(), "survived")
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	require.GreaterOrEqual(t, g.Stats().OOMKills, int64(1))
}

// pidsMax is enforced: a shell that may have 4 tasks starts 3 sleeps, and
// the fork of the fourth fails.
func TestPidsMaxEnforced(t *testing.T) {
	t.Parallel()
	m := cgrouptest.Open(t, "pids")
	t.Logf("pids controller: %s", m.Where("pids"))
	g := cgrouptest.New(t, m, "forks", cgroup.Limits{PidsMax: 4})
	require.Empty(t, g.Unapplied())
	cmd := exec.Command("sh", "-c", `read go; for i in 1 2 3 4 5 6; do sleep 300 >/dev/null 2>&1 & echo started $i; done; wait`)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	start(t, g, cmd)
	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	require.Error(t, cmd.Wait(), "the shell cannot fork its fourth sleep")
	require.Equal(t, 3, strings.Count(out.String(), "started"), "stdout %q stderr %q", out.String(), errs.String())
	require.Contains(t, strings.ToLower(errs.String()), "fork")
	require.Equal(t, int64(3), g.Stats().Tasks, "the three sleeps are left")
	require.Len(t, g.Procs(), 3)
	for _, pid := range g.Procs() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		require.NoError(t, err)
		require.Equal(t, "sleep\n", string(b))
	}
}
