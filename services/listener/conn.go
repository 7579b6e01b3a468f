package listener

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/syndicate-go/syndicate/services"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
)

// Limits for every accepted connection, whose peer is not trusted until
// it has resolved something at the gatekeeper (docs/operator.md, "Limits").
const (
	// FirstEventTimeout: a connection must send its first byte, and its
	// relay its first event (normally a resolve), within this time.
	FirstEventTimeout = 30 * time.Second
	// MaxInitialAssertions bounds the assertions one connection holds at
	// the gatekeeper: its resolves, pending or granted, and with them its
	// noise handshakes. Each pending resolve costs the server ~6 KB, each
	// pending noise session ~14 KB.
	MaxInitialAssertions = 64
	// ListenerAssertions bounds the same for all of one listener's
	// connections together (about 25 MB of pending resolves), so that
	// many connections cannot multiply MaxInitialAssertions. At the limit
	// the connection asking for more is closed.
	ListenerAssertions = 4096
)

// spawnConn starts the unlinked connection actor for c; httpd is the HTTP
// handler space current at accept time (nil: none, plain HTTP gets 503).
func (s *spec) spawnConn(t *dataspace.Turn, c net.Conn, httpd *dataspace.Ref) {
	subject := s.connSubject(c)
	name := preserves.FormatText(subject)
	// The connection's fields are added to the log when it first logs:
	// a logger built here would hold a 512-byte context for as long as
	// the connection is idle (issue 28, memory per idle session).
	withConn := func(c zerolog.Context) zerolog.Context { return c.Str("conn", name) }
	connLog := func() zerolog.Logger { return withConn(s.log.With()).Logger() }
	gk, cfg := s.gk, s.env.Config
	firstEvent := s.firstEvent
	sniff := s.addr.Network == transport.TCP
	t.Spawn(name, func(t *dataspace.Turn) error {
		fr := t.FacetRef()
		opts := relay.Options{
			InitialRef:           t.Create(newGatekeeperTap(gk, cfg, subject)),
			Logger:               s.log,
			LogWith:              withConn,
			FirstEventTimeout:    firstEvent,
			MaxInitialAssertions: s.maxInitial,
			InitialQuota:         s.quota,
		}
		if !sniff {
			// Unix sockets carry only the Syndicate protocol (no sniffing;
			// syntax detected per packet by the relay).
			startRelay(t, c, opts)
			return nil
		}
		t.LinkedTask("sniff", func(ctx context.Context) error {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			// A peer that connects and sends nothing is dropped like one
			// that sends no event (relay.Options.FirstEventTimeout).
			_ = c.SetReadDeadline(time.Now().Add(firstEvent))
			var b [1]byte
			_, err := io.ReadFull(c, b[:])
			_ = c.SetReadDeadline(time.Time{})
			if !stop() {
				return ctx.Err()
			}
			if err != nil {
				// Health checks and port scanners do this all the time: an
				// ordinary end of the connection, not an actor crash.
				c.Close()
				log := connLog()
				log.Debug().Err(err).Msg(ErrClosedEarly.Error())
				return nil
			}
			if b[0] == '[' || b[0] == '<' || b[0] >= 0x80 {
				fr.ActivateNow(func(t *dataspace.Turn) error {
					startRelay(t, &prefixed{Conn: c, first: b[:]}, opts)
					return nil
				})
				return dataspace.ErrKeepFacet
			}
			// HTTP (§7.2): served until the connection closes, unless it
			// becomes a WebSocket relay, which keeps the actor going.
			h := &httpHandler{fr: fr, httpd: httpd, port: int64(s.addr.Port), relayOpts: opts, log: connLog()}
			if serveHTTP(ctx, &prefixed{Conn: c, first: b[:]}, h) {
				return dataspace.ErrKeepFacet
			}
			return nil
		})
		return nil
	})
}

// startRelay runs the relay; its end is logged with the connection's
// fields (opts.LogWith).
func startRelay(t *dataspace.Turn, c io.ReadWriteCloser, opts relay.Options) {
	end := func() *zerolog.Event {
		log := opts.Logger
		if opts.LogWith != nil {
			log = opts.LogWith(log.With()).Logger()
		}
		return log.Info()
	}
	services.RunRelay(t, c, opts, end, "disconnect")
}

// connSubject is `<tcp "IP:PORT">` or `<unix PID UID>` (PID -1 if
// unknown): the connection's actor name and status subject.
func (s *spec) connSubject(c net.Conn) preserves.Value {
	if s.addr.Network == transport.TCP {
		return preserves.NewRecord(symTCP, preserves.String(c.RemoteAddr().String()))
	}
	pid, uid := int64(-1), int64(-1)
	if uc, ok := c.(*net.UnixConn); ok {
		if cred, err := services.PeerCred(uc); err == nil {
			pid, uid = int64(cred.Pid), int64(cred.Uid)
		}
	}
	return preserves.NewRecord(symUnix, preserves.Int(pid), preserves.Int(uid))
}

// prefixed replays the sniffed byte before the rest of the stream.
type prefixed struct {
	net.Conn
	first []byte
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// errPrefixPending: the sniffed byte has not been read yet, so the
// connection's own descriptor is not where the next bytes are.
var errPrefixPending = errors.New("listener: sniffed byte not read yet")

// SyscallConn exposes the connection's descriptor once the sniffed byte
// has been read, so that the relay can wait for input holding no buffer
// (relay's framer, readIdle).
func (p *prefixed) SyscallConn() (syscall.RawConn, error) {
	sc, ok := p.Conn.(syscall.Conn)
	if len(p.first) > 0 || !ok {
		return nil, errPrefixPending
	}
	return sc.SyscallConn()
}
