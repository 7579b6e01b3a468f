package relay

import (
	"github.com/syndicate-go/syndicate/dataspace/schemas/protocol"
	"github.com/syndicate-go/syndicate/preserves"
)

// Syntax is the Preserves syntax of a packet on the wire.
type Syntax uint8

const (
	// Binary is the machine-oriented syntax (first byte ≥ 0x80).
	Binary Syntax = iota
	// Text is the human-readable syntax; text packets are followed by a
	// newline on output.
	Text
)

func (s Syntax) String() string {
	if s == Text {
		return "text"
	}
	return "binary"
}

// PacketKind distinguishes the four packet alternatives of protocol.prs,
// tried in this order.
type PacketKind uint8

const (
	TurnPacket PacketKind = iota + 1
	ErrorPacket
	ExtensionPacket
	NopPacket
)

// EventKind is the kind of one TurnEvent.
type EventKind uint8

const (
	EvAssert EventKind = iota + 1
	EvRetract
	EvMessage
	EvSync
)

// Event is one TurnEvent: `[oid <A v h>]`, `[oid <R h>]`, `[oid <M v>]` or
// `[oid <S #:peer>]`. Value is the assertion or message body, or for Sync
// the embedded peer; values on the wire carry WireRefs as the payloads of
// their embedded values.
type Event struct {
	Oid    int64
	Kind   EventKind
	Value  preserves.Value
	Handle int64
}

// Packet is one parsed protocol packet.
type Packet struct {
	Kind   PacketKind
	Events []Event         // TurnPacket
	Msg    string          // ErrorPacket: message
	Detail preserves.Value // ErrorPacket: detail; ExtensionPacket: the whole record
}

// ParsePacket interprets a decoded value as a Packet (protocol.prs). The
// error, if any, wraps ErrProtocol.
func ParsePacket(v preserves.Value) (Packet, error) {
	v = preserves.Unwrap(v)
	switch x := v.(type) {
	case preserves.Sequence:
		evs := make([]Event, len(x))
		for i, te := range x {
			ev, ok := parseTurnEvent(te)
			if !ok {
				return Packet{}, protoErr(-1, ErrProtocol, nil, "malformed TurnEvent %d: %s", i, preserves.Show(te))
			}
			evs[i] = ev
		}
		return Packet{Kind: TurnPacket, Events: evs}, nil
	case *preserves.Record:
		if preserves.Equal(x.Label, protocol.LabelError) && len(x.Fields) == 2 {
			if msg, ok := preserves.Unwrap(x.Fields[0]).(preserves.String); ok {
				return Packet{Kind: ErrorPacket, Msg: string(msg), Detail: x.Fields[1]}, nil
			}
		}
		return Packet{Kind: ExtensionPacket, Detail: x}, nil
	case preserves.Bool:
		if !x {
			return Packet{Kind: NopPacket}, nil
		}
	}
	return Packet{}, protoErr(-1, ErrProtocol, nil, "not a packet: %s", preserves.Show(v))
}

func parseTurnEvent(v preserves.Value) (Event, bool) {
	s, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok || len(s) != 2 {
		return Event{}, false
	}
	oid, ok := preserves.Unwrap(s[0]).(preserves.Int)
	if !ok {
		return Event{}, false
	}
	r, ok := preserves.Unwrap(s[1]).(*preserves.Record)
	if !ok {
		return Event{}, false
	}
	label, ok := preserves.Unwrap(r.Label).(preserves.Symbol)
	if !ok {
		return Event{}, false
	}
	ev := Event{Oid: int64(oid)}
	switch {
	case label == protocol.LabelA && len(r.Fields) == 2:
		h, ok := preserves.Unwrap(r.Fields[1]).(preserves.Int)
		if !ok {
			return Event{}, false
		}
		ev.Kind, ev.Value, ev.Handle = EvAssert, r.Fields[0], int64(h)
	case label == protocol.LabelR && len(r.Fields) == 1:
		h, ok := preserves.Unwrap(r.Fields[0]).(preserves.Int)
		if !ok {
			return Event{}, false
		}
		ev.Kind, ev.Handle = EvRetract, int64(h)
	case label == protocol.LabelM && len(r.Fields) == 1:
		ev.Kind, ev.Value = EvMessage, r.Fields[0]
	case label == protocol.LabelS && len(r.Fields) == 1:
		if _, ok := preserves.Unwrap(r.Fields[0]).(*preserves.Embedded); !ok {
			return Event{}, false
		}
		ev.Kind, ev.Value = EvSync, r.Fields[0]
	default:
		return Event{}, false
	}
	return ev, true
}

// ToValue renders the packet as its protocol.prs value.
func (p Packet) ToValue() preserves.Value {
	switch p.Kind {
	case TurnPacket:
		s := make(preserves.Sequence, len(p.Events))
		for i, ev := range p.Events {
			s[i] = ev.ToValue()
		}
		return s
	case ErrorPacket:
		d := p.Detail
		if d == nil {
			d = preserves.Bool(false)
		}
		return preserves.NewRecord(protocol.LabelError, preserves.String(p.Msg), d)
	case ExtensionPacket:
		return p.Detail
	}
	return preserves.Bool(false)
}

// ToValue renders the TurnEvent.
func (ev Event) ToValue() preserves.Value {
	var e preserves.Value
	switch ev.Kind {
	case EvAssert:
		e = preserves.NewRecord(protocol.LabelA, ev.Value, preserves.Int(ev.Handle))
	case EvRetract:
		e = preserves.NewRecord(protocol.LabelR, preserves.Int(ev.Handle))
	case EvMessage:
		e = preserves.NewRecord(protocol.LabelM, ev.Value)
	case EvSync:
		e = preserves.NewRecord(protocol.LabelS, ev.Value)
	}
	return preserves.Sequence{preserves.Int(ev.Oid), e}
}

// AppendPacket appends the encoding of v in syntax syn: canonical binary,
// or compact text followed by a newline. Embedded payloads must be Values
// (WireRefs).
func AppendPacket(dst []byte, v preserves.Value, syn Syntax) ([]byte, error) {
	if syn == Text {
		dst = preserves.AppendText(dst, v)
		return append(dst, '\n'), nil
	}
	return preserves.AppendBinary(dst, v, preserves.EncodeOptions{})
}

// WireRef helpers: `[0 oid]` (mine: exported by the sender) and
// `[1 oid caveat…]` (yours: exported by the receiver).

func mineRef(oid int64) preserves.Value {
	return preserves.NewEmbedded(preserves.Sequence{preserves.Int(0), preserves.Int(oid)})
}

func yoursRef(oid int64) preserves.Value {
	return preserves.NewEmbedded(preserves.Sequence{preserves.Int(1), preserves.Int(oid)})
}
