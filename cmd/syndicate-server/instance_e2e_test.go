//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// Issue 22: one server per configuration. 20 servers started at once on
// one config: one runs, every other refuses naming its pid, and the
// one-shot ran once.
func TestE2ERacingStartsRunOnce(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeFile(t, filepath.Join(dir, "cfg", "once.pr"), `<require-service <daemon once>>
<daemon once <one-shot "echo $$ >> `+runs+`">>
`)
	type srv struct {
		cmd    *exec.Cmd
		stderr *testutil.Buffer
		err    error
	}
	var all []*srv
	var wg sync.WaitGroup
	exited := make(chan *srv, 20)
	for range 20 {
		s := &srv{stderr: &testutil.Buffer{}}
		s.cmd = exec.Command(serverBin, "--no-banner", "--log-format", "json", "--admin-socket", "-", "-c", filepath.Join(dir, "cfg"))
		s.cmd.Stderr = s.stderr
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		all = append(all, s)
	}
	for _, s := range all {
		require.NoError(t, s.cmd.Start())
		wg.Go(func() {
			s.err = s.cmd.Wait()
			exited <- s
		})
	}
	t.Cleanup(func() {
		for _, s := range all {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		wg.Wait()
	})
	gone := map[*srv]bool{}
	for deadline := time.After(15 * time.Second); len(gone) < 19; {
		select {
		case s := <-exited:
			require.Equal(t, 1, exitCode(s.err), "a refused server exits 1:\n%s", s.stderr.String())
			require.Regexp(t, `another server \(pid \d+\) already runs on config `, s.stderr.String())
			gone[s] = true
		case <-deadline:
			t.Fatalf("%d servers run on one config", 20-len(gone))
		}
	}
	var winner *srv
	for _, s := range all {
		if !gone[s] {
			winner = s
		}
	}
	eventually(t, 10*time.Second, "the one-shot", func() bool { return fileExists(runs) })
	require.NoError(t, winner.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, winner, <-exited)
	require.NoError(t, winner.err)
	b, _ := os.ReadFile(runs)
	require.Len(t, strings.Fields(string(b)), 1, "the one-shot ran once: %q", b)
	for _, s := range all {
		if s != winner {
			require.Contains(t, s.stderr.String(), "pid "+strconv.Itoa(winner.cmd.Process.Pid)+")", "the refusal names the running server")
		}
	}
}

// A lock left by a killed server is taken over; --dry-run and --check
// run beside a live server; a second server on the same admin socket
// refuses.
func TestE2EStaleLockTakenOver(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg")
	writeFile(t, filepath.Join(cfg, "a.pr"), `<require-service <milestone m>>
`)
	first := start(t, "-c", cfg)
	out, err := exec.Command(serverBin, "--no-banner", "--dry-run", "--admin-socket", "-", "-c", cfg).CombinedOutput()
	require.NoError(t, err, "--dry-run beside a live server:\n%s", out)
	out, err = exec.Command(serverBin, "--check", "-c", cfg).CombinedOutput()
	require.NoError(t, err, "--check beside a live server:\n%s", out)
	sock := filepath.Join(dir, "admin.sock")
	other := start(t, "--admin-socket", sock)
	second := exec.Command(serverBin, "--no-banner", "--log-format", "json", "--admin-socket", sock)
	out, err = second.CombinedOutput()
	require.Equal(t, 1, exitCode(err), "%s", out)
	require.Contains(t, string(out), "already runs on admin socket "+sock)
	require.Equal(t, 0, other.stop(t))

	require.NoError(t, syscall.Kill(first.cmd.Process.Pid, syscall.SIGKILL))
	<-first.done
	again := start(t, "-c", cfg)
	require.True(t, again.stderr.Has(`took over the lock of a server that is gone`, `"deadServer":`+strconv.Itoa(first.cmd.Process.Pid)), again.stderr.String())
	require.Equal(t, 0, again.stop(t))
	locks, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "syndicate", "*.lock"))
	for _, l := range locks {
		b, _ := os.ReadFile(l)
		require.NotContains(t, string(b), cfg, "the lock is removed at exit")
	}
}
