package relay

// Fast paths for the common case, found by profiling the loopback
// benchmarks: outbound TurnEvents are encoded straight into the packet's
// bytes (no intermediate Record/Sequence values per event, and payloads of
// the common shapes without a pooled encoder round trip each), and inbound
// binary Turn packets are taken apart by walking their bytes, so that only
// each event's payload value is decoded — all payloads of one packet by
// one preserves.BatchDecoder, so they share allocation chunks. Anything
// the fast inbound parser does not recognise falls back to the general
// decoder, which is authoritative for errors; anything the fast encoder
// does not know goes to preserves.AppendBinary.

import (
	"strconv"
	"sync"

	"github.com/syndicate-go/syndicate/preserves"
)

var binLabel = [...][]byte{
	EvAssert:  {preserves.TagRecord, preserves.TagSymbol, 0x01, 'A'},
	EvRetract: {preserves.TagRecord, preserves.TagSymbol, 0x01, 'R'},
	EvMessage: {preserves.TagRecord, preserves.TagSymbol, 0x01, 'M'},
	EvSync:    {preserves.TagRecord, preserves.TagSymbol, 0x01, 'S'},
}

var textLabel = [...]string{EvAssert: "<A ", EvRetract: "<R ", EvMessage: "<M ", EvSync: "<S "}

// appendEvent appends one TurnEvent in syntax syn. Values must carry only
// Value payloads in their embeddeds (WireRefs).
func appendEvent(dst []byte, ev *Event, syn Syntax) ([]byte, error) {
	if syn == Text {
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, ev.Oid, 10)
		dst = append(dst, ' ')
		dst = append(dst, textLabel[ev.Kind]...)
		switch ev.Kind {
		case EvAssert:
			dst = preserves.AppendText(dst, ev.Value)
			dst = append(dst, ' ')
			dst = strconv.AppendInt(dst, ev.Handle, 10)
		case EvRetract:
			dst = strconv.AppendInt(dst, ev.Handle, 10)
		default:
			dst = preserves.AppendText(dst, ev.Value)
		}
		return append(dst, '>', ']'), nil
	}
	dst = append(dst, preserves.TagSequence)
	dst = preserves.AppendBinaryInt(dst, ev.Oid)
	dst = append(dst, binLabel[ev.Kind]...)
	var err error
	switch ev.Kind {
	case EvAssert:
		if dst, err = appendValue(dst, ev.Value); err != nil {
			return dst, err
		}
		dst = preserves.AppendBinaryInt(dst, ev.Handle)
	case EvRetract:
		dst = preserves.AppendBinaryInt(dst, ev.Handle)
	default:
		if dst, err = appendValue(dst, ev.Value); err != nil {
			return dst, err
		}
	}
	return append(dst, preserves.TagEnd, preserves.TagEnd), nil
}

// appendValue appends the canonical binary encoding of v. The shapes
// events mostly carry (records and sequences of atoms, WireRefs) are
// encoded here directly, which for a small message costs a fraction of a
// pooled encoder's round trip; anything else (doubles, big integers, sets,
// dictionaries, annotations, deep nesting) goes through
// preserves.AppendBinary, which is authoritative.
func appendValue(dst []byte, v preserves.Value) ([]byte, error) {
	if out, ok := appendSimple(dst, v, 0, false); ok {
		return out, nil
	}
	return preserves.AppendBinary(dst, v, preserves.EncodeOptions{})
}

// appendSimpleDepth bounds appendSimple's recursion; deeper values take
// the general encoder.
const appendSimpleDepth = 16

// appendSimple appends v when it is made only of the shapes it knows (with
// plain, no embedded values either); ok false means v must be encoded from
// dst again by the general encoder (the bytes appended so far lie beyond
// len(dst) and are simply overwritten).
func appendSimple(dst []byte, v preserves.Value, depth int, plain bool) ([]byte, bool) {
	switch x := v.(type) {
	case preserves.Bool:
		if x {
			return append(dst, preserves.TagTrue), true
		}
		return append(dst, preserves.TagFalse), true
	case preserves.Int:
		return preserves.AppendBinaryInt(dst, int64(x)), true
	case preserves.String:
		return preserves.AppendBinaryAtom(dst, preserves.TagString, string(x)), true
	case preserves.ByteString:
		return preserves.AppendBinaryAtom(dst, preserves.TagByteString, string(x)), true
	case preserves.Symbol:
		return preserves.AppendBinaryAtom(dst, preserves.TagSymbol, string(x)), true
	case *preserves.Record:
		if depth >= appendSimpleDepth {
			return dst, false
		}
		dst = append(dst, preserves.TagRecord)
		var ok bool
		if dst, ok = appendSimple(dst, x.Label, depth+1, plain); !ok {
			return dst, false
		}
		for _, f := range x.Fields {
			if dst, ok = appendSimple(dst, f, depth+1, plain); !ok {
				return dst, false
			}
		}
		return append(dst, preserves.TagEnd), true
	case preserves.Sequence:
		if depth >= appendSimpleDepth {
			return dst, false
		}
		dst = append(dst, preserves.TagSequence)
		var ok bool
		for _, f := range x {
			if dst, ok = appendSimple(dst, f, depth+1, plain); !ok {
				return dst, false
			}
		}
		return append(dst, preserves.TagEnd), true
	case *preserves.Embedded:
		p, isValue := x.Payload.(preserves.Value)
		if plain || !isValue || depth >= appendSimpleDepth {
			return dst, false
		}
		return appendSimple(append(dst, preserves.TagEmbedded), p, depth+1, plain)
	}
	return dst, false
}

