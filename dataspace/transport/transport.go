// Package transport is the one home of transport addresses
// (transportAddress.prs): the stream transports the server listens on and
// dials, TCP and Unix sockets. An Address parses from a Preserves value
// (`<tcp "HOST" PORT>`, `<unix "PATH">`, through the generated parsers of
// dataspace/schemas/transportaddress, so errors carry the path and the
// source position) or from a command-line string, renders back to both,
// and can Listen and Dial. The listener, resolution, the Go client, the
// validator and both commands' flags all go through it, so adding a
// transport (or its TLS settings) is a change here.
//
// # Unix socket files
//
// ListenUnix binds under a temporary name inside a fresh 0700 directory
// next to PATH, makes the socket mode 0600, and renames it onto PATH, so
// the socket is never visible at PATH with a wider mode. A pre-existing
// PATH is probed first: if a connection is refused the file is stale and
// is replaced (by the rename); if the connection succeeds, or PATH is not
// a socket, binding fails with ErrAddrInUse. The file is not removed when
// the listener closes (a restarting server replaces it as stale).
package transport

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/transportaddress"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrAddress: not a transport address this server supports. Errors
	// from ParseValue also wrap a *schema.ParseError saying where.
	ErrAddress = errors.New("transport: unsupported address")
	// ErrAddrInUse: a live server owns the Unix socket path, or the path
	// is not a socket.
	ErrAddrInUse = errors.New("transport: address in use")
)

// Network is the kind of an Address.
type Network uint8

const (
	TCP  Network = iota + 1 // `<tcp HOST PORT>`
	Unix                    // `<unix PATH>`
)

// String is the network's name in Go's net package.
func (n Network) String() string {
	switch n {
	case TCP:
		return "tcp"
	case Unix:
		return "unix"
	}
	return "Network(" + strconv.Itoa(int(n)) + ")"
}

// Address is a transport address. The zero Address is invalid.
type Address struct {
	Network Network
	Host    string // TCP
	Port    int    // TCP, 0-65535
	Path    string // Unix
}

// TCPAddr is the TCP address host:port.
func TCPAddr(host string, port int) Address { return Address{Network: TCP, Host: host, Port: port} }

// UnixAddr is the Unix socket at path.
func UnixAddr(path string) Address { return Address{Network: Unix, Path: path} }

// ParseValue reads `<tcp "HOST" PORT>` or `<unix "PATH">` (extra fields
// are ignored, as the schema allows). Annotations are looked through; a
// position they carry appears in the error.
//
// A schema.Wildcard (an unknown part, to a static checker) gives the zero
// Address, as does a wildcard host or port their zero values.
func ParseValue(v preserves.Value) (Address, error) {
	if schema.IsWildcard(v) {
		return Address{}, nil
	}
	if r, ok := v.(*preserves.Record); ok {
		switch r.Label {
		case transportaddress.LabelTcp:
			t, err := transportaddress.ParseTcp(v)
			if err != nil {
				return Address{}, fmt.Errorf("%w: %w", ErrAddress, err)
			}
			if !t.Port.IsInt64() || t.Port.Int64() < 0 || t.Port.Int64() > 65535 {
				return Address{}, fmt.Errorf("%w: %w", ErrAddress, schema.FailAt(v, "[1]", "expected a port from 0 to 65535"))
			}
			return TCPAddr(t.Host, int(t.Port.Int64())), nil
		case transportaddress.LabelUnix:
			u, err := transportaddress.ParseUnix(v)
			if err != nil {
				return Address{}, fmt.Errorf("%w: %w", ErrAddress, err)
			}
			if u.Path == "" && !schema.IsWildcard(r.Fields[0]) {
				return Address{}, fmt.Errorf("%w: %w", ErrAddress, schema.FailAt(v, "[0]", "expected a socket path"))
			}
			return UnixAddr(u.Path), nil
		}
	}
	return Address{}, fmt.Errorf("%w: %w", ErrAddress, schema.Fail(v, `expected <tcp "HOST" PORT> or <unix "PATH">`))
}

// ParseString reads a command-line address: "HOST:PORT", "tcp:HOST:PORT",
// "unix:PATH", an absolute PATH, or the Preserves text of an address
// value (`<tcp "localhost" 8001>`).
func ParseString(s string) (Address, error) {
	switch {
	case strings.HasPrefix(s, "<"):
		v, err := preserves.ParseText(s)
		if err != nil {
			return Address{}, fmt.Errorf("%w: %q: %w", ErrAddress, s, err)
		}
		return ParseValue(v)
	case strings.HasPrefix(s, "unix:") && len(s) > len("unix:"):
		return UnixAddr(s[len("unix:"):]), nil
	case strings.HasPrefix(s, "/"):
		return UnixAddr(s), nil
	}
	hostport := strings.TrimPrefix(s, "tcp:")
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return Address{}, fmt.Errorf("%w: %q: expected HOST:PORT, unix:PATH or /PATH", ErrAddress, s)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Address{}, fmt.Errorf("%w: %q: the port must be a number from 0 to 65535", ErrAddress, s)
	}
	return TCPAddr(host, int(p)), nil
}

