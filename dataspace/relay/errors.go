package relay

import (
	"errors"
	"fmt"
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

// The classes of a ProtocolError, tested with errors.Is.
var (
	// ErrProtocol: the peer sent something the protocol forbids (a
	// malformed packet, an event for an oid never issued, a duplicate
	// remote handle, a transient reference, an invalid WireRef).
	ErrProtocol = errors.New("relay: protocol error")
	// ErrLimit: an inbound packet exceeded the size or nesting limit.
	ErrLimit = errors.New("relay: packet limit exceeded")
)

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

// ErrPeer: the peer sent an Error packet; PeerError carries it.
var ErrPeer = errors.New("relay: peer reported an error")

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
