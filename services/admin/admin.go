// Package admin is the server's admin endpoint: a Unix socket, created at
// start-up, that speaks the Syndicate relay protocol with the config
// dataspace as its initial reference (oid 0). The `syndicate` command talks
// to a running server through it (status, dump, observe, assert, send,
// restart).
//
// # Who may connect
//
// The endpoint hands out the config dataspace without attenuation, which is
// as powerful as editing the configuration, so only the server's own user may
// use it. Two independent barriers enforce that:
//
//   - the socket file is mode 0600 inside a directory created 0700 when
//     missing, and it is never visible at its final path with a wider mode:
//     it is bound under a temporary name in a fresh private directory next to
//     the path, chmod-ed, then renamed into place;
//   - every accepted connection's peer credentials (SO_PEERCRED) are read and
//     a peer whose uid differs from the server's is sent a protocol
//     `<error "admin: permission denied" …>` packet and disconnected, so a
//     root-owned or mis-permissioned directory still cannot leak the
//     capability.
//
// Clients use Dial, which checks the same two things from the other side
// (dial.go): the directory belongs to the user or root, and the listening
// process to the user.
//
// # Socket path
//
// DefaultPath is admin.sock in the server's run-time directory
// (services.RuntimeDir): `$XDG_RUNTIME_DIR/syndicate/admin.sock` when
// XDG_RUNTIME_DIR is set, else `/run/syndicate/admin.sock` for root, else
// `$TMPDIR/syndicate-UID/admin.sock` (os.TempDir; the directory is created
// 0700 and must be owned by the user). Client and server compute the same
// default, and both accept an explicit path.
//
// An existing file at the path is probed: a socket refusing connections is
// stale (left by a server that died) and is replaced; a live one means
// another server runs, and Listen fails with ErrInUse. The socket file is
// removed again when the endpoint stops, so "no such file" afterwards means
// "server not running".
package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Options tunes Listen. The zero value is the production behaviour.
type Options struct {
	// UID is the only peer uid accepted; nil means the server's own
	// (os.Getuid). Tests set another uid to exercise the refusal.
	UID *int
}

// DefaultRule says in words where DefaultPath puts the socket (for help
// texts, which must not depend on who reads them).
var DefaultRule = services.RuntimePathRule("admin.sock")

// DefaultPath returns the admin socket path described in the package doc.
func DefaultPath() string { return filepath.Join(services.RuntimeDir(), "admin.sock") }

// Listen binds the admin socket at path and serves it from a new child facet
// of the active facet: each accepted connection of the server's user runs a
// relay (in an actor of its own) exporting env.Config as oid 0. Binding
// happens before Listen returns, so its errors (ErrInUse, ErrUnsafeDir,
// permissions) reach the caller; stopping the facet closes the listener and
// removes the socket file.
func Listen(t *dataspace.Turn, env services.Env, path string) error {
	return ListenWith(t, env, path, Options{})
}

// ListenWith is Listen with options.
func ListenWith(t *dataspace.Turn, env services.Env, path string, opts Options) error {
	uid := os.Getuid()
	if opts.UID != nil {
		uid = *opts.UID
	}
	log := env.Logger.With().Str("service", "admin").Str("path", path).Logger()
	ln, err := bind(path, log)
	if err != nil {
		return err
	}
	ino := inode(path)
	_, err = t.Facet(func(t *dataspace.Turn) error {
		fr := t.FacetRef()
		t.OnStop(func(*dataspace.Turn) error {
			ln.Close()
			// Remove the file only if it is still ours: a successor server
			// may already have replaced it.
			if ino != 0 && inode(path) == ino {
				os.Remove(path)
			}
			return nil
		})
		t.LinkedTask("admin-accept", func(ctx context.Context) error {
			admit := func(c net.Conn) bool {
				uc := c.(*net.UnixConn)
				cred, err := services.PeerCred(uc)
				if err != nil || int(cred.Uid) != uid {
					refuse(uc, cred, err, log)
					return false
				}
				return true
			}
			err := services.AcceptLoop(ctx, ln, fr, log, admit, func(t *dataspace.Turn, c net.Conn) {
				serve(t, c.(*net.UnixConn), env, log)
			})
			if err != nil {
				// Losing the admin socket must not take the server
				// down: log it and stop only this facet.
				log.Error().Err(err).Msg("admin socket accept failed")
			}
			return nil
		})
		return nil
	})
	if err != nil {
		ln.Close()
		return err
	}
	log.Info().Msg("admin socket listening")
	return nil
}

// serve runs the relay for one accepted connection in its own actor, so a
// misbehaving client never disturbs the host facet.
func serve(t *dataspace.Turn, c *net.UnixConn, env services.Env, log zerolog.Logger) {
	pid := int32(-1)
	cred, err := services.PeerCred(c)
	if err == nil {
		pid = cred.Pid
	}
	name := fmt.Sprintf("<admin %d>", pid)
	clog := log.With().Int32("pid", pid).Logger()
	t.Spawn(name, func(t *dataspace.Turn) error {
		cfg := t.Create(newOriginProxy(env.Config, cred)) // origin.go
		services.RunRelay(t, c, relay.Options{InitialRef: cfg, Logger: clog}, clog.Debug, "admin client disconnected")
		clog.Debug().Msg("admin client connected")
		return nil
	})
}

// ErrPermission: a peer of another user tried to connect (the peer sees
// it as a protocol error packet with this message).
var ErrPermission = errors.New("admin: permission denied")

// refuse tells a foreign peer why it is being disconnected, in the protocol
// (`<error MESSAGE DETAIL>`), and closes the connection.
func refuse(c *net.UnixConn, cred *unix.Ucred, err error, log zerolog.Logger) {
	detail := "peer credentials unavailable"
	if err == nil {
		detail = fmt.Sprintf("uid %d is not the server's user", cred.Uid)
	}
	log.Warn().Str("reason", detail).Msg("admin connection refused")
	pkt, perr := relay.AppendPacket(nil, preserves.Rec("error", preserves.String(ErrPermission.Error()), preserves.String(detail)), relay.Binary)
	if perr == nil {
		_, _ = c.Write(pkt)
	}
	_ = c.CloseWrite()
	// Read (and drop) what the peer sends for a moment before closing:
	// closing with unread input would reset the connection, and the peer
	// could see a broken pipe instead of the reason.
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
		c.Close()
	}()
}

// ErrInUse: a live server already listens on the admin socket path, or
// the path exists and is not a socket.
var ErrInUse = errors.New("admin: socket in use")

// bind creates the socket file as described in the package doc.
func bind(path string, log zerolog.Logger) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := checkDir(dir, os.Getuid()); err != nil {
		return nil, err
	}
	ln, replaced, err := transport.ListenUnix(path)
	if errors.Is(err, transport.ErrAddrInUse) {
		return nil, fmt.Errorf("%w: %w", ErrInUse, err)
	}
	if replaced {
		log.Info().Msg("replaced a stale admin socket")
	}
	return ln, err
}

func inode(path string) uint64 {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
