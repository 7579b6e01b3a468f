// Package session is the client side of a server: how the `syndicate`
// command (and anything else that drives a server from outside) reaches
// it. By default through the admin socket (its oid 0 is the config
// dataspace), else through a relay listener plus a sturdy ref resolved at
// its gatekeeper. Connection failures become one-line errors that say what
// to do ("server not running", "permission denied"). The admin socket is
// used only if its directory and its server belong to the user
// (admin.Dial).
//
// A Session runs in a dataspace.System: its own (Start) or one shared by
// many sessions (Open with own = false, as the bench engine does).
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin"
)

// Options say how to reach the server (the command's connection flags).
type Options struct {
	AdminSocket string        // admin socket path ("" = admin.DefaultPath())
	Connect     string        // transport address of a relay listener
	Ref         string        // sturdy ref to resolve at that listener's gatekeeper
	Timeout     time.Duration // connecting and the initial snapshot
}

// UsageError is a mistake in the Options (the command line's fault).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// Session is one connection to a server.
type Session struct {
	sys    *dataspace.System
	ownSys bool // close shuts sys down (bench shares one among many sessions)
	conn   *relay.Conn
	// Cfg is the config dataspace (or what --ref resolved to).
	Cfg *dataspace.Ref
	// What says how the server was reached, for messages.
	What string
	// PID is the server's pid when the socket says (SO_PEERCRED), else 0.
	PID     int
	timeout time.Duration // how long Await waits for an answer
}

// ErrNoAnswer: the server did not answer within the timeout.
var ErrNoAnswer = errors.New("no answer")

// Open connects a session in sys as o says; own says whether closing it
// shuts sys down.
func Open(ctx context.Context, sys *dataspace.System, own bool, o Options) (*Session, error) {
	s := &Session{sys: sys, ownSys: own}
	if err := s.dial(ctx, o); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) dial(ctx context.Context, c Options) error {
	s.timeout = c.Timeout
	dctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if c.Connect == "" {
		if c.Ref != "" {
			return usagef("--ref needs --connect ADDRESS (the admin socket needs no ref)")
		}
		path := c.AdminSocket
		if path == "" {
			path = admin.DefaultPath()
		}
		s.What = "admin socket " + path
		uc, err := admin.Dial(dctx, path)
		if err != nil {
			return dialError(s.What, err)
		}
		s.PID, _ = admin.PeerPID(uc)
		conn, cfg, err := relay.Spawn(s.sys, "<unix "+strconv.Quote(path)+">", uc, relay.Options{ImportInitial: true})
		if err != nil {
			uc.Close()
			return dialError(s.What, err)
		}
		s.conn, s.Cfg = conn, cfg
		return nil
	}
	if c.Ref == "" {
		return usagef("--connect needs --ref STURDYREF (listeners export the gatekeeper, not the config dataspace)")
	}
	addr, err := transport.ParseString(c.Connect)
	if err != nil {
		return usagef("--connect: %v", err)
	}
	ref, err := preserves.ParseText(c.Ref)
	if err != nil {
		return usagef("--ref: %v", err)
	}
	s.What = c.Connect
	conn, gk, err := client.Dial(dctx, s.sys, addr)
	if err != nil {
		return dialError(s.What, err)
	}
	s.conn = conn
	cap, _, err := client.Resolve(dctx, s.sys, gk, ref)
	if err != nil {
		if errors.Is(err, client.ErrResolve) {
			return fmt.Errorf("the gatekeeper at %s refused the ref: %v", s.What, err)
		}
		if e := s.Err(); e != nil {
			return e
		}
		return fmt.Errorf("resolving the ref at %s: %v", s.What, err)
	}
	s.Cfg = cap
	return nil
}

// Timeout is how long Await waits for an answer.
func (s *Session) Timeout() time.Duration { return s.timeout }

// Done is closed when the connection has ended.
func (s *Session) Done() <-chan struct{} { return s.conn.Done() }

// dialError explains a failed connection in one line.
func dialError(what string, err error) error {
	switch {
	case errors.Is(err, admin.ErrUnsafeDir) || errors.Is(err, admin.ErrForeignServer):
		return fmt.Errorf("refusing %s: %v", what, err)
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("server not running (no %s)", what)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("server not running (%s refuses connections)", what)
	case errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EACCES):
		return fmt.Errorf("permission denied: %s belongs to another user", what)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("timed out connecting to %s", what)
	}
	return fmt.Errorf("connecting to %s: %v", what, err)
}

