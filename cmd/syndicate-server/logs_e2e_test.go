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

// The server outlives its stderr: once the reader is gone, writes fail
// (EPIPE) instead of killing it with SIGPIPE, and daemons run on.
func TestE2EServerOutlivesClosedStderr(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	writeFile(t, filepath.Join(dir, "d.pr"), `<require-service <daemon d>>
<daemon d "echo $$ > `+pidFile+`; while :; do echo tick; sleep 0.05; done">
`)
	cmd := exec.Command(serverBin, "--no-banner", "--admin-socket", "-", "--log-format", "json", "-c", dir)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}()
	buf := make([]byte, 4096)
	_, err = stderr.Read(buf) // the server has started writing
	require.NoError(t, err)
	stderr.Close()
	go func() { done <- cmd.Wait() }()
	pid := waitPid(t, pidFile, "the daemon")
	// More output, more server lines (SIGHUP logs a rescan): all of it
	// goes nowhere, and the server stays.
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	first, _ := os.ReadFile(pidFile)
	eventually(t, 10*time.Second, "a second of ticks", func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("server exited: %v", err)
		default:
		}
		return alive(pid)
	})
	select {
	case err := <-done:
		done <- err
		t.Fatalf("server exited with a closed stderr: %v", err)
	case <-time.After(time.Second):
	}
	again, _ := os.ReadFile(pidFile)
	require.Equal(t, string(first), string(again), "the daemon was not restarted")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		done <- err
		require.Equal(t, 0, exitCode(err))
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

// While a script observes `$log`, daemon lines reach it as `<log …>`
// messages (issue 28: they take the short way to the log writers only
// while nobody but the logger looks), and they are still logged once.
func TestE2EScriptObservesDaemonLines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "watch.pr"), `$log ?? <log _ {service: <daemon d>, line: ?l}> [
  $log ! <log "-" {line: <seen $l>}>
]
<require-service <daemon d>>
<daemon d "while :; do echo tick; sleep 0.1; done">
`)
	r := start(t, "--log-format", "console", "-c", dir)
	eventually(t, 10*time.Second, "the script saw a daemon line", func() bool {
		return r.stderr.Has(`(script) -: <seen "tick\n">`)
	})
	for _, l := range r.stderr.Lines() {
		require.LessOrEqual(t, strings.Count(l, "tick"), 1, "one line per event: %s", l)
	}
	require.Equal(t, 0, r.stop(t))
}
