package noisesession

import (
	"fmt"

	"github.com/flynn/noise"

	"github.com/syndicate-go/syndicate/preserves"
)

const (
	// maxMessage bounds every transport message and fragment.
	maxMessage = noise.MaxMsgLen
	// maxPlaintext is the largest plaintext one transport message
	// carries (65535 less the 16-byte AEAD tag); longer relay writes are
	// sent as a fragment list.
	maxPlaintext = maxMessage - 16
	// padding is the padding byte (`#f` in binary Preserves); no binary
	// protocol packet ends with it, since every packet is a compound
	// ending in 0x84.
	padding = 0x80
)

// DecodePacket splits a Packet (`bytes` or `[bytes …]`) into its
// transport messages, each at most 65535 bytes. It does not decrypt: the
// messages are decrypted in order and their plaintexts concatenated.
func DecodePacket(v preserves.Value) ([][]byte, error) {
	switch p := preserves.Unwrap(v).(type) {
	case preserves.ByteString:
		if len(p) > maxMessage {
			return nil, fmt.Errorf("noise packet of %d bytes exceeds %d", len(p), maxMessage)
		}
		return [][]byte{[]byte(p)}, nil
	case preserves.Sequence:
		out := make([][]byte, 0, len(p))
		for i, e := range p {
			b, ok := preserves.Unwrap(e).(preserves.ByteString)
			if !ok {
				return nil, fmt.Errorf("noise packet fragment %d is not a byte string", i)
			}
			if len(b) > maxMessage {
				return nil, fmt.Errorf("noise packet fragment %d of %d bytes exceeds %d", i, len(b), maxMessage)
			}
			out = append(out, []byte(b))
		}
		return out, nil
	}
	return nil, fmt.Errorf("noise packet is neither bytes nor a sequence of bytes")
}

// StripPadding drops the trailing 0x80 bytes of a decrypted Packet.
func StripPadding(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == padding {
		b = b[:len(b)-1]
	}
	return b
}

// SealPacket encrypts plaintext with cs as one Packet: a single transport
// message, or a fragment list of 65519-byte pieces when it is longer. It
// adds no padding.
func SealPacket(cs *noise.CipherState, plaintext []byte) (preserves.Value, error) {
	if len(plaintext) <= maxPlaintext {
		ct, err := cs.Encrypt(nil, nil, plaintext)
		if err != nil {
			return nil, err
		}
		return preserves.ByteString(ct), nil
	}
	var seq preserves.Sequence
	for len(plaintext) > 0 {
		n := min(len(plaintext), maxPlaintext)
		ct, err := cs.Encrypt(nil, nil, plaintext[:n])
		if err != nil {
			return nil, err
		}
		seq = append(seq, preserves.ByteString(ct))
		plaintext = plaintext[n:]
	}
	return seq, nil
}
