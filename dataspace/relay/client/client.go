// Package client connects Go programs to Syndicate servers: Dial opens a
// transport (TCP or Unix socket, named by a transportAddress.prs value or a
// Go string) and runs a relay importing the server's oid 0 (normally its
// gatekeeper); Resolve exchanges a sturdy ref for a live capability at a
// gatekeeper (runtime spec §16.3, the "connect stream" client).
//
// The relay package itself never opens sockets; this package is the thin
// layer that does.
package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrAddress: the transport address is not `<tcp HOST PORT>`,
	// `<unix PATH>`, "host:port" or "unix:PATH".
	ErrAddress = errors.New("client: unsupported transport address")
	// ErrResolve: the gatekeeper answered `<error …>`; ResolveError says
	// what.
	ErrResolve = errors.New("client: resolution refused")
)

// ResolveError carries the gatekeeper's `<error DETAIL>` answer.
type ResolveError struct{ Detail preserves.Value }

func (e *ResolveError) Error() string {
	return "client: resolution refused: " + preserves.FormatText(e.Detail)
}

// Unwrap makes errors.Is(err, ErrResolve) hold.
func (e *ResolveError) Unwrap() error { return ErrResolve }

// Address is a parsed transport address.
type Address struct {
	Network string // "tcp" or "unix"
	Addr    string // host:port or path
}

// ParseAddress accepts `<tcp "host" port>`, `<unix "path">`, or a Go string
// "host:port", "tcp:host:port", "unix:PATH" or an absolute path.
func ParseAddress(addr any) (Address, error) {
	switch a := addr.(type) {
	case Address:
		return a, nil
	case string:
		switch {
		case strings.HasPrefix(a, "unix:"):
			return Address{"unix", strings.TrimPrefix(a, "unix:")}, nil
		case strings.HasPrefix(a, "/"):
			return Address{"unix", a}, nil
		case strings.HasPrefix(a, "tcp:"):
			return Address{"tcp", strings.TrimPrefix(a, "tcp:")}, nil
		}
		if _, _, err := net.SplitHostPort(a); err == nil {
			return Address{"tcp", a}, nil
		}
	case preserves.Value:
		r, ok := preserves.Unwrap(a).(*preserves.Record)
		if !ok {
			break
		}
		switch preserves.Unwrap(r.Label) {
		case preserves.Symbol("tcp"):
			if len(r.Fields) < 2 {
				break
			}
			host, ok1 := preserves.Unwrap(r.Fields[0]).(preserves.String)
			port, ok2 := preserves.Unwrap(r.Fields[1]).(preserves.Int)
			if ok1 && ok2 && port >= 0 && port <= 65535 {
				return Address{"tcp", net.JoinHostPort(string(host), strconv.Itoa(int(port)))}, nil
			}
		case preserves.Symbol("unix"):
			if len(r.Fields) < 1 {
				break
			}
			if p, ok := preserves.Unwrap(r.Fields[0]).(preserves.String); ok {
				return Address{"unix", string(p)}, nil
			}
		}
	}
	return Address{}, fmt.Errorf("%w: %v", ErrAddress, addr)
}

// Dial connects to addr and runs a relay in a new actor of sys importing
// the peer's oid 0, which it returns (output in binary syntax).
func Dial(ctx context.Context, sys *dataspace.System, addr any) (*relay.Conn, *dataspace.Ref, error) {
	return DialWith(ctx, sys, addr, relay.Options{})
}

// DialWith is Dial with relay options (ImportInitial is forced on).
func DialWith(ctx context.Context, sys *dataspace.System, addr any, opts relay.Options) (*relay.Conn, *dataspace.Ref, error) {
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, a.Network, a.Addr)
	if err != nil {
		return nil, nil, err
	}
	opts.ImportInitial = true
	return relay.Spawn(sys, "<"+a.Network+" "+strconv.Quote(a.Addr)+">", nc, opts)
}
