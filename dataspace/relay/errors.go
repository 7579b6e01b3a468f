package relay

import (
	"errors"
	"fmt"
)

// Sentinel errors of the relay, tested with errors.Is.
var (
	// ErrProtocol: the peer sent something the protocol forbids (a
	// malformed packet, an event for an oid never issued, a duplicate
	// remote handle, a transient reference, an invalid WireRef).
	ErrProtocol = errors.New("relay: protocol error")
	// ErrLimit: an inbound packet exceeded the size or nesting limit.
	ErrLimit = errors.New("relay: packet limit exceeded")
	// ErrPeer: the peer sent an Error packet; PeerError carries it.
	ErrPeer = errors.New("relay: peer reported an error")
	// ErrSlowPeer: the peer read nothing for Options.WriteTimeout while
	// output waited for it.
	ErrSlowPeer = errors.New("relay: peer is not reading")
	// ErrOutboundFull: more than Options.MaxOutbound bytes were queued for
	// the peer (only producers outside flow control can get there).
	ErrOutboundFull = errors.New("relay: output queue for the peer is full")
	// ErrTooLarge: an event was too large for any packet the peer takes
	// (Options.PeerMaxPacketSize, PeerMaxPacketValues); it was not sent.
	ErrTooLarge = errors.New("relay: event too large for the peer")
	// ErrTransient: a message tried to send a reference nothing else pins
	// (runtime spec §15.5, sender side).
	ErrTransient = errors.New("relay: sent transient reference")
	// ErrClosed: the connection ended before the operation completed.
	ErrClosed = errors.New("relay: connection closed")
)

// ProtocolError is a connection error caused by inbound data, at any layer
// of the connection (the WebSocket listener's framing uses it too, with its
// own classes). Offset is the
// stream offset of the packet at fault (-1 when unknown).
type ProtocolError struct {
	Offset int64
	Msg    string
	Err    error // the class: ErrProtocol or ErrLimit here, a transport's own elsewhere
	cause  error
}

func (e *ProtocolError) Error() string {
	s := fmt.Sprintf("relay: %s", e.Msg)
	if e.Offset >= 0 {
		s = fmt.Sprintf("relay: at byte %d: %s", e.Offset, e.Msg)
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap exposes the class sentinel and the underlying cause.
func (e *ProtocolError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Err, e.cause}
	}
	return []error{e.Err}
}

func protoErr(off int64, class error, cause error, format string, args ...any) *ProtocolError {
	return &ProtocolError{Offset: off, Msg: fmt.Sprintf(format, args...), Err: class, cause: cause}
}

// PeerError is the error a relay terminates with when the peer sends
// `<error message detail>`.
type PeerError struct {
	Message string
	Detail  string // text form of the detail value
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("relay: peer error: %s %s", e.Message, e.Detail)
}

// Unwrap makes errors.Is(err, ErrPeer) hold.
func (e *PeerError) Unwrap() error { return ErrPeer }
