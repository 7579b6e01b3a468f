package listener

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// FuzzWSFrameReader feeds arbitrary client bytes to the WebSocket reader:
// no panics, never more payload out than bytes in, every failure is EOF, a
// truncation or a relay.ProtocolError, and whatever the server wrote back is a
// sequence of well-formed unmasked frames.
func FuzzWSFrameReader(f *testing.F) {
	f.Add(clientFrame(opBinary, true, []byte("hello")))
	f.Add(append(clientFrame(opBinary, false, []byte("ab")), clientFrame(opContinuation, true, []byte("cd"))...))
	f.Add(append(clientFrame(opPing, true, []byte("p")), clientFrame(opClose, true, []byte{3, 232})...))
	f.Add(clientFrame(opText, true, []byte("t")))
	f.Add(clientFrame(opBinary, true, make([]byte, 300)))
	f.Add([]byte{0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0x10, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		out := &bytes.Buffer{}
		ws := newWSConn(&memConn{w: out}, bufio.NewReader(bytes.NewReader(in)))
		got, err := io.ReadAll(ws)
		if len(got) > len(in) {
			t.Fatalf("%d payload bytes from %d input bytes", len(got), len(in))
		}
		var fe *relay.ProtocolError
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &fe) {
			t.Fatalf("unexpected error %v", err)
		}
		if fe != nil && (fe.Offset < 0 || fe.Offset >= int64(len(in))) {
			t.Fatalf("offset %d outside input", fe.Offset)
		}
		br := bytes.NewReader(out.Bytes())
		for br.Len() > 0 {
			h, err := readFrameHeader(br)
			if err != nil || h.masked || !h.fin || h.length > uint64(br.Len()) {
				t.Fatalf("server wrote a bad frame %+v %v", h, err)
			}
			br.Seek(int64(h.length), io.SeekCurrent)
		}
	})
}

// FuzzTranslateRequest parses arbitrary bytes as an HTTP request and
// translates it: no panics; success gives an `<http-request>` with eight
// fields, a lower-case method, a path that rejoins to the request path,
// and header values that are visible ASCII.
func FuzzTranslateRequest(f *testing.F) {
	f.Add("GET /d HTTP/1.1\r\nHost: h:9001\r\n\r\n")
	f.Add("POST /a/b/?x=1&y&&z=a=b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
	f.Add("GET http://h/p%20q HTTP/1.1\r\nHost: h\r\nX: \xff\r\n\r\n")
	f.Add("OPTIONS * HTTP/1.1\r\nHost: [::1]:80\r\n\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(s)))
		if err != nil {
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		v, err := translateRequest(r, body, 9001, 7)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v", err)
			}
			return
		}
		rec := v.(*preserves.Record)
		if len(rec.Fields) != 8 || rec.Fields[0] != preserves.Int(7) || rec.Fields[2] != preserves.Int(9001) {
			t.Fatalf("shape %v", v)
		}
		if m := string(rec.Fields[3].(preserves.Symbol)); m != strings.ToLower(r.Method) {
			t.Fatalf("method %q", m)
		}
		var parts []string
		for _, e := range rec.Fields[4].(preserves.Sequence) {
			parts = append(parts, string(e.(preserves.String)))
		}
		if got := "/" + strings.Join(parts, "/"); got != requestPath(r) {
			t.Fatalf("path %q rejoins to %q", requestPath(r), got)
		}
		for _, e := range rec.Fields[5].(*preserves.Dictionary).Entries() {
			if !visibleASCII(string(e.Value.(preserves.String))) {
				t.Fatalf("header value %q", e.Value)
			}
		}
	})
}

// FuzzPacketExtent checks the outbound packet delimiter against the
// decoder: the canonical encoding of any decodable value is delimited
// exactly, alone or followed by another packet.
func FuzzPacketExtent(f *testing.F) {
	f.Add([]byte{0xB5, 0xB5, 0xB0, 0x01, 0x00, 0xB4, 0xB3, 0x01, 'A', 0x84, 0x84, 0x84})
	f.Add([]byte{0x85, 0xB1, 0x01, 'c', 0x86, 0xB5, 0x84})
	f.Add([]byte{0x87, 0x08, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		_ = packetExtent(in) // never panics on garbage
		v, err := preserves.DecodeBinary(in, preserves.DecodeOptions{Annotations: true, Embedded: func(v preserves.Value) (any, error) { return v, nil }})
		if err != nil {
			return
		}
		enc, err := preserves.EncodeBinary(v, preserves.EncodeOptions{Annotations: true})
		if err != nil || len(enc) == 0 || enc[0] < 0x80 {
			return
		}
		if n := packetExtent(enc); n != len(enc) {
			t.Fatalf("extent %d of %d-byte %x", n, len(enc), enc)
		}
		if n := packetExtent(append(append([]byte(nil), enc...), enc...)); n != len(enc) {
			t.Fatalf("extent %d of doubled %d-byte %x", n, len(enc), enc)
		}
	})
}
