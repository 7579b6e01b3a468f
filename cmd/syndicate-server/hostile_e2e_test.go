//go:build e2e

package main

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 12: under file-descriptor exhaustion accept fails with EMFILE.
// The listener must wait it out and keep its port: once descriptors are
// free again, connections queued meanwhile and new ones are served.
func TestE2EAcceptSurvivesDescriptorExhaustion(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit not available")
	}
	port := freePort(t)
	r := start(t, "-p", strconv.Itoa(port))
	eventually(t, 10*time.Second, "the listener", func() bool { return strings.Contains(r.stderr.String(), `"message":"listening"`) })
	pid := strconv.Itoa(r.cmd.Process.Pid)
	require.NoError(t, exec.Command(prlimit, "--pid", pid, "--nofile=64:64").Run())

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 200 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err, "the port is refused while descriptors are exhausted")
		conns = append(conns, c)
	}
	eventually(t, 10*time.Second, "accept to hit EMFILE", func() bool {
		return strings.Contains(r.stderr.String(), "retrying with back-off")
	})
	// One of the queued connections, served once descriptors are free.
	queued := conns[len(conns)-1]
	conns = conns[:len(conns)-1]
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	defer queued.Close()
	begin := time.Now()
	for _, c := range []net.Conn{queued, dialOK(t, addr)} {
		defer c.Close()
		// Sync with the gatekeeper: the answer is a message to our oid 0.
		_, err := c.Write([]byte("[[0 <S #:[0 0]>]]\n"))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		require.NoError(t, err, "no answer %v after the descriptors were freed", time.Since(begin))
		require.Contains(t, string(buf[:n]), "<M #t>")
	}
	t.Logf("served %v after the descriptors were freed", time.Since(begin))
	require.NotContains(t, r.stderr.String(), `"level":"error"`)
	require.Equal(t, 0, r.stop(t))
}

func dialOK(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	return c
}
