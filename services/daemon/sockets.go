package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
)

// Socket activation (docs/services.md, "Sockets"), the systemd protocol of
// sd_listen_fds(3): the server binds the spec's `listen` addresses when
// the daemon is required and holds them for as long as the declaration
// stands (sockets_hold.go), across restarts of its process and of the
// daemon, so no connection is refused while the process is down:
// connections wait in the backlog. Each process gets
// them as fds 3… with LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID. With
// `start: on-demand` the process starts only when a connection is
// pending (and again after an exit, at the next one), and the spec counts
// as ready as soon as its sockets listen.
//
// LISTEN_PID must be the daemon's own pid, which is known only after the
// fork: LISTEN_FDS in the spec's environment makes the daemon start
// through the exec helper (exec.go), which sets LISTEN_PID to its own pid
// and execs the daemon, keeping the pid.

// sockets are the listeners bound for one spec. Only the spec's runner
// goroutine uses them.
type sockets struct {
	addrs []transport.Address
	lns   []net.Listener
	files []*os.File // dups of the listeners, passed to each process
	names string     // LISTEN_FDNAMES
}

// bindSockets binds every address of s. A Unix socket path held by a live
// listener is an error (transport.ListenUnix), never unlinked; its file
// gets the daemon's user and group and mode 0666 (systemd's SocketMode
// default). name names every fd in LISTEN_FDNAMES.
func bindSockets(s *Spec, name string) (*sockets, error) {
	b := &sockets{}
	var names []string
	for _, a := range s.Listen {
		ln, err := a.Listen(nil)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("listen %s: %w", a, err)
		}
		b.addrs, b.lns = append(b.addrs, a), append(b.lns, ln)
		if a.Network == transport.Unix {
			if err := ownSocket(a.Path, s); err != nil {
				b.close()
				return nil, fmt.Errorf("listen %s: %w", a, err)
			}
		}
		f, err := ln.(interface{ File() (*os.File, error) }).File()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("listen %s: %w", a, err)
		}
		b.files = append(b.files, f)
		names = append(names, name)
	}
	b.names = strings.Join(names, ":")
	return b, nil
}

// ownSocket gives a Unix socket file the daemon's user and group.
func ownSocket(path string, s *Spec) error {
	uid, gid := -1, -1
	if u := s.Exec.User; u != "" {
		lu, err := lookupUser(u)
		if err != nil {
			return err
		}
		uid, _ = strconv.Atoi(lu.Uid)
		gid, _ = strconv.Atoi(lu.Gid)
	}
	if g := s.Exec.Group; g != "" {
		lg, err := user.LookupGroup(g)
		if err != nil {
			if lg, err = user.LookupGroupId(g); err != nil {
				return err
			}
		}
		gid, _ = strconv.Atoi(lg.Gid)
	}
	if uid != -1 || gid != -1 {
		if err := os.Lchown(path, uid, gid); err != nil {
			return err
		}
	}
	return os.Chmod(path, 0o666)
}

func lookupUser(u string) (*user.User, error) {
	if _, err := strconv.Atoi(u); err == nil {
		return user.LookupId(u)
	}
	return user.Lookup(u)
}

// close closes the listeners, and removes the Unix socket files.
func (b *sockets) close() {
	for _, f := range b.files {
		f.Close()
	}
	for i, ln := range b.lns {
		ln.Close()
		if b.addrs[i].Network == transport.Unix {
			os.Remove(b.addrs[i].Path)
		}
	}
}

// describe is the status of the sockets, "ADDRESS: STATE".
func (b *sockets) describe(state string) []string {
	out := make([]string, len(b.addrs))
	for i, a := range b.addrs {
		out[i] = a.String() + ": " + state
	}
	return out
}

// waitConnection waits until a connection is pending on one of the
// sockets; false if ctx ended first. It polls, so that the connection
// stays in the backlog for the daemon to accept.
func (b *sockets) waitConnection(ctx context.Context) bool {
	fds := make([]unix.PollFd, len(b.files))
	for i, f := range b.files {
		fds[i] = unix.PollFd{Fd: int32(f.Fd()), Events: unix.POLLIN}
	}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, 100)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
		if n > 0 {
			return true
		}
	}
	return false
}

// apply passes the sockets to cmd as fds 3… (cmd.ExtraFiles must be
// empty: listen excludes <notification-fd N>). The variables are the
// spec's (withListenEnv); LISTEN_FDS there makes the daemon start through
// the exec helper, which sets LISTEN_PID to its own pid before it execs
// the daemon.
func (b *sockets) apply(cmd *exec.Cmd) {
	if b == nil || len(b.files) == 0 {
		return
	}
	cmd.ExtraFiles = append(append([]*os.File(nil), b.files...), cmd.ExtraFiles...)
}

// withListenEnv is s with LISTEN_FDS and LISTEN_FDNAMES for b in its
// environment (and any LISTEN_PID it sets removed: the helper sets it).
func (b *sockets) withListenEnv(s *Spec) *Spec {
	c := *s
	c.Env = append(append([]EnvChange(nil), s.Env...),
		EnvChange{Name: "LISTEN_PID", Remove: true},
		EnvChange{Name: "LISTEN_FDS", Value: strconv.Itoa(len(b.files))},
		EnvChange{Name: "LISTEN_FDNAMES", Value: b.names})
	return &c
}

// fdName makes a LISTEN_FDNAMES name of a daemon ID: at most 255
// characters of letters, digits, `.`, `_` and `-` (sd_listen_fds_with_names).
func fdName(id string) string {
	var sb strings.Builder
	for _, r := range id {
		if sb.Len() == 255 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return "daemon"
	}
	return sb.String()
}

// runWithSockets is the linked task of a spec with listen: take the
// daemon's held sockets (binding them the first time), then the restart
// loop with them; they are given back once the loop has ended and its
// processes are gone, and stay bound while the declaration stands
// (sockets_hold.go). A failure to bind crashes the worker, so the daemon
// is failed and tried again after the supervisor's delay.
func (r *specRun) runWithSockets(ctx context.Context) error {
	defer r.runEnded()
	d := r.w.d
	key := heldKey(r.spec)
	b, err := d.held.acquire(ctx, key, func() (*sockets, error) {
		return bindSockets(r.spec, fdName(preserves.FormatText(d.id)))
	}, func() {
		d.log.Info().Msg("sockets in use by the previous run of the daemon; waiting for it to end")
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.log.Error().Err(err).Msg("cannot bind the daemon's sockets")
		return err
	}
	defer d.held.release(key)
	waiting := "listening, not started (starts at the first connection)"
	if !r.spec.OnDemand {
		waiting = "listening"
	}
	r.fr.ActivateNow(func(t *dataspace.Turn) error {
		r.sockets = b.describe(waiting)
		if r.spec.OnDemand {
			r.becameReady(t) // connections wait in the backlog
		}
		r.w.rec.Kick(t)
		return nil
	})
	ev := r.events()
	ev.Sockets = b
	if r.spec.OnDemand {
		ev.Gate = b.waitConnection
		started := ev.Started
		ev.Started = func(pid int) {
			r.fr.ActivateNow(func(t *dataspace.Turn) error {
				r.sockets = b.describe("listening, started")
				return nil
			})
			started(pid)
		}
	}
	return r.outcome(ctx, d.s.runner.Run(ctx, b.withListenEnv(r.spec), ev))
}
