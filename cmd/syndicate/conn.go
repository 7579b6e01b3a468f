package main

// Reaching the server: the admin socket by default (its oid 0 is the config
// dataspace), or a relay listener plus a sturdy ref resolved at its
// gatekeeper. Connection failures become one-line errors that say what to
// do ("server not running", "permission denied"). The admin socket is used
// only if its directory and its server belong to the user (admin.Dial).

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

// session is one connection to a server.
type session struct {
	sys     *dataspace.System
	ownSys  bool // close shuts sys down (bench shares one among many sessions)
	conn    *relay.Conn
	cfg     *dataspace.Ref // the config dataspace (or what --ref resolved to)
	what    string         // how the server was reached, for messages
	pid     int            // the server's pid when the socket says (SO_PEERCRED), else 0
	timeout time.Duration  // --timeout: how long await waits for an answer
}

// errNoAnswer: the server did not answer within --timeout.
var errNoAnswer = errors.New("no answer")

// open connects a session in sys as the connection flags say; own says
// whether closing it shuts sys down.
func (cl *cli) open(ctx context.Context, sys *dataspace.System, own bool) (*session, error) {
	s := &session{sys: sys, ownSys: own}
	if err := cl.dial(ctx, s); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (cl *cli) dial(ctx context.Context, s *session) error {
	c := cl.conn
	s.timeout = c.timeout
	dctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.connect == "" {
		if c.ref != "" {
			return usagef("--ref needs --connect ADDRESS (the admin socket needs no ref)")
		}
		path := c.admin
		if path == "" {
			path = admin.DefaultPath()
		}
		s.what = "admin socket " + path
		uc, err := admin.Dial(dctx, path)
		if err != nil {
			return dialError(s.what, err)
		}
		s.pid, _ = admin.PeerPID(uc)
		conn, cfg, err := relay.Spawn(s.sys, "<unix "+strconv.Quote(path)+">", uc, relay.Options{ImportInitial: true})
		if err != nil {
			uc.Close()
			return dialError(s.what, err)
		}
		s.conn, s.cfg = conn, cfg
		return nil
	}
	if c.ref == "" {
		return usagef("--connect needs --ref STURDYREF (listeners export the gatekeeper, not the config dataspace)")
	}
	addr, err := transport.ParseString(c.connect)
	if err != nil {
		return usagef("--connect: %v", err)
	}
	ref, err := preserves.ParseText(c.ref)
	if err != nil {
		return usagef("--ref: %v", err)
	}
	s.what = c.connect
	conn, gk, err := client.Dial(dctx, s.sys, addr)
	if err != nil {
		return dialError(s.what, err)
	}
	s.conn = conn
	cap, _, err := client.Resolve(dctx, s.sys, gk, ref)
	if err != nil {
		if errors.Is(err, client.ErrResolve) {
			return fmt.Errorf("the gatekeeper at %s refused the ref: %v", s.what, err)
		}
		if e := s.connErr(); e != nil {
			return e
		}
		return fmt.Errorf("resolving the ref at %s: %v", s.what, err)
	}
	s.cfg = cap
	return nil
}

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

// connErr is the reason the connection ended, as a one-line error (nil
// while it is up).
func (s *session) connErr() error {
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
		return fmt.Errorf("permission denied by %s: %s", s.what, strings.Trim(pe.Detail, `"`))
	case err != nil:
		return fmt.Errorf("connection to %s lost: %v", s.what, err)
	}
	return fmt.Errorf("connection to %s closed by the server", s.what)
}

// wait blocks until ch is closed, the connection ends (an error), or ctx
// ends (nil: the caller treats that as an interrupt).
func (s *session) wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-s.conn.Done():
		return s.connErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start connects and runs boot in a new actor of the session (as spawn
// does), with the config dataspace (or what --ref resolved to). The caller
// closes the session.
func (cl *cli) start(ctx context.Context, name string, boot func(t *dataspace.Turn, cfg *dataspace.Ref) error) (*session, dataspace.FacetRef, error) {
	s, err := cl.open(ctx, dataspace.NewSystem(dataspace.Options{}), true)
	if err != nil {
		return nil, dataspace.FacetRef{}, err
	}
	fr, err := s.spawn(name, func(t *dataspace.Turn) error { return boot(t, s.cfg) })
	if err != nil {
		s.close()
		return nil, dataspace.FacetRef{}, err
	}
	return s, fr, nil
}

// startSynced is start, then a sync round trip: it returns once the server
// has answered (at most --timeout), when what boot asserted and sent has
// reached the server, and every assertion its subscriptions match has
// come back. synced, if set, runs in the turn of the answer.
func (cl *cli) startSynced(ctx context.Context, name string, boot func(t *dataspace.Turn, cfg *dataspace.Ref) error, synced func(t *dataspace.Turn, cfg *dataspace.Ref)) (*session, dataspace.FacetRef, error) {
	done := make(chan struct{})
	s, fr, err := cl.start(ctx, name, func(t *dataspace.Turn, cfg *dataspace.Ref) error {
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
		if err = s.await(ctx, done); err != nil {
			s.close()
		}
	}
	if err != nil {
		return nil, fr, err
	}
	return s, fr, nil
}

// await is wait for at most the --timeout; running out of time is
// errNoAnswer.
func (s *session) await(ctx context.Context, ch <-chan struct{}) error {
	tctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.wait(tctx, ch)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		return fmt.Errorf("%w from %s within %v", errNoAnswer, s.what, s.timeout)
	}
	return err
}

// spawn runs boot in a new actor of the session; the returned facet
// reference lets the command act later (e.g. retract on interrupt).
func (s *session) spawn(name string, boot func(t *dataspace.Turn) error) (dataspace.FacetRef, error) {
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

// sync returns a channel closed once everything fr's actor sent so far
// has reached the server's dataspace (a sync round trip through the relay).
func (s *session) sync(fr dataspace.FacetRef) <-chan struct{} {
	done := make(chan struct{})
	fr.Activate(func(t *dataspace.Turn) error {
		t.Sync(s.cfg, func(*dataspace.Turn) error { close(done); return nil })
		return nil
	})
	return done
}

// flush waits, without a time limit, for sync.
func (s *session) flush(ctx context.Context, fr dataspace.FacetRef) error {
	return s.wait(ctx, s.sync(fr))
}

func (s *session) close() {
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
