//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

const chattyDaemon = `<require-service <daemon d>>
<daemon d <one-shot "echo hello; echo 'oops <x>' >&2">>
`

// Service output is not a diagnostic: --log-level warn hides the server's
// info lines but not what daemons print, and in JSON each line is an
// object of its own fields with one timestamp.
func TestE2EServiceOutputIgnoresLevel(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d.pr"), chattyDaemon)
	r := start(t, "--log-level", "warn", "-c", dir)
	eventually(t, 10*time.Second, "daemon output", func() bool {
		return r.stderr.Has(`"service":"<daemon d>"`, `"stream":"stdout"`, `"line":"hello"`) &&
			r.stderr.Has(`"stream":"stderr"`, `"line":"oops <x>"`)
	})
	require.False(t, r.stderr.Has(`"message":"process exited"`), "info diagnostics are filtered")
	for _, l := range r.stderr.Lines() {
		if strings.Contains(l, `"line":`) {
			require.Equal(t, 1, strings.Count(l, `"time":`), "one timestamp: %s", l)
			require.NotContains(t, l, `"message"`, l)
		}
	}
	require.Equal(t, 0, r.stop(t))
}

// A forced console format into a file: readable lines, no escapes, no
// colours.
func TestE2EConsoleFormatIntoFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d.pr"), chattyDaemon)
	stderr := &testutil.Buffer{}
	cmd := exec.Command(serverBin, "--no-banner", "--admin-socket", "-", "--log-format", "console", "-c", dir)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	eventually(t, 10*time.Second, "console lines", func() bool {
		return stderr.Has("<daemon d>[", "] out: hello") && stderr.Has("] err: oops <x>")
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
	require.NotContains(t, stderr.String(), "\x1b[", "no colours off a terminal")
	require.NotContains(t, stderr.String(), `"hello\n"`, "no quoting of plain text")
}

// --log-dir keeps each service's lines; --service-output=false keeps them
// off the console.
func TestE2ELogDir(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "d.pr"), chattyDaemon)
	r := start(t, "--service-output=false", "--log-dir", logs, "-c", dir)
	current := filepath.Join(logs, "daemon-d", "current")
	eventually(t, 10*time.Second, "the log file", func() bool {
		b, _ := os.ReadFile(current)
		return strings.Contains(string(b), "] out: hello\n") && strings.Contains(string(b), "] err: oops <x>\n")
	})
	require.Equal(t, 0, r.stop(t))
	require.False(t, r.stderr.Has(`"line":"hello"`), "service output off the console")
}
