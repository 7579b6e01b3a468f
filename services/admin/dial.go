package admin

// The client side of the admin socket applies the server's two barriers in
// reverse: what a command asserts through the socket (a require-service, a
// restart) is as powerful for whoever listens there as it would be for the
// real server, so the client talks only to a server of its own user. It
// refuses a socket whose directory belongs to anyone but the user (or
// root), before connecting, and a listener whose peer credentials
// (SO_PEERCRED, taken when it called listen) are another user's, before
// sending a byte.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/syndicate-go/syndicate/services"
)

// ErrForeignServer: the process listening on the admin socket runs as
// another user.
var ErrForeignServer = errors.New("admin: server runs as another user")

// Dial connects to the admin socket at path after the checks in the
// package doc; the error wraps ErrUnsafeDir or ErrForeignServer when one
// fails.
func Dial(ctx context.Context, path string) (*net.UnixConn, error) {
	return dial(ctx, path, os.Getuid())
}

// dial is Dial for a client of the given uid (tests pretend to be another
// user).
func dial(ctx context.Context, path string, uid int) (*net.UnixConn, error) {
	if err := checkDir(filepath.Dir(path), uid); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uc := c.(*net.UnixConn)
	cred, err := services.PeerCred(uc)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("%w: reading the peer credentials of %s: %v", ErrForeignServer, path, err)
	}
	if int(cred.Uid) != uid {
		uc.Close()
		return nil, fmt.Errorf("%w: %s is served by uid %d (pid %d), not %d", ErrForeignServer, path, cred.Uid, cred.Pid, uid)
	}
	return uc, nil
}

// PeerPID returns the pid of the process at the other end of a Unix
// socket connection (SO_PEERCRED): a client reads the server's memory
// through it (syndicate bench).
func PeerPID(c *net.UnixConn) (int, error) {
	cred, err := services.PeerCred(c)
	if err != nil {
		return 0, err
	}
	return int(cred.Pid), nil
}

// ErrUnsafeDir: the socket's directory is not a directory owned by the
// server's user.
var ErrUnsafeDir = errors.New("admin: unsafe socket directory")

// checkDir fails with ErrUnsafeDir unless dir, the socket's directory, is
// a directory owned by uid or root.
func checkDir(dir string, uid int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("%w: %s belongs to uid %d, not %d", ErrUnsafeDir, dir, st.Uid, uid)
	}
	return nil
}
