// Package client connects Go programs to Syndicate servers: Dial opens a
// transport (TCP or Unix socket, named by a transport.Address, a
// transportAddress.prs value or a command-line string) and runs a relay importing the server's oid 0 (normally its
// gatekeeper); Resolve exchanges a sturdy ref for a live capability at a
// gatekeeper (runtime spec §16.3, the "connect stream" client).
//
// The relay package itself never opens sockets; this package is the thin
// layer that does.
//
// A program may send as fast as it likes with plain
// [dataspace.FacetRef.Activate]: the turn is charged to its actor's outside
// account, the relay charges the bytes it queues to that account until
// written, the server stops reading from a connection whose consumers lag,
// and Activate waits while the account is past its high-water mark, so the
// producer is slowed to its consumers' pace instead of queueing without
// bound ([dataspace.FacetRef.ActivateContext] gives up on cancellation;
// [dataspace.FacetRef.ActivatePaced] takes an account of the program's
// own).
//
// Failures after Dial has returned arrive through the connection: Done is
// closed when it ends, and Err says why (nil for a clean end), so a program
// should watch them (see the failure example). Logs go to the
// relay.Options.Logger given to DialWith; with none, nothing is logged, but
// every failure that ends the connection still reaches Err.
package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrAddress: the transport address is not `<tcp HOST PORT>`,
	// `<unix PATH>`, "host:port" or "unix:PATH" (transport.ErrAddress).
	ErrAddress = transport.ErrAddress
	// ErrResolve: the gatekeeper answered `<error …>`; ResolveError says
	// what.
	ErrResolve = errors.New("client: resolution refused")
)

// ResolveError carries the gatekeeper's `<error DETAIL>` answer.
type ResolveError struct{ Detail preserves.Value }

func (e *ResolveError) Error() string {
	return "client: resolution refused: " + preserves.Show(e.Detail)
}

// Unwrap makes errors.Is(err, ErrResolve) hold.
func (e *ResolveError) Unwrap() error { return ErrResolve }

// address turns Dial's argument into a transport address.
func address(addr any) (transport.Address, error) {
	switch a := addr.(type) {
	case transport.Address:
		return a, nil
	case string:
		return transport.ParseString(a)
	case preserves.Value:
		return transport.ParseValue(a)
	}
	return transport.Address{}, fmt.Errorf("%w: %v", transport.ErrAddress, addr)
}

// Dial connects to addr and runs a relay in a new actor of sys importing
// the peer's oid 0, which it returns (output in binary syntax). The
// returned error covers connecting only: watch the connection's Done and
// Err for what happens afterwards (the server going away, a protocol
// error, a peer not reading). Once it has ended, activating its Facet
// returns false. Use DialWith to give the relay a logger.
func Dial(ctx context.Context, sys *dataspace.System, addr any) (*relay.Conn, *dataspace.Ref, error) {
	return DialWith(ctx, sys, addr, relay.Options{})
}

// DialWith is Dial with relay options (ImportInitial is forced on).
func DialWith(ctx context.Context, sys *dataspace.System, addr any, opts relay.Options) (*relay.Conn, *dataspace.Ref, error) {
	a, err := address(addr)
	if err != nil {
		return nil, nil, err
	}
	nc, err := a.Dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	opts.ImportInitial = true
	return relay.Spawn(sys, preserves.FormatText(a.Value()), nc, opts)
}
