package relay

// Fast paths for the common case, found by profiling the loopback
// benchmarks: outbound TurnEvents are encoded straight into the packet's
// bytes (no intermediate Record/Sequence values per event), and inbound
// binary Turn packets are taken apart by walking their bytes, so that only
// each event's payload value is decoded. Anything the fast inbound parser
// does not recognise falls back to the general decoder, which is
// authoritative for errors.

import (
	"encoding/binary"
	"strconv"

	"github.com/syndicate-go/syndicate/preserves"
)

// appendBinInt appends the canonical binary encoding of n.
func appendBinInt(dst []byte, n int64) []byte {
	if n == 0 {
		return append(dst, 0xB0, 0x00)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	i := 0
	for i < 7 && ((b[i] == 0x00 && b[i+1]&0x80 == 0) || (b[i] == 0xFF && b[i+1]&0x80 != 0)) {
		i++
	}
	dst = append(dst, 0xB0, byte(8-i))
	return append(dst, b[i:]...)
}

var binLabel = [...][]byte{
	EvAssert:  {0xB4, 0xB3, 0x01, 'A'},
	EvRetract: {0xB4, 0xB3, 0x01, 'R'},
	EvMessage: {0xB4, 0xB3, 0x01, 'M'},
	EvSync:    {0xB4, 0xB3, 0x01, 'S'},
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
	dst = append(dst, 0xB5)
	dst = appendBinInt(dst, ev.Oid)
	dst = append(dst, binLabel[ev.Kind]...)
	var err error
	switch ev.Kind {
	case EvAssert:
		if dst, err = preserves.AppendBinary(dst, ev.Value, preserves.EncodeOptions{}); err != nil {
			return dst, err
		}
		dst = appendBinInt(dst, ev.Handle)
	case EvRetract:
		dst = appendBinInt(dst, ev.Handle)
	default:
		if dst, err = preserves.AppendBinary(dst, ev.Value, preserves.EncodeOptions{}); err != nil {
			return dst, err
		}
	}
	return append(dst, 0x84, 0x84), nil
}

// fastTurn parses a binary Turn packet made of well-formed events. ok is
// false when anything is unusual; the caller then uses the general path.
func fastTurn(evs []Event, raw []byte, maxDepth, maxSize int) ([]Event, bool) {
	if len(raw) < 2 || raw[0] != 0xB5 || raw[len(raw)-1] != 0x84 {
		return nil, false
	}
	p := 1
	for p < len(raw)-1 {
		if raw[p] != 0xB5 {
			return nil, false
		}
		p++
		oid, q, ok := readBinInt(raw, p)
		if !ok || q+4 > len(raw) || raw[q] != 0xB4 || raw[q+1] != 0xB3 || raw[q+2] != 0x01 {
			return nil, false
		}
		ev := Event{Oid: oid}
		label := raw[q+3]
		p = q + 4
		switch label {
		case 'A', 'M', 'S':
			end, ok := skipValue(raw, p, 0, maxDepth)
			if !ok {
				return nil, false
			}
			v, err := preserves.DecodeBinary(raw[p:end], preserves.DecodeOptions{MaxDepth: maxDepth, MaxLength: maxSize})
			if err != nil {
				return nil, false
			}
			ev.Value = v
			p = end
			switch label {
			case 'A':
				ev.Kind = EvAssert
				h, q, ok := readBinInt(raw, p)
				if !ok {
					return nil, false
				}
				ev.Handle, p = h, q
			case 'M':
				ev.Kind = EvMessage
			case 'S':
				if _, isEmb := v.(*preserves.Embedded); !isEmb {
					return nil, false
				}
				ev.Kind = EvSync
			}
		case 'R':
			ev.Kind = EvRetract
			h, q, ok := readBinInt(raw, p)
			if !ok {
				return nil, false
			}
			ev.Handle, p = h, q
		default:
			return nil, false
		}
		if p+2 > len(raw) || raw[p] != 0x84 || raw[p+1] != 0x84 {
			return nil, false
		}
		p += 2
		evs = append(evs, ev)
	}
	return evs, p == len(raw)-1
}

// readBinInt reads a canonical binary integer that fits in int64.
func readBinInt(b []byte, p int) (int64, int, bool) {
	if p+2 > len(b) || b[p] != 0xB0 {
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

// skipValue returns the end of the binary value starting at p.
func skipValue(b []byte, p, depth, maxDepth int) (int, bool) {
	if p >= len(b) || depth > maxDepth {
		return 0, false
	}
	tag := b[p]
	switch {
	case tag == 0x80 || tag == 0x81:
		return p + 1, true
	case tag == 0x85:
		q, ok := skipValue(b, p+1, depth+1, maxDepth)
		if !ok {
			return 0, false
		}
		return skipValue(b, q, depth+1, maxDepth)
	case tag == 0x86:
		return skipValue(b, p+1, depth+1, maxDepth)
	case tag == 0x87 || (tag >= 0xB0 && tag <= 0xB3):
		n, w, ok, _ := varint(b[p+1:])
		if !ok || n > uint64(len(b)) {
			return 0, false
		}
		end := p + 1 + w + int(n)
		return end, end <= len(b)
	case tag >= 0xB4 && tag <= 0xB7:
		q := p + 1
		for {
			if q >= len(b) {
				return 0, false
			}
			if b[q] == 0x84 {
				return q + 1, true
			}
			var ok bool
			if q, ok = skipValue(b, q, depth+1, maxDepth); !ok {
				return 0, false
			}
		}
	}
	return 0, false
}

// fastTurnIf appends the events of a binary Turn packet to dst (which the
// reader reuses from packet to packet).
func fastTurnIf(dst []Event, raw []byte, syn Syntax, maxDepth, maxSize int) ([]Event, bool) {
	if syn != Binary {
		return nil, false
	}
	return fastTurn(dst, raw, maxDepth, maxSize)
}
