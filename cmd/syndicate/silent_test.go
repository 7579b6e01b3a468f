package main

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// silentServer listens on a Unix socket, accepts connections and never
// answers: a server that is up but hung.
func silentServer(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(testutil.Accept(ln, nil))
	return path
}

// TestSilentServerTimesOut: every command that waits for the server's
// answer gives up after --timeout with one line naming the server and the
// time, and exits 1.
func TestSilentServerTimesOut(t *testing.T) {
	t.Parallel()
	path := silentServer(t)
	for _, args := range [][]string{
		{"dump"},
		{"status"},
		{"send", "<ping>"},
		{"restart", "<daemon web>"},
		{"analyze", "blame"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			code, _, errs := cliRun(t, append([]string{"--admin", path, "--timeout", "200ms"}, args...)...)
			require.Equal(t, 1, code, errs)
			require.Equal(t, "syndicate: no answer from admin socket "+path+" within 200ms\n", errs)
		})
	}
}
