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
// The socket is bound under a temporary name inside a fresh 0700 directory
// next to PATH, made mode 0600, and then renamed onto PATH, so the socket
// file is never visible at PATH with a wider mode. A pre-existing PATH is
// probed first: if a connection to it is refused the file is stale and is
// replaced (by the rename); if the connection succeeds, or PATH is not a
// socket, the worker fails with "address in use". The socket file is not
// removed on shutdown (as the reference).
package listener

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var (
	symRelayListener = preserves.Symbol("relay-listener")
	symTCP           = preserves.Symbol("tcp")
	symUnix          = preserves.Symbol("unix")
)

// Sentinel errors of the listener workers, tested with errors.Is.
var (
	// ErrBadPort: the TCP port does not fit in 16 bits.
	ErrBadPort = errors.New("listener: invalid TCP port number")
	// ErrAddrInUse: a live server owns the Unix socket path, or the path
	// is not a socket.
	ErrAddrInUse = errors.New("listener: address in use")
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
	p := pattern.Rec(services.LabelRunService, pattern.Bind{Pattern: pattern.Rec(symRelayListener)})
	t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		full := preserves.Strip(caps[0])
		spec, err := parseName(full)
		log := env.Logger.With().Str("service", preserves.FormatText(spec.name)).Logger()
		if err != nil {
			// Go deviation (services spec §0): reported, not ignored.
			ev := log.Warn().Err(err)
			if pos := preserves.PosOf(caps[0]); pos.IsValid() {
				ev = ev.Str("pos", pos.String()) // where a script asked
			}
			ev.Msg("malformed relay-listener request")
			t.Assert(env.Config, services.ServiceState(full, services.StateFailed))
			return nil
		}
		spec.log = log
		spec.env = env
		spec.dryRun = opts.DryRun
		spec.firstEvent = cmp.Or(opts.FirstEventTimeout, FirstEventTimeout)
		spec.maxInitial = cmp.Or(opts.MaxInitialAssertions, MaxInitialAssertions)
		services.Supervise(t, env, spec.name, services.Always, "<relay "+preserves.FormatText(spec.name)+">",
			func(t *dataspace.Turn, _ *dataspace.Ref) error { return spec.boot(t) }, opts.Supervise)
		return nil
	})
	return nil
}

// spec is a parsed relay-listener request.
type spec struct {
	name    preserves.Value // the service name: the first two fields only (Q4)
	network string          // "tcp" or "unix"
	host    string
	port    int64
	path    string
	gk      *dataspace.Ref
	httpd   *dataspace.Ref // the 3-field TCP form's HTTP handler space, else nil
	log     zerolog.Logger
	env     services.Env
	dryRun  bool

	firstEvent time.Duration // connection limits, see conn.go
	maxInitial int
}

func parseName(v preserves.Value) (spec, error) {
	s := spec{name: v}
	r := v.(*preserves.Record)
	if len(r.Fields) < 2 {
		return s, fmt.Errorf("listener: expected <relay-listener ADDR #:GK>")
	}
	s.name = preserves.NewRecord(symRelayListener, r.Fields[0], r.Fields[1])
	gk, ok := dataspace.RefOf(r.Fields[1])
	if !ok {
		return s, fmt.Errorf("listener: gatekeeper is not a capability")
	}
	s.gk = gk
	a, ok := r.Fields[0].(*preserves.Record)
	if !ok {
		return s, fmt.Errorf("listener: address is not a record")
	}
	switch {
	case preserves.Equal(a.Label, symTCP) && len(a.Fields) == 2:
		host, ok1 := a.Fields[0].(preserves.String)
		port, ok2 := a.Fields[1].(preserves.Int)
		if !ok1 || !ok2 {
			return s, fmt.Errorf("listener: expected <tcp HOST PORT> with a string and an integer")
		}
		s.network, s.host, s.port = "tcp", string(host), int64(port)
		if len(r.Fields) >= 3 {
			s.httpd, _ = dataspace.RefOf(r.Fields[2]) // not a capability: no httpd
		}
	case preserves.Equal(a.Label, symUnix) && len(a.Fields) == 1 && len(r.Fields) == 2:
		path, ok := a.Fields[0].(preserves.String)
		if !ok {
			return s, fmt.Errorf("listener: expected <unix PATH> with a string")
		}
		s.network, s.path = "unix", string(path)
	default:
		return s, fmt.Errorf("listener: unsupported address %s", preserves.FormatText(a))
	}
	return s, nil
}

// boot is the worker: bind, report ready, accept.
func (s *spec) boot(t *dataspace.Turn) error {
	services.StopOnRestart(t, s.env, s.name)
	var ln net.Listener
	var err error
	if s.network == "tcp" && (s.port < 0 || s.port > 65535) {
		return fmt.Errorf("%w: %d", ErrBadPort, s.port)
	}
	if s.dryRun {
		addr := s.path
		if s.network == "tcp" {
			addr = net.JoinHostPort(s.host, strconv.FormatInt(s.port, 10))
		}
		s.log.Info().Str("network", s.network).Str("addr", addr).Msg("dry run: would listen")
		t.Assert(s.env.Config, services.ServiceState(s.name, services.StateReady))
		return nil
	}
	if s.httpd != nil {
		// §7.1 step 2: the worker lives exactly as long as the 3-field
		// run-service that names HTTPD, so it owns the assertion.
		t.Assert(s.httpd, HTTPListener(s.port))
	}
	if s.network == "tcp" {
		ln, err = net.Listen("tcp", net.JoinHostPort(s.host, strconv.FormatInt(s.port, 10)))
	} else {
		ln, err = listenUnix(s.path, s.log)
	}
	if err != nil {
		return err
	}
	t.Assert(s.env.Config, services.ServiceState(s.name, services.StateReady))
	s.log.Info().Str("addr", ln.Addr().String()).Msg("listening")
	fr := t.FacetRef()
	t.LinkedTask("accept", func(ctx context.Context) error {
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		defer ln.Close()
		for {
			c, err := services.Accept(ctx, ln, s.log)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			if !fr.Activate(func(t *dataspace.Turn) error {
				s.spawnConn(t, c, s.httpd)
				return nil
			}) {
				c.Close()
				return ctx.Err()
			}
		}
	})
	return nil
}

// listenUnix binds path as described in the package doc.
func listenUnix(path string, log zerolog.Logger) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%w: %s exists and is not a socket", ErrAddrInUse, path)
		}
		c, err := net.Dial("unix", path)
		switch {
		case err == nil:
			c.Close()
			return nil, fmt.Errorf("%w: %s has a live listener", ErrAddrInUse, path)
		case errors.Is(err, syscall.ECONNREFUSED):
			log.Info().Str("path", path).Msg("replacing stale socket")
		default:
			log.Warn().Err(err).Str("path", path).Msg("probing existing socket failed")
			return nil, fmt.Errorf("%w: %s: %v", ErrAddrInUse, path, err)
		}
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".relay-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
