//go:build e2e

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildListenFDs builds the socket-activation test daemon.
func buildListenFDs(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "listenfds")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/listenfds").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// greet connects to addr and reads the daemon's greeting.
func greet(network, addr string) (string, error) {
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}

// echoServer is a server whose <daemon echo> (the listen-fds helper)
// listens on a TCP port and writes its pid to pidFile.
type echoServer struct {
	r                     *running
	client, sock, pidFile string
	port                  int
}

// startEcho starts an echoServer whose daemon declaration ends with extra
// (more keys of the spec).
func startEcho(t *testing.T, extra string) echoServer {
	helper, client := buildListenFDs(t), buildClient(t)
	dir := t.TempDir()
	e := echoServer{client: client, sock: filepath.Join(dir, "admin.sock"), pidFile: filepath.Join(dir, "pid"), port: freePort(t)}
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "echo.pr"), fmt.Sprintf(`<require-service <daemon echo>>
<daemon echo {argv: [%q %q], listen: [<tcp "127.0.0.1" %d>]%s}>
`, helper, e.pidFile, e.port, extra))
	e.r = start(t, "-c", cfg, "--admin-socket", e.sock)
	return e
}

// start: on-demand. The daemon is ready while no process runs; a client
// that connects before the process exists is served by it (the daemon
// checks LISTEN_PID as sd_listen_fds does); the status shows the socket
// and whether the process was started.
func TestE2ESocketOnDemand(t *testing.T) {
	t.Parallel()
	e := startEcho(t, ", start: on-demand")
	r, client, sock, port, pidFile := e.r, e.client, e.sock, e.port, e.pidFile
	eventually(t, 20*time.Second, "echo ready, not started", func() bool {
		st := statusOf(t, client, sock, "<daemon echo>")
		return st != nil && fmt.Sprint(st["states"]) == "[started ready]" &&
			strings.Contains(fmt.Sprint(st["sockets"]), "not started")
	})
	require.False(t, fileExists(pidFile), "started before the first connection")

	line, err := greet("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	pid := readPid(t, pidFile)
	require.Equal(t, fmt.Sprintf("hello from %d echo\n", pid), line)
	eventually(t, 10*time.Second, "the status to say started", func() bool {
		return strings.Contains(fmt.Sprint(statusOf(t, client, sock, "<daemon echo>")["sockets"]), "listening, started")
	})
	out, err := exec.Command(client, "--admin", sock, "status").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), fmt.Sprintf("127.0.0.1:%d: listening, started", port))
	require.Equal(t, 0, r.stop(t))
}

// Across restarts: a daemon that exits after each connection is restarted
// by the server, which holds its socket meanwhile, so every one of a
// series of connections is served; none is refused.
func TestE2ESocketHeldAcrossRestarts(t *testing.T) {
	t.Parallel()
	helper := buildListenFDs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "echo.sock")
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "echo.pr"), fmt.Sprintf(`<require-service <daemon echo>>
<daemon echo {argv: [%q %q "once"], listen: [<unix %q>]}>
`, helper, filepath.Join(dir, "pid"), path))
	r := start(t, "-c", cfg)
	eventually(t, 20*time.Second, "the socket", func() bool { return fileExists(path) })
	pids := map[string]bool{}
	for i := 0; i < 8; i++ {
		line, err := greet("unix", path)
		require.NoError(t, err, "connection %d", i)
		require.True(t, strings.HasPrefix(line, "hello from "), line)
		pids[line] = true
	}
	require.Greater(t, len(pids), 4, "the daemon was restarted between connections")
	require.Equal(t, 0, r.stop(t))
	require.False(t, fileExists(path), "the socket file is removed on stop")
}

// A Unix socket path held by a live listener is an error (the daemon
// fails, saying why), never unlinked.
func TestE2ESocketPathInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "busy.sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "busy.pr"), fmt.Sprintf(`<require-service <daemon busy>>
<daemon busy {argv: "sleep 100", listen: [<unix %q>]}>
`, path))
	r := start(t, "-c", cfg)
	eventually(t, 20*time.Second, "the bind error", func() bool {
		return strings.Contains(r.stderr.String(), "has a live listener")
	})
	_, err = os.Stat(path)
	require.NoError(t, err, "the live listener's socket was unlinked")
	c, err := net.Dial("unix", path)
	require.NoError(t, err, "the live listener was disturbed")
	c.Close()
	require.Equal(t, 0, r.stop(t))
}

// Issue 27: the sockets are held by the server for the life of the
// declaration, not of the worker, so every connection made while
// `syndicate restart` restarts the daemon is accepted and served: none
// is refused or reset.
func TestE2ESocketConnectionsDuringRestartService(t *testing.T) {
	t.Parallel()
	e := startEcho(t, "")
	r, client, sock, port, pidFile := e.r, e.client, e.sock, e.port, e.pidFile
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, 20*time.Second, "the first process", func() bool { return fileExists(pidFile) })

	stop := make(chan struct{})
	type result struct {
		served int
		errs   []error
		pids   map[string]bool
	}
	done := make(chan result)
	go func() {
		res := result{pids: map[string]bool{}}
		for {
			select {
			case <-stop:
				done <- res
				return
			default:
			}
			line, err := greet("tcp", addr)
			if err != nil {
				res.errs = append(res.errs, err)
				continue
			}
			res.served++
			res.pids[strings.Fields(line)[2]] = true
		}
	}()
	for i := 0; i < 3; i++ {
		var before int
		eventually(t, 20*time.Second, "the process's pid", func() bool {
			pid, ok := tryReadPid(pidFile)
			before = pid
			return ok
		})
		out, err := exec.Command(client, "--admin", sock, "restart", "echo").CombinedOutput()
		require.NoError(t, err, "%s", out)
		eventually(t, 20*time.Second, "a new process", func() bool {
			pid, ok := tryReadPid(pidFile)
			return ok && pid != before
		})
	}
	close(stop)
	res := <-done
	if len(res.errs) > 0 {
		t.Fatalf("%d of %d connections refused or reset during restart-service; the first: %v",
			len(res.errs), len(res.errs)+res.served, res.errs[0])
	}
	require.Greater(t, len(res.pids), 1, "served by several processes")
	t.Logf("%d connections served by %d processes across 3 restarts", res.served, len(res.pids))
	require.Equal(t, 0, r.stop(t))
}