// batchDecoders recycles the decoders of inbound Turn packets; an idle
// connection holds none.
var batchDecoders = sync.Pool{New: func() any { return new(preserves.BatchDecoder) }}

// turnFraming is the nesting of an event's payload inside a Turn packet:
// the packet's sequence, the event's pair and the event record.
const turnFraming = 3

// turnDecodeOptions are the options of a BatchDecoder for the payloads of
// Turn packets: the depth the general decoder would have left them, so
// that the fast path is never more lenient than it.
func turnDecodeOptions(maxDepth, maxSize int) preserves.DecodeOptions {
	return preserves.DecodeOptions{MaxDepth: maxDepth - turnFraming, MaxLength: maxSize}
}

// fastTurnAt parses the binary Turn packet buf[start:end], made of
// well-formed events, appending them to evs; ok is false when anything is
// unusual, and the caller then uses the general path. bd is reset over
// buf (turnDecodeOptions): the reader decodes the packets of one read by
// one decoder, whose allocation chunks and boxed labels they then share.
func fastTurnAt(bd *preserves.BatchDecoder, evs []Event, buf []byte, start, end, maxDepth int) ([]Event, bool) {
	if end-start < 2 || buf[start] != preserves.TagSequence || buf[end-1] != preserves.TagEnd || maxDepth <= turnFraming {
		return nil, false
	}
	n0 := len(evs)
	evs, ok := fastEvents(bd, evs, buf[:end], start)
	if !ok {
		clear(evs[n0:]) // pin no values in the caller's reused slice
		return nil, false
	}
	return evs, true
}

// fastEvents parses the events of the Turn packet raw[start:] (whose
// payloads bd decodes at their positions in raw).
func fastEvents(bd *preserves.BatchDecoder, evs []Event, raw []byte, start int) ([]Event, bool) {
	p := start + 1
	for p < len(raw)-1 {
		if raw[p] != preserves.TagSequence {
			return evs, false
		}
		p++
		oid, q, ok := readBinInt(raw, p)
		if !ok || q+4 > len(raw) || raw[q] != preserves.TagRecord || raw[q+1] != preserves.TagSymbol || raw[q+2] != 0x01 {
			return evs, false
		}
		ev := Event{Oid: oid}
		label := raw[q+3]
		p = q + 4
		if label == 'A' || label == 'M' || label == 'S' {
			v, end, err := bd.DecodeAt(p)
			if err != nil || end > len(raw) {
				return evs, false
			}
			ev.Value, p = v, end
		}
		switch label {
		case 'A':
			ev.Kind = EvAssert
		case 'R':
			ev.Kind = EvRetract
		case 'M':
			ev.Kind = EvMessage
		case 'S':
			if _, isEmb := ev.Value.(*preserves.Embedded); !isEmb {
				return evs, false
			}
			ev.Kind = EvSync
		default:
			return evs, false
		}
		if label == 'A' || label == 'R' {
			h, q, ok := readBinInt(raw, p)
			if !ok {
				return evs, false
			}
			ev.Handle, p = h, q
		}
		if p+2 > len(raw) || raw[p] != preserves.TagEnd || raw[p+1] != preserves.TagEnd {
			return evs, false
		}
		p += 2
		evs = append(evs, ev)
	}
	return evs, p == len(raw)-1
}

// readBinInt reads a canonical binary integer that fits in int64.
func readBinInt(b []byte, p int) (int64, int, bool) {
	if p+2 > len(b) || b[p] != preserves.TagInteger {
		return 0, 0, false
	}
	n := int(b[p+1])
	if n > 8 || p+2+n > len(b) {
		return 0, 0, false
	}
	body := b[p+2 : p+2+n]
	if n == 0 {
		return 0, p + 2, true
	}
	// Canonical form: no redundant leading byte.
	if n > 1 && ((body[0] == 0 && body[1]&0x80 == 0) || (body[0] == 0xFF && body[1]&0x80 != 0)) {
		return 0, 0, false
	}
	var v int64
	if body[0]&0x80 != 0 {
		v = -1
	}
	for _, c := range body {
		v = v<<8 | int64(c)
	}
	return v, p + 2 + n, true
}
