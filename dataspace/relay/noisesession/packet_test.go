package noisesession

import (
	"fmt"
	"testing"

	"github.com/flynn/noise"

	"github.com/syndicate-go/syndicate/preserves"
)

func cipherPair() (enc, dec *noise.CipherState) {
	var k [32]byte
	return noise.UnsafeNewCipherState(suite, k, 0), noise.UnsafeNewCipherState(suite, k, 0)
}

// open decodes and decrypts a Packet.
func open(dec *noise.CipherState, v preserves.Value) ([]byte, error) {
	pieces, err := DecodePacket(v)
	if err != nil {
		return nil, err
	}
	var got []byte
	for _, p := range pieces {
		if len(p) > maxMessage {
			return nil, fmt.Errorf("%d-byte message", len(p))
		}
		if got, err = dec.Decrypt(got, nil, p); err != nil {
			return nil, err
		}
	}
	return got, nil
}

func TestSealPacket(t *testing.T) {
	for _, n := range []int{0, 1, maxPlaintext, maxPlaintext + 1, 3*maxPlaintext + 5} {
		enc, dec := cipherPair()
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(i * 7)
		}
		v, err := SealPacket(enc, plain)
		if err != nil {
			t.Fatal(err)
		}
		seq, isSeq := v.(preserves.Sequence)
		if isSeq != (n > maxPlaintext) {
			t.Fatalf("%d bytes: fragmented=%v", n, isSeq)
		}
		if isSeq && len(seq) != (n+maxPlaintext-1)/maxPlaintext {
			t.Fatalf("%d bytes: %d fragments", n, len(seq))
		}
		got, err := open(dec, v)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if string(got) != string(plain) {
			t.Fatalf("%d bytes: round trip differs", n)
		}
	}
	if maxPlaintext != 65519 {
		t.Fatalf("maxPlaintext %d, want 65519", maxPlaintext)
	}
}

func TestDecodePacket(t *testing.T) {
	for name, v := range map[string]preserves.Value{
		"oversize":          preserves.ByteString(make([]byte, maxMessage+1)),
		"oversize fragment": preserves.Sequence{preserves.ByteString("a"), preserves.ByteString(make([]byte, maxMessage+1))},
		"non-bytes piece":   preserves.Sequence{preserves.Int(1)},
		"not a packet":      preserves.Int(1),
	} {
		if _, err := DecodePacket(v); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	pieces, err := DecodePacket(preserves.Sequence{preserves.ByteString("a"), preserves.ByteString("")})
	if err != nil || len(pieces) != 2 || string(pieces[0]) != "a" || len(pieces[1]) != 0 {
		t.Fatalf("fragments %q %v", pieces, err)
	}
	if pieces, err := DecodePacket(preserves.ByteString(make([]byte, maxMessage))); err != nil || len(pieces) != 1 {
		t.Fatalf("maximal message: %v", err)
	}
}

func TestStripPadding(t *testing.T) {
	for in, want := range map[string]string{
		"\x01\x80\x02\x80\x80": "\x01\x80\x02",
		"\x84":                 "\x84",
		"\x80\x80":             "",
		"":                     "",
	} {
		if got := StripPadding([]byte(in)); string(got) != want {
			t.Errorf("StripPadding(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkPacket measures one direction of a session's transport:
// sealing a relay write as a Packet, then decoding and decrypting it.
// go test -run XXX -bench Packet ./dataspace/relay/noisesession
func BenchmarkPacket(b *testing.B) {
	for _, n := range []int{100, 16 << 10, 200 << 10} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			enc, dec := cipherPair()
			plain := make([]byte, n)
			var out []byte
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				v, err := SealPacket(enc, plain)
				if err != nil {
					b.Fatal(err)
				}
				pieces, err := DecodePacket(v)
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
