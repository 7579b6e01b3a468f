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

// One read's worth of one-message Turn packets (the wire pub/sub
// benchmark's traffic), decoded the way the reader does: one decoder for
// the read, each packet by the fast path.
func BenchmarkDecodeReadOfMessages(b *testing.B) {
	var buf []byte
	starts := []int{}
	for range 1000 {
		starts = append(starts, len(buf))
		ev := Event{Oid: 0, Kind: EvMessage, Value: rec("bench", preserves.ByteString("0123456789abcdef"))}
		var err error
		buf, err = AppendPacket(buf, Packet{Kind: TurnPacket, Events: []Event{ev}}.ToValue(), Binary)
		if err != nil {
			b.Fatal(err)
		}
	}
	starts = append(starts, len(buf))
	evs := make([]Event, 0, 1000)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for range b.N {
		bd := batchDecoders.Get().(*preserves.BatchDecoder)
		bd.Reset(buf, turnDecodeOptions(DefaultMaxDepth, DefaultMaxPacketSize))
		evs = evs[:0]
		for i := 0; i+1 < len(starts); i++ {
			var ok bool
			if evs, ok = fastTurnAt(bd, evs, buf, starts[i], starts[i+1], DefaultMaxDepth); !ok {
				b.Fatal("fast path refused")
			}
		}
		bd.Reset(nil, preserves.DecodeOptions{})
		batchDecoders.Put(bd)
		clear(evs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}
