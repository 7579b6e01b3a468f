package admin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// decoy is a socket listening in dir that records whether anyone
// connected; as root the directory is handed to another user, as a
// foreign user's fallback directory would be.
func decoy(tb testing.TB, dir string) (path string, connected func() bool) {
	tb.Helper()
	path = filepath.Join(dir, "admin.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(tb, err)
	tb.Cleanup(func() { ln.Close() })
	return path, func() bool {
		require.NoError(tb, ln.SetDeadline(time.Now()))
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			return true
		}
		return false
	}
}

const nobody = 65534

// Hostile case (issue 12): the client used to talk to whatever listened at
// the $TMPDIR/syndicate-UID fallback even when another user owned the
// directory. Now it refuses before connecting.
func TestDialRefusesForeignDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "syndicate-x")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path, connected := decoy(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(dir, nobody, nobody))
		_, err = Dial(ctx, path)
	} else {
		_, err = dial(ctx, path, os.Getuid()+1) // we are the stranger
	}
	require.ErrorIs(t, err, ErrUnsafeDir)
	require.False(t, connected(), "the client connected before refusing")

	_, err = Dial(ctx, filepath.Join(t.TempDir(), "file", "admin.sock"))
	require.Error(t, err)
}

// The directory may be the user's and the server still another's (a
// socket left for us by someone else's process): the listener's peer
// credentials decide.
func TestDialRefusesForeignServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := filepath.Join(t.TempDir(), "syndicate-x")
	require.NoError(t, os.Mkdir(dir, 0o700))
	path, _ := decoy(t, dir) // listening as root
	require.NoError(t, os.Chown(dir, nobody, nobody))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := dial(ctx, path, nobody) // the client of user nobody
	require.ErrorIs(t, err, ErrForeignServer)
	require.Contains(t, err.Error(), "served by uid 0")
}

// The server's own socket passes both checks.
func TestDialOwnServer(t *testing.T) {
	h := newHost(t)
	path := filepath.Join(t.TempDir(), "admin.sock")
	_, err := h.listen(t, path, Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, path)
	require.NoError(t, err)
	c.Close()
}
