package relay

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

func turnPacket500() []byte {
	var evs []Event
	for i := range 500 {
		evs = append(evs, Event{Oid: 0, Kind: EvMessage, Value: rec("msg", preserves.Int(i))})
	}
	b, _ := AppendPacket(nil, Packet{Kind: TurnPacket, Events: evs}.ToValue(), Binary)
	return b
}

// Inbound decoding of a 500-message Turn packet: the byte-walking fast
// path against the general decode-then-parse path.
func BenchmarkDecodeTurnFast(b *testing.B) {
	raw := turnPacket500()
	var evs []Event
	b.SetBytes(int64(len(raw)))
	for range b.N {
		var ok bool
		evs, ok = fastTurn(evs[:0], raw, DefaultMaxDepth, DefaultMaxPacketSize)
		if !ok {
			b.Fatal("fast path refused")
		}
	}
}

func BenchmarkDecodeTurnGeneral(b *testing.B) {
	raw := turnPacket500()
	b.SetBytes(int64(len(raw)))
	for range b.N {
		v, err := decodePacket(raw, Binary, 0, DefaultMaxDepth, DefaultMaxPacketSize)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParsePacket(v); err != nil {
			b.Fatal(err)
		}
	}
}
