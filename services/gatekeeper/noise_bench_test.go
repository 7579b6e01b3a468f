package gatekeeper

import (
	"fmt"
	"testing"

	"github.com/flynn/noise"
)

// BenchmarkNoisePacket measures one direction of a session's transport:
// sealing a relay write as a Packet, then decoding and decrypting it.
// go test -run XXX -bench NoisePacket ./services/gatekeeper
func BenchmarkNoisePacket(b *testing.B) {
	for _, n := range []int{100, 16 << 10, 200 << 10} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			var k [32]byte
			enc := noise.UnsafeNewCipherState(noiseSuite, k, 0)
			dec := noise.UnsafeNewCipherState(noiseSuite, k, 0)
			plain := make([]byte, n)
			var out []byte
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				v, err := sealNoisePacket(enc, plain)
				if err != nil {
					b.Fatal(err)
				}
				pieces, err := decodeNoisePacket(v)
				if err != nil {
					b.Fatal(err)
				}
				out = out[:0]
				for _, p := range pieces {
					if out, err = dec.Decrypt(out, nil, p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
