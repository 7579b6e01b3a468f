// Package listener implements the relay listeners of services spec §7.1
// and §7.3: `<relay-listener <tcp HOST PORT> #:GK>` (optionally with a third
// `#:HTTPD` field) and `<relay-listener <unix PATH> #:GK>`. Each runs as a
// supervised worker (policy "always", §2.3) that binds its socket, reports
// `ready`, and accepts connections; every connection gets its own unlinked
// actor (Q2: connections survive listener restarts) running a relay that
// exports GK as oid 0.
//
// TCP connections are sniffed on their first byte: `[`, `<` (text) or
// ≥ 0x80 (binary) start a Syndicate relay; anything else is HTTP/1.1
// (§7.2, http.go), served by net/http over that one connection with
// keep-alive. A WebSocket upgrade on any path runs the relay over the
// WebSocket (websocket.go: our own RFC 6455 framing, one binary frame per
// packet each way, a text frame ends the session). Other requests get 503
// when the listener has no HTTPD space; with the 3-field form
// `<relay-listener <tcp H P> #:GK #:HTTPD>` the worker asserts
// `<http-listener P>` to HTTPD, and each request becomes
// `<request <http-request …> #:RES>` asserted to HTTPD, the response
// streamed from the `status`/`header`/`chunk`/`done` messages RES receives.
//
// # Unix socket files
//
// Addresses are transport.Address values; a Unix socket is bound by
// transport.ListenUnix (never visible with a wider mode than 0600, a stale
// file replaced, a live one or a non-socket refused). The socket file is
// not removed on shutdown (as the reference).
package listener

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The labels of the peer descriptions in log lines (conn.go); they are
// not transport addresses, so not transportaddress's records.
var (
	symTCP  = preserves.Symbol("tcp")
	symUnix = preserves.Symbol("unix")
)

// Sentinel errors of the listener workers, tested with errors.Is.
var (
	// ErrAddrInUse: a live server owns the Unix socket path, or the path
	// is not a socket (transport.ErrAddrInUse).
	ErrAddrInUse = transport.ErrAddrInUse
	// ErrClosedEarly: a connection closed before sending its first byte.
	ErrClosedEarly = errors.New("listener: closed before starting")
)

// Options tunes the service; the zero value is the spec's behaviour.
type Options struct {
	// Supervise tunes the restart delays (tests shorten them).
	Supervise services.SuperviseOptions
	// DryRun binds no socket (operator issue, `--dry-run`): each listener
	// logs what it would bind and reports `started` and `ready`, so that
	// dependants proceed.
	DryRun bool
	// FirstEventTimeout and MaxInitialAssertions override the limits on
	// every connection (relay.Options); zero means the package defaults.
	FirstEventTimeout    time.Duration
	MaxInitialAssertions int
	// MaxListenerAssertions overrides ListenerAssertions.
	MaxListenerAssertions int
}

// Boot installs the relay listener services in env.Config.
func Boot(t *dataspace.Turn, env services.Env) error {
	return BootWith(t, env, Options{})
}

// BootWith is Boot with explicit options.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) error {
	if env.Config == nil {
		return fmt.Errorf("listener: Boot needs a config dataspace")
	}
	services.Serve(t, env, services.Requests[spec]{
		Label:     internalservices.LabelRelayListener,
		Parse:     parseName,
		Malformed: "malformed relay-listener request",
		LogName:   func(_ preserves.Value, s spec) string { return preserves.Show(s.name) },
		Run: func(t *dataspace.Turn, req services.Request[spec]) error {
			spec, full := req.Spec, req.Name
			spec.log = req.Log
			spec.env = env
			spec.dryRun = opts.DryRun
			spec.firstEvent = cmp.Or(opts.FirstEventTimeout, FirstEventTimeout)
			spec.maxInitial = cmp.Or(opts.MaxInitialAssertions, MaxInitialAssertions)
			spec.quota = relay.NewQuota(int64(cmp.Or(opts.MaxListenerAssertions, ListenerAssertions)))
			services.Supervise(t, env, spec.name, services.Always, "<relay "+preserves.Show(spec.name)+">",
				func(t *dataspace.Turn, _ *dataspace.Ref) error { return spec.boot(t) }, opts.Supervise)
			if !preserves.Equal(full, spec.name) {
				// Q4: the state belongs to the first two fields. The name
				// that was asked for (with the HTTP handler space) mirrors
				// it, so that status and dependants of the full name see
				// the listener's state (operator issue).
				mirror := pattern.Rec(service.LabelServiceState, services.Literal(spec.name), pattern.Capture())
				t.During(env.Config, mirror, func(t *dataspace.Turn, caps []preserves.Value) error {
					t.Assert(env.Config, services.ServiceState(full, caps[0]))
					return nil
				})
			}
			return nil
		},
	})
	return nil
}

// spec is a parsed relay-listener request.
type spec struct {
	name   preserves.Value // the service name: the first two fields only (Q4)
	addr   transport.Address
	gk     *dataspace.Ref
	httpd  *dataspace.Ref // the 3-field TCP form's HTTP handler space, else nil
	log    zerolog.Logger
	env    services.Env
	dryRun bool

	firstEvent time.Duration // connection limits, see conn.go
	maxInitial int
	quota      *relay.Quota // shared by every connection of this listener
}

// parseName reads the request with transport.ParseRelayListener, the
// parse `--check` performs too.
func parseName(v preserves.Value) (spec, error) {
	s := spec{name: v}
	r := v.(*preserves.Record)
	if len(r.Fields) < 2 {
		return s, fmt.Errorf("listener: expected <relay-listener ADDR #:GK>")
	}
	s.name = preserves.NewRecord(internalservices.LabelRelayListener, r.Fields[0], r.Fields[1])
	req, err := transport.ParseRelayListener(v)
	if err != nil {
		return s, fmt.Errorf("listener: %w", err)
	}
	s.addr = req.Addr
	s.httpd, _ = req.HTTPD.(*dataspace.Ref) // not a capability: no httpd
	var ok bool
	if s.gk, ok = req.Gatekeeper.(*dataspace.Ref); !ok || s.gk == nil {
		return s, fmt.Errorf("listener: gatekeeper is not a capability")
	}
	return s, nil
}

// boot is the worker: bind, report ready, accept.
func (s *spec) boot(t *dataspace.Turn) error {
	services.StopOnRestart(t, s.env, s.name)
	if s.dryRun {
		s.log.Info().Str("network", s.addr.Network.String()).Str("addr", s.addr.NetAddr()).Msg("dry run: would listen")
		t.Assert(s.env.Config, services.ServiceState(s.name, services.StateReady))
		return nil
	}
	if s.httpd != nil {
		// §7.1 step 2: the worker lives exactly as long as the 3-field
		// run-service that names HTTPD, so it owns the assertion.
		t.Assert(s.httpd, HTTPListener(int64(s.addr.Port)))
	}
	ln, err := s.addr.Listen(func(path string) {
		s.log.Info().Str("path", path).Msg("replacing stale socket")
	})
	if err != nil {
		return err
	}
	t.Assert(s.env.Config, services.ServiceState(s.name, services.StateReady))
	s.log.Info().Str("addr", ln.Addr().String()).Msg("listening")
	fr := t.FacetRef()
	t.LinkedTask("accept", func(ctx context.Context) error {
		defer ln.Close()
		return services.AcceptLoop(ctx, ln, fr, s.log, nil, func(t *dataspace.Turn, c net.Conn) {
			s.spawnConn(t, c, s.httpd)
		})
	})
	return nil
}
