//go:build e2e

package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pidNamespaceWrapper returns the unshare command line that runs a program
// as PID 1 of a new PID namespace (with /proc remounted), or skips the test
// where that is not possible: no unshare, or no permission (unprivileged
// user namespaces disabled).
func pidNamespaceWrapper(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare(1) is not installed")
	}
	base := []string{"unshare", "--pid", "--fork", "--mount-proc"}
	for _, w := range [][]string{base, append([]string{"unshare", "--user", "--map-root-user"}, base[1:]...)} {
		probe := exec.Command(w[0], append(w[1:], "sh", "-c", "test $$ = 1")...)
		if probe.Run() == nil {
			return w
		}
	}
	t.Skip("cannot create a PID namespace here (unshare --pid failed, also with --user)")
	return nil
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(p); ok && st.ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

type stat struct {
	state byte
	ppid  int
}

func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return stat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return stat{state: f[0][0], ppid: ppid}, true
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

// TestE2EPID1 (issue 12): the server as PID 1 of a new PID namespace, with
// a hostile config and a hostile peer, stays up, reaps orphans, and shuts
// down cleanly on SIGTERM.
func TestE2EPID1(t *testing.T) {
	wrapper := pidNamespaceWrapper(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	sock := filepath.Join(dir, "relay.sock")
	// Hostile scripts: the issue's one-liner, values no pattern can hold,
	// and a daemon that leaves an orphan (its inner shell exits at once,
	// so `sleep 3` is re-parented to PID 1: the server).
	writeFile(t, filepath.Join(cfg, "hostile.pr"), `<q <resolve-path <route [#{1}]>>>
<q <resolve-path <route [<tcp "127.0.0.1" 1>] <ref {oid: #{1} sig: #""}>>>>
<require-service <milestone #{1}>>
<depends-on <milestone x> <service-state #{1} ready>>
<require-service <daemon #{2}>>
$log ! <log "-" {line: #{1} #{2}: [+inf.0 -inf.0]}>
`)
	writeFile(t, filepath.Join(cfg, "orphan.pr"), `<require-service <daemon orphan>>
<daemon orphan "sh -c 'sleep 3 &'; exec sleep 1000">
`)
	r := startWrapped(t, wrapper, "-c", cfg, "-s", sock)
	require.Contains(t, r.stderr.String(), `"message":"server running"`, "server did not start:\n%s", r.stderr.String())
	require.Contains(t, r.stderr.String(), `"pid":1,`, "the server is PID 1 of its namespace")

	// The server's pid outside the namespace: unshare's child.
	var server int
	eventually(t, 5*time.Second, "the server process", func() bool {
		cs := children(r.cmd.Process.Pid)
		if len(cs) == 1 {
			server = cs[0]
		}
		return server != 0
	})

	// A peer without credentials sends the issue's packet and is answered.
	sendIssuePacket(t, sock)

	// The orphan is adopted by the server, then reaped when it exits.
	var orphan int
	eventually(t, 10*time.Second, "the orphan adopted by the server", func() bool {
		for _, p := range children(server) {
			if cmdline(p) == "sleep 3" {
				orphan = p
				return true
			}
		}
		return false
	})
	eventually(t, 10*time.Second, "the orphan reaped", func() bool { return syscall.Kill(orphan, 0) != nil })
	for _, p := range children(server) {
		if st, ok := procStat(p); ok && st.state == 'Z' {
			t.Errorf("zombie child %d (%s) of the server", p, cmdline(p))
		}
	}

	// Still up, no built-in service crashed, and the answers came.
	require.True(t, alive(server), "the server is running")
	require.NotContains(t, r.stderr.String(), "top-level actor failed")
	for _, line := range strings.Split(r.stderr.String(), "\n") {
		if strings.Contains(line, "service worker failed") && strings.Contains(line, `"service":"<builtin `) {
			t.Errorf("a built-in service crashed: %s", line)
		}
	}
	require.Contains(t, r.stderr.String(), "resolve-path: route refused")

	// Every other catchable signal whose default would end or stop a
	// process is logged, and PID 1 goes on (issue 22); QUIT dumps the
	// goroutines into the log.
	for _, sig := range pid1Signals() {
		require.NoError(t, syscall.Kill(server, sig.(syscall.Signal)))
		want := fmt.Sprintf(`"signal":%q`, sig.String())
		eventually(t, 10*time.Second, "the server logging "+sig.String(), func() bool {
			return strings.Contains(r.stderr.String(), want)
		})
		require.True(t, alive(server), "the server survives %v", sig)
	}
	require.Contains(t, r.stderr.String(), `"goroutines":"goroutine `, "SIGQUIT dumps the goroutines into the log")
	require.Contains(t, r.stderr.String(), `runServer`, "the dump shows the server's own goroutines")

	// SIGTERM to PID 1: an orderly shutdown, exit status 0.
	begin := time.Now()
	require.NoError(t, syscall.Kill(server, syscall.SIGTERM))
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit within 20 s of SIGTERM")
	}
	require.Equal(t, 0, exitCode(r.err), "exit status:\n%s", r.stderr.String())
	require.Less(t, time.Since(begin), 15*time.Second)
	require.Contains(t, r.stderr.String(), `"message":"shutting down"`)
	require.Empty(t, children(server), "nothing of the namespace is left")
}

// sendIssuePacket sends issue 12's packet to the relay socket sock as a
// peer without credentials and waits for the gatekeeper's answer.
func sendIssuePacket(t *testing.T, sock string) {
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	_, err = io.WriteString(c, `[[0 <A <resolve <noise #{1}> #:[0 1]> 0>]]`)
	require.NoError(t, err)
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("<error invalid>")) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		require.NoError(t, err, "reading the gatekeeper's answer (got %q)", got)
	}
	c.Close()
}
