package services

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
)

// Accept back-off bounds (as net/http's Server.Serve).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Accept returns the next connection from ln. Errors that mean "not now"
// rather than "never" — the process or the system is out of file
// descriptors (EMFILE, ENFILE) or buffers, or a queued connection was
// aborted — are logged and retried after a delay that doubles from 5 ms
// to 1 s, as net/http does, so the listening socket stays open and the
// connections queued on it are served once descriptors are free again.
// Any other error, or ctx ending, is returned.
func Accept(ctx context.Context, ln net.Listener, log zerolog.Logger) (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			if delay > 0 {
				log.Info().Msg("accepting connections again")
			}
			return c, nil
		}
		if ctx.Err() != nil || !TemporaryAcceptError(err) {
			return nil, err
		}
		if delay == 0 {
			delay = acceptBackoffMin
			log.Warn().Err(err).Msg("accept failed; retrying with back-off")
		} else {
			delay = min(2*delay, acceptBackoffMax)
			if delay == acceptBackoffMax {
				log.Debug().Err(err).Msg("accept still failing")
			}
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// AcceptLoop serves ln from a LinkedTask of the facet fr: it accepts
// connections (Accept) until ctx ends, and hands each that admit lets in
// (admit nil: every one; it runs outside any turn, so it may do I/O) to
// handle, in a turn of fr. It closes ln when ctx ends. It returns nil when
// stopping (ctx ended, ln closed, the facet gone), otherwise the error that
// ended accepting. It is the accept loop of every listening service (the
// relay listener, the admin socket).
func AcceptLoop(ctx context.Context, ln net.Listener, fr dataspace.FacetRef, log zerolog.Logger,
	admit func(net.Conn) bool, handle func(*dataspace.Turn, net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := Accept(ctx, ln, log)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if admit != nil && !admit(c) {
			continue
		}
		if !fr.ActivateNow(func(t *dataspace.Turn) error {
			handle(t, c)
			return nil
		}) {
			c.Close() // the facet stopped meanwhile
			return nil
		}
	}
}

// PeerCred reads the credentials (pid, uid, gid) of the process at the
// other end of a Unix socket connection (SO_PEERCRED).
func PeerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// TemporaryAcceptError reports whether an error from Accept is worth
// retrying: resource exhaustion, an aborted connection, an interruption,
// or a timeout.
func TemporaryAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{
		syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO,
	} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// RunRelay runs a relay over an accepted connection c (relay.Run) in a
// facet of its own under the active one, the connection's. When the relay
// ends, it logs msg on the event end makes (with the connection's error if
// it failed) and stops the connection's facet: the connection is over.
// Waiting for that facet to become inert would not do: what the
// connection's own entities (a gatekeeper tap, an origin proxy) asserted
// for the peer is still held when the relay's facet stops, and inertness
// is not checked again when those retractions complete (runtime spec §19,
// quirk 6), so the connection's actor lived on until shutdown, one per
// connection a peer ever made.
func RunRelay(t *dataspace.Turn, c io.ReadWriteCloser, opts relay.Options, end func() *zerolog.Event, msg string) *relay.Conn {
	var conn *relay.Conn
	_, _ = t.Facet(func(t *dataspace.Turn) error {
		conn, _ = relay.Run(t, c, opts)
		// Runs with the connection's facet active (runtime spec §4.6).
		t.OnStop(func(t *dataspace.Turn) error {
			ev := end()
			if err := conn.Err(); err != nil {
				ev = ev.Err(err)
			}
			ev.Msg(msg)
			t.Stop()
			return nil
		})
		return nil
	})
	return conn
}