// Err is the reason the connection ended, as a one-line error (nil
// while it is up).
func (s *Session) Err() error {
	if s.conn == nil {
		return nil
	}
	select {
	case <-s.conn.Done():
	default:
		return nil
	}
	err := s.conn.Err()
	var pe *relay.PeerError
	switch {
	case errors.As(err, &pe) && strings.Contains(pe.Message, "permission denied"):
		return fmt.Errorf("permission denied by %s: %s", s.What, strings.Trim(pe.Detail, `"`))
	case err != nil:
		return fmt.Errorf("connection to %s lost: %v", s.What, err)
	}
	return fmt.Errorf("connection to %s closed by the server", s.What)
}

// Wait blocks until ch is closed, the connection ends (an error), or ctx
// ends (nil: the caller treats that as an interrupt).
func (s *Session) Wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-s.conn.Done():
		return s.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start connects and runs boot in a new actor of the session (as spawn
// does), with the config dataspace (or what --ref resolved to). The caller
// closes the session.
func Start(ctx context.Context, o Options, name string, boot func(t *dataspace.Turn, cfg *dataspace.Ref) error) (*Session, dataspace.FacetRef, error) {
	s, err := Open(ctx, dataspace.NewSystem(dataspace.Options{}), true, o)
	if err != nil {
		return nil, dataspace.FacetRef{}, err
	}
	fr, err := s.Spawn(name, func(t *dataspace.Turn) error { return boot(t, s.Cfg) })
	if err != nil {
		s.Close()
		return nil, dataspace.FacetRef{}, err
	}
	return s, fr, nil
}

// StartSynced is Start, then a sync round trip: it returns once the server
// has answered (at most --timeout), when what boot asserted and sent has
// reached the server, and every assertion its subscriptions match has
// come back. synced, if set, runs in the turn of the answer.
func StartSynced(ctx context.Context, o Options, name string, boot func(t *dataspace.Turn, cfg *dataspace.Ref) error, synced func(t *dataspace.Turn, cfg *dataspace.Ref)) (*Session, dataspace.FacetRef, error) {
	done := make(chan struct{})
	s, fr, err := Start(ctx, o, name, func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		if err := boot(t, cfg); err != nil {
			return err
		}
		t.Sync(cfg, func(t *dataspace.Turn) error {
			if synced != nil {
				synced(t, cfg)
			}
			close(done)
			return nil
		})
		return nil
	})
	if err == nil {
		if err = s.Await(ctx, done); err != nil {
			s.Close()
		}
	}
	if err != nil {
		return nil, fr, err
	}
	return s, fr, nil
}

// Await is Wait for at most the --timeout; running out of time is
// ErrNoAnswer.
func (s *Session) Await(ctx context.Context, ch <-chan struct{}) error {
	tctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.Wait(tctx, ch)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		return fmt.Errorf("%w from %s within %v", ErrNoAnswer, s.What, s.timeout)
	}
	return err
}

// Spawn runs boot in a new actor of the session; the returned facet
// reference lets the command act later (e.g. retract on interrupt).
func (s *Session) Spawn(name string, boot func(t *dataspace.Turn) error) (dataspace.FacetRef, error) {
	frc := make(chan dataspace.FacetRef, 1)
	a := s.sys.Spawn(name, func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		frc <- t.FacetRef()
		return boot(t)
	})
	select {
	case fr := <-frc:
		return fr, nil
	case <-a.Done():
		return dataspace.FacetRef{}, fmt.Errorf("client actor failed: %v", a.Err())
	}
}

// Sync returns a channel closed once everything fr's actor sent so far
// has reached the server's dataspace (a sync round trip through the relay).
func (s *Session) Sync(fr dataspace.FacetRef) <-chan struct{} {
	done := make(chan struct{})
	fr.Activate(func(t *dataspace.Turn) error {
		t.Sync(s.Cfg, func(*dataspace.Turn) error { close(done); return nil })
		return nil
	})
	return done
}

// Flush waits, without a time limit, for Sync.
func (s *Session) Flush(ctx context.Context, fr dataspace.FacetRef) error {
	return s.Wait(ctx, s.Sync(fr))
}

func (s *Session) Close() {
	if s.conn != nil {
		s.conn.Close()
	}
	if !s.ownSys {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	_ = s.sys.Shutdown(ctx)
}