// Value is the address as a transportAddress.prs value.
func (a Address) Value() preserves.Value {
	switch a.Network {
	case TCP:
		return transportaddress.Tcp{Host: a.Host, Port: big.NewInt(int64(a.Port))}.ToValue()
	case Unix:
		return transportaddress.Unix{Path: a.Path}.ToValue()
	}
	return preserves.Bool(false)
}

// String is the command-line form, which ParseString reads back:
// "HOST:PORT" or "unix:PATH".
func (a Address) String() string {
	if a.Network == Unix {
		return "unix:" + a.Path
	}
	if h := a.Host; h == "unix" || h == "tcp" || strings.HasPrefix(h, "<") || strings.HasPrefix(h, "/") {
		return "tcp:" + a.NetAddr() // a host that would read as something else
	}
	return a.NetAddr()
}

// NetAddr is the address in the form of Go's net package: "HOST:PORT"
// or the path.
func (a Address) NetAddr() string {
	if a.Network == Unix {
		return a.Path
	}
	return net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}

// Listen binds the address (a Unix socket as ListenUnix does). stale,
// when not nil, is told that a stale Unix socket file is being replaced.
func (a Address) Listen(stale func(path string)) (net.Listener, error) {
	switch a.Network {
	case TCP:
		return net.Listen("tcp", a.NetAddr())
	case Unix:
		ln, replaced, err := ListenUnix(a.Path)
		if err != nil {
			return nil, err
		}
		if replaced && stale != nil {
			stale(a.Path)
		}
		return ln, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrAddress, a)
}

// Dial connects to the address.
func (a Address) Dial(ctx context.Context) (net.Conn, error) {
	if a.Network != TCP && a.Network != Unix {
		return nil, fmt.Errorf("%w: %v", ErrAddress, a)
	}
	var d net.Dialer
	return d.DialContext(ctx, a.Network.String(), a.NetAddr())
}

// ListenUnix binds path safely (see the package doc); replaced reports
// that a stale socket file was replaced.
func ListenUnix(path string) (ln *net.UnixListener, replaced bool, err error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, false, fmt.Errorf("%w: %s exists and is not a socket", ErrAddrInUse, path)
		}
		c, err := net.Dial("unix", path)
		switch {
		case err == nil:
			c.Close()
			return nil, false, fmt.Errorf("%w: %s has a live listener", ErrAddrInUse, path)
		case errors.Is(err, syscall.ECONNREFUSED):
			replaced = true
		default:
			return nil, false, fmt.Errorf("%w: %s: %v", ErrAddrInUse, path, err)
		}
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, false, err
	}
	ln.SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		return nil, false, err
	}
	return ln, replaced, nil
}

// RelayListener is a parsed `<relay-listener ADDR #:GATEKEEPER [#:HTTPD]>`
// service name (internalServices.prs), the request a relay listener
// serves. Gatekeeper and HTTPD are the embedded payloads (HTTPD nil when
// absent or not embedded).
type RelayListener struct {
	Addr       Address
	Gatekeeper any
	HTTPD      any
}

// ParseRelayListener reads a relay-listener request the way the listener
// service does, with the generated parsers: `<tcp …>` addresses take an
// optional third field (the HTTP handler space), `<unix …>` ones none.
// `--check` calls it too, so the two cannot disagree.
func ParseRelayListener(v preserves.Value) (RelayListener, error) {
	var out RelayListener
	r, err := schema.AsRecord(v, 2)
	if err != nil {
		return out, err
	}
	if a, ok := r.Fields[0].(*preserves.Record); ok && preserves.Equal(a.Label, transportaddress.LabelUnix) {
		u, err := internalservices.ParseUnixRelayListener(v)
		if err != nil {
			return out, err
		}
		if len(r.Fields) > 2 {
			return out, schema.FailAt(v, "[2]", "a unix listener takes no HTTP handler")
		}
		out.Gatekeeper = u.Gatekeeper
	} else {
		if a, ok := r.Fields[0].(*preserves.Record); ok && !preserves.Equal(a.Label, transportaddress.LabelTcp) && !schema.IsWildcard(a.Label) {
			_, err := ParseValue(r.Fields[0]) // neither tcp nor unix
			return out, schema.AtIn(err, v, "[0]")
		}
		t, err := internalservices.ParseTcpWithoutHttp(v)
		if err != nil {
			return out, err
		}
		out.Gatekeeper = t.Gatekeeper
		if len(r.Fields) > 2 {
			if e, ok := r.Fields[2].(*preserves.Embedded); ok {
				out.HTTPD = e.Payload
			}
		}
	}
	if out.Addr, err = ParseValue(r.Fields[0]); err != nil {
		return out, schema.AtIn(err, v, "[0]")
	}
	return out, nil
}
