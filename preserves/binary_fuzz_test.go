package preserves

import (
	"bytes"
	"errors"
	"hash/fnv"
	"testing"
)

// FuzzBinaryDecode checks, for arbitrary input, that decoding never panics;
// that every decoded value survives annotated and canonical round trips; that
// canonical encoding is idempotent; and that the incremental Decoder, fed the
// same bytes in several chunkings, agrees with the whole-buffer decoder.
//
// Run it with: go test -run '^$' -fuzz FuzzBinaryDecode -fuzztime 2m ./preserves
func FuzzBinaryDecode(f *testing.F) {
	f.Add(binReadSamples(f))
	for _, c := range binLoadCases(f) {
		if c.bytes != nil {
			f.Add(c.bytes)
		}
	}
	for _, h := range []string{
		"B7 B0 00 80 85 80 B0 00 81 84", "85 85 B0 01 01 B0 01 02 B0 01 05", "86 86 B0 00",
		"B4 B5 84 B6 84 B7 84 84", "B0 09 00 80 00 00 00 00 00 00 00", "B1 81 00 61",
	} {
		f.Add(binHex(h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := DecodeOptions{Annotations: true}
		v, err := DecodeBinary(data, opts)
		binCheckChunked(t, data, opts)
		// A small depth limit and dropped annotations exercise the limit
		// and skipping paths of both decoders.
		binCheckChunked(t, data, DecodeOptions{MaxDepth: 4})
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || binClass(err) == nil {
				t.Fatalf("error %v is not a classified *Error", err)
			}
			if pe.Pos.Offset < 0 || pe.Pos.Offset > len(data) {
				t.Fatalf("error offset %d outside input of %d bytes", pe.Pos.Offset, len(data))
			}
			return
		}
		// Without annotations, the decoder gives the stripped value.
		plain, err := DecodeBinary(data, DecodeOptions{})
		if err != nil || !Equal(plain, v) || HasAnnotations(plain) {
			t.Fatalf("decode without annotations: %v, %v", plain, err)
		}
		// Annotated round trip, and the annotated encoding is a fixed point.
		enc, err := EncodeBinary(v, EncodeOptions{Annotations: true})
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		v2, err := DecodeBinary(enc, opts)
		if err != nil || !binAnnEqual(v, v2) {
			t.Fatalf("decode(encode(v)) = %v, %v; want %v", v2, err, v)
		}
		if enc2, _ := EncodeBinary(v2, EncodeOptions{Annotations: true}); !bytes.Equal(enc, enc2) {
			t.Fatalf("annotated encoding not idempotent:\n% X\n% X", enc, enc2)
		}
		// Canonical round trip and idempotence.
		canon := EncodeCanonical(v)
		c2, err := DecodeBinary(canon, DecodeOptions{})
		if err != nil || !Equal(c2, v) {
			t.Fatalf("decode(canonical(v)) = %v, %v", c2, err)
		}
		if canon2 := EncodeCanonical(c2); !bytes.Equal(canon, canon2) {
			t.Fatalf("canonical encoding not idempotent:\n% X\n% X", canon, canon2)
		}
		if !bytes.Equal(EncodeCanonical(plain), canon) {
			t.Fatal("canonical encoding depends on annotations")
		}
		if Compare(v, c2) != 0 || Hash(v) != Hash(c2) {
			t.Fatal("order or hash disagrees with equality")
		}
	})
}

// binCheckChunked feeds data to a Decoder byte by byte and in pseudo-random
// chunks, and checks each run against decoding the first value of data with
// the whole-buffer decoder.
func binCheckChunked(t *testing.T, data []byte, opts DecodeOptions) {
	t.Helper()
	// What the first value of data is, read by the whole-buffer decoder.
	var ref binDecoder
	ref.init(opts)
	ref.buf = data
	want, wantErr := ref.value(0)
	if len(data) == 0 {
		wantErr = ErrUnexpectedEOF // the Decoder just waits
	}
	h := fnv.New64a()
	h.Write(data)
	seed := h.Sum64()
	for _, chunking := range []string{"bytes", "random"} {
		dec := NewDecoder(opts)
		var got Value
		var gotErr error
		rest := data
		for len(rest) > 0 && got == nil && gotErr == nil {
			n := 1
			if chunking == "random" {
				seed = seed*6364136223846793005 + 1442695040888963407
				n = 1 + int(seed>>33)%17
			}
			n = min(n, len(rest))
			dec.Write(rest[:n])
			rest = rest[n:]
			got, gotErr = dec.Next()
			if errors.Is(gotErr, ErrUnexpectedEOF) {
				gotErr = nil
			}
		}
		if got == nil && gotErr == nil {
			// Everything written and no verdict yet: the decoder waits
			// for more bytes, and End must give the whole-buffer verdict.
			gotErr = dec.End()
			if gotErr == nil && len(data) > 0 {
				t.Fatalf("%s: End reports a value boundary with %d bytes pending", chunking, dec.Buffered())
			}
			if errors.Is(gotErr, ErrUnexpectedEOF) {
				gotErr = nil
			}
		}
		switch {
		case wantErr == nil:
			if got == nil || !binAnnEqual(got, want) {
				t.Fatalf("%s: decoder gave %v, %v; want %v", chunking, got, gotErr, want)
			}
			if int(dec.Offset()) != ref.pos {
				t.Fatalf("%s: decoder consumed %d bytes, want %d", chunking, dec.Offset(), ref.pos)
			}
		case errors.Is(wantErr, ErrUnexpectedEOF):
			if got != nil || gotErr != nil {
				t.Fatalf("%s: decoder gave %v, %v on an incomplete value", chunking, got, gotErr)
			}
		default:
			var we, ge *Error
			errors.As(wantErr, &we)
			if !errors.As(gotErr, &ge) || binClass(ge) != binClass(we) || ge.Pos.Offset != we.Pos.Offset {
				t.Fatalf("%s: decoder gave %v, %v; want error %v", chunking, got, gotErr, wantErr)
			}
		}
	}
}
