package listener

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// ---- a small WebSocket client ----

type wsClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialWS(tb testing.TB, port int, path string) *wsClient {
	tb.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", path, key)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		tb.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
	}
	return &wsClient{c: c, br: br}
}

// clientFrame encodes a masked client frame.
func clientFrame(op byte, fin bool, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	mask := [4]byte{0x11, 0x22, 0x33, 0x44}
	var out []byte
	switch n := len(payload); {
	case n <= 125:
		out = []byte{b0, 0x80 | byte(n)}
	case n <= 0xFFFF:
		out = binary.BigEndian.AppendUint16([]byte{b0, 0x80 | 126}, uint16(n))
	default:
		out = binary.BigEndian.AppendUint64([]byte{b0, 0x80 | 127}, uint64(n))
	}
	out = append(out, mask[:]...)
	for i, c := range payload {
		out = append(out, c^mask[i&3])
	}
	return out
}

func (w *wsClient) send(tb testing.TB, op byte, payload []byte) {
	tb.Helper()
	if _, err := w.c.Write(clientFrame(op, true, payload)); err != nil {
		tb.Fatal(err)
	}
}

// recv reads one (unmasked) server frame.
func (w *wsClient) recv() (byte, []byte, error) {
	h, err := readFrameHeader(w.br)
	if err != nil {
		return 0, nil, err
	}
	if h.masked || !h.fin {
		return 0, nil, fmt.Errorf("server frame masked=%v fin=%v", h.masked, h.fin)
	}
	p := make([]byte, h.length)
	_, err = io.ReadFull(w.br, p)
	return h.opcode, p, err
}

// packet encodes a relay packet written in text syntax, `#:x` standing
// for the WireRef x.
func packet(tb testing.TB, text string, syn relay.Syntax) []byte {
	tb.Helper()
	v, err := preserves.ParseTextOptions([]byte(text), preserves.TextOptions{Embedded: func(v preserves.Value) (any, error) { return v, nil }})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := relay.AppendPacket(nil, v, syn)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func decodePacketText(tb testing.TB, b []byte) string {
	tb.Helper()
	v, err := preserves.DecodeBinary(b, preserves.DecodeOptions{Embedded: func(v preserves.Value) (any, error) { return v, nil }})
	if err != nil {
		tb.Fatalf("%x: %v", b, err)
	}
	return preserves.FormatText(v)
}

func startTCP(tb testing.TB, s *server, httpd *dataspace.Ref) int {
	tb.Helper()
	port := freePort(tb)
	name := tcpName(s.gk, port)
	full := name
	if httpd != nil {
		r := name.(*preserves.Record)
		full = preserves.NewRecord(internalservices.LabelRelayListener, r.Fields[0], r.Fields[1], dataspace.Embed(httpd))
	}
	s.do(func(t *dataspace.Turn) { t.Assert(s.cfg, services.RunService(full)) })
	waitFor(tb, "ready", func() bool { return s.has(state(name, services.StateReady)) })
	return port
}

// Scenario 60, WebSocket part: binary frames carry the relay (one packet
// per frame each way), pings are answered, and a text frame ends the
// session with a close frame.
func TestScenario60WebSocket(t *testing.T) {
	s := newServer(t)
	port := startTCP(t, s, nil)
	ws := dialWS(t, port, "/any/path")

	// Two packets in two frames; each reply comes back as its own frame.
	ws.send(t, opBinary, packet(t, `[[0 <A <resolve <frob 1> #:[0 1]> 0>]]`, relay.Binary))
	ws.send(t, opPing, []byte("hi"))
	ws.send(t, opBinary, packet(t, `[[0 <A <resolve <frob 2> #:[0 2]> 1>]]`, relay.Binary))
	var replies []string
	pong := false
	for len(replies) < 2 {
		op, p, err := ws.recv()
		if err != nil {
			t.Fatalf("after %v: %v", replies, err)
		}
		switch op {
		case opBinary:
			replies = append(replies, decodePacketText(t, p))
		case opPong:
			pong = string(p) == "hi"
		default:
			t.Fatalf("unexpected opcode %#x %x", op, p)
		}
	}
	want := []string{`[[1 <A <error unsupported> 0>]]`, `[[2 <A <error unsupported> 1>]]`}
	if replies[0] != want[0] || replies[1] != want[1] || !pong {
		t.Fatalf("replies %q pong %v", replies, pong)
	}

	// A text frame ends the session: close 1003, then EOF.
	ws.send(t, opText, []byte(`[[0 <A <resolve <frob 3> #:[0 3]> 2>]]`))
	op, p, err := ws.recv()
	if err != nil || op != opClose || len(p) != 2 || binary.BigEndian.Uint16(p) != closeUnsupported {
		t.Fatalf("after text frame: %#x %x %v", op, p, err)
	}
	if _, _, err := ws.recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("session not closed: %v", err)
	}
}

// A close frame from the client is echoed and ends the session.
func TestWebSocketCloseHandshake(t *testing.T) {
	s := newServer(t)
	port := startTCP(t, s, nil)
	ws := dialWS(t, port, "/")
	ws.send(t, opClose, []byte{0x03, 0xE8})
	op, p, err := ws.recv()
	if err != nil || op != opClose || !bytes.Equal(p, []byte{0x03, 0xE8}) {
		t.Fatalf("close reply %#x %x %v", op, p, err)
	}
	if _, _, err := ws.recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("session not closed: %v", err)
	}
}

// Scenario 60, HTTP part: without an HTTPD space every plain request gets
// 503 with an empty body, over one keep-alive connection.
func TestScenario60PlainHTTPWithoutHTTPD(t *testing.T) {
	s := newServer(t)
	port := startTCP(t, s, nil)
	baseline := s.sys.Stats(0).Actors
	tr := &http.Transport{}
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i := 0; i < 2; i++ {
		resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/x", port))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || len(body) != 0 {
			t.Fatalf("reply %d %q", resp.StatusCode, body)
		}
	}
	// A bad handshake is refused over HTTP, not upgraded.
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Version", "8")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString([]byte("0123456789abcdef")))
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Sec-WebSocket-Version") != "13" {
		t.Fatalf("old version: %d %v", resp.StatusCode, resp.Header)
	}
	// Connection actors live while their keep-alive connections do, and
	// stop when they close.
	if n := s.sys.Stats(0).Actors; n <= baseline {
		t.Fatalf("%d actors with open connections, %d before", n, baseline)
	}
	tr.CloseIdleConnections()
	waitFor(t, "connection actor gone", func() bool { return s.sys.Stats(0).Actors == baseline })
}

// fakeHTTPD is an HTTPD dataspace in the test server with a responder
// observing `<request REQ RES>`.
type fakeHTTPD struct {
	ref *dataspace.Ref
	mu  sync.Mutex
	req []preserves.Value
}

func (f *fakeHTTPD) requests() []preserves.Value {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]preserves.Value(nil), f.req...)
}

func newFakeHTTPD(s *server, respond func(t *dataspace.Turn, req preserves.Value, res *dataspace.Ref)) *fakeHTTPD {
	f := &fakeHTTPD{}
	s.do(func(t *dataspace.Turn) {
		f.ref = t.Create(dataspace.NewDataspace())
		t.During(f.ref, pattern.Rec(httpschema.LabelRequest, pattern.Capture(), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			f.mu.Lock()
			f.req = append(f.req, caps[0])
			f.mu.Unlock()
			res, _ := dataspace.RefOf(caps[1])
			respond(t, caps[0], res)
			return nil
		})
	})
	return f
}

func msg(label string, fields ...preserves.Value) preserves.Value {
	return preserves.Rec(label, fields...)
}

// The request is translated exactly as §7.2's table says, and the
// response is streamed from status/header/chunk/done; `<http-listener
// PORT>` is asserted to HTTPD while the listener runs.
func TestHTTPRequestTranslationAndResponse(t *testing.T) {
	s := newServer(t)
	f := newFakeHTTPD(s, func(t *dataspace.Turn, req preserves.Value, res *dataspace.Ref) {
		t.Message(res, msg("status", preserves.Int(201), preserves.String("Created")))
		t.Message(res, msg("header", preserves.Symbol("x-a"), preserves.String("1")))
		t.Message(res, msg("header", preserves.Symbol("x-a"), preserves.String("2")))
		t.Message(res, msg("header", preserves.Symbol("content-type"), preserves.String("text/plain")))
		t.Message(res, msg("chunk", preserves.String("hello ")))
		t.Message(res, msg("status", preserves.Int(404), preserves.String("ignored")))
		t.Message(res, msg("done", preserves.ByteString("world")))
	})
	listening := &sink{}
	s.do(func(t *dataspace.Turn) {
		t.Assert(f.ref, dataspace.Observe(pattern.Rec(httpschema.LabelHttpListener, pattern.Capture()), t.Create(listening)))
	})
	port := startTCP(t, s, f.ref)
	waitFor(t, "http-listener", func() bool { return listening.hasAssert(fmt.Sprintf("[%d]", port)) })

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/a%%20b/c/?x=1&x=2&y&&z=p=q&y=3", port), strings.NewReader("body!"))
	req.Host = "example.org:8080"
	req.Header.Add("X-Rep", "first")
	req.Header.Add("X-Rep", "last")
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(body) != "hello world" || resp.Header.Get("X-A") != "2" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("response %d %q %v", resp.StatusCode, body, resp.Header)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests %v", reqs)
	}
	r := reqs[0].(*preserves.Record)
	got := preserves.FormatText(preserves.NewRecord(r.Label, append(preserves.Sequence{preserves.Int(0)}, r.Fields[1:]...)...))
	want := fmt.Sprintf(`<http-request 0 "example.org" %d post ["a%%20b" "c" ""] {accept-encoding: "gzip", content-length: "5", host: "example.org:8080", user-agent: "Go-http-client/1.1", x-rep: "last"} {x: ["1" "2"], y: ["3"], z: ["p=q"]} #"body!">`, port)
	if got != want {
		t.Fatalf("translation\n got %s\nwant %s", got, want)
	}

	// Sequence numbers increase per request.
	resp, err = cl.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqs = f.requests()
	n0 := reqs[0].(*preserves.Record).Fields[0].(preserves.Int)
	n1 := reqs[1].(*preserves.Record).Fields[0].(preserves.Int)
	if n1 <= n0 {
		t.Fatalf("sequence numbers %d then %d", n0, n1)
	}
	if p := reqs[1].(*preserves.Record).Fields[4]; preserves.FormatText(p) != `[""]` {
		t.Fatalf("path of / is %s", p)
	}
}

// An invalid status aborts the connection; a responder that vanishes
// (here: HTTPD rejects the request assertion) yields 500.
func TestHTTPResponseFailures(t *testing.T) {
	s := newServer(t)
	f := newFakeHTTPD(s, func(t *dataspace.Turn, req preserves.Value, res *dataspace.Ref) {
		t.Message(res, msg("status", preserves.Int(42), preserves.String("bad")))
		t.Message(res, msg("done", preserves.String("never")))
	})
	port := startTCP(t, s, f.ref)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	if resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/", port)); err == nil {
		resp.Body.Close()
		t.Fatalf("invalid status not aborted: %d", resp.StatusCode)
	}

	var closed *dataspace.Ref
	s.do(func(t *dataspace.Turn) {
		closed, _ = f.ref.Attenuate(caveat.Reject{Pattern: caveat.PDiscard{}})
	})
	port2 := startTCP(t, s, closed)
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/", port2))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || len(body) != 0 {
		t.Fatalf("vanished responder: %d %q", resp.StatusCode, body)
	}
}

// wsConn.Write splits what the relay writer hands over into one frame per
// packet, binary and text alike.
func TestWebSocketWriteOneFramePerPacket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ws := newWSConn(a, bufio.NewReader(a))
	p1 := packet(t, `[[0 <A <x "a\nb"> 0>]]`, relay.Binary)
	p2 := packet(t, `[[0 <R 0>]]`, relay.Binary)
	t1 := packet(t, `[[0 <A "new\nline" 1>]]`, relay.Text)
	t2 := packet(t, `[[0 <R 1>]]`, relay.Text)
	go func() {
		ws.Write(append(append([]byte(nil), p1...), p2...))
		ws.Write(append(append([]byte(nil), t1...), t2...))
	}()
	br := bufio.NewReader(b)
	for _, want := range [][]byte{p1, p2, t1, t2} {
		h, err := readFrameHeader(br)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, h.length)
		io.ReadFull(br, got)
		if h.opcode != opBinary || !h.fin || !bytes.Equal(got, want) {
			t.Fatalf("frame op %#x fin %v %q, want %q", h.opcode, h.fin, got, want)
		}
	}
}

// Framing errors end the session with the right close code and a
// relay.ProtocolError naming the class.
func TestWebSocketFramingErrors(t *testing.T) {
	cases := []struct {
		name  string
		in    []byte
		class error
		code  uint16
	}{
		{"unmasked", []byte{0x82, 0x01, 'x'}, ErrWSProtocol, closeProtocol},
		{"text", clientFrame(opText, true, []byte("x")), ErrWSText, closeUnsupported},
		{"rsv", append([]byte{0xC2}, clientFrame(opBinary, true, nil)[1:]...), ErrWSProtocol, closeProtocol},
		{"long ping", clientFrame(opPing, true, make([]byte, 126)), ErrWSProtocol, closeProtocol},
		{"stray continuation", clientFrame(opContinuation, true, []byte("x")), ErrWSProtocol, closeProtocol},
		{"opcode 3", clientFrame(3, true, nil), ErrWSProtocol, closeProtocol},
		{"too big", []byte{0x82, 0xFF, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 2, 3, 4}, ErrWSTooBig, closeTooBig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := &bytes.Buffer{}
			ws := newWSConn(&memConn{w: out}, bufio.NewReader(bytes.NewReader(c.in)))
			_, err := io.ReadAll(ws)
			var fe *relay.ProtocolError
			if !errors.Is(err, c.class) || !errors.As(err, &fe) || fe.Offset != 0 {
				t.Fatalf("error %v", err)
			}
			if b := out.Bytes(); len(b) != 4 || b[0] != 0x88 || binary.BigEndian.Uint16(b[2:]) != c.code {
				t.Fatalf("close frame %x", b)
			}
		})
	}
	// Fragmented binary messages are reassembled into the stream.
	in := append(clientFrame(opBinary, false, []byte("ab")), clientFrame(opContinuation, true, []byte("cd"))...)
	got, err := io.ReadAll(newWSConn(&memConn{w: io.Discard}, bufio.NewReader(bytes.NewReader(in))))
	if err != nil || string(got) != "abcd" {
		t.Fatalf("fragments: %q %v", got, err)
	}
}

// memConn is a net.Conn whose writes go to w (reads are not used).
type memConn struct {
	net.Conn
	w io.Writer
}

func (m *memConn) Write(p []byte) (int, error)       { return m.w.Write(p) }
func (m *memConn) SetWriteDeadline(time.Time) error  { return nil }
func (m *memConn) Close() error                      { return nil }
func (m *memConn) SetDeadline(time.Time) error       { return nil }
func (m *memConn) RemoteAddr() net.Addr              { return &net.TCPAddr{} }
func (m *memConn) LocalAddr() net.Addr               { return &net.TCPAddr{} }
func (m *memConn) SetReadDeadline(t time.Time) error { return nil }
func (m *memConn) Read(p []byte) (int, error)        { return 0, io.EOF }

// A request whose client goes away is withdrawn from HTTPD; an invalid
// header from the responder aborts the connection.
func TestHTTPClientGoneAndInvalidHeader(t *testing.T) {
	s := newServer(t)
	var mu sync.Mutex
	live := 0
	f := newFakeHTTPD(s, func(t *dataspace.Turn, req preserves.Value, res *dataspace.Ref) {
		mu.Lock()
		live++
		mu.Unlock()
		t.OnStop(func(*dataspace.Turn) error {
			mu.Lock()
			live--
			mu.Unlock()
			return nil
		})
		path := preserves.FormatText(req.(*preserves.Record).Fields[4])
		if path == `["bad-header"]` {
			t.Message(res, msg("header", preserves.Symbol("x-bad"), preserves.String("a\r\nb")))
			t.Message(res, msg("done", preserves.String("never")))
		}
		// Otherwise: never answer.
	})
	port := startTCP(t, s, f.ref)
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, "request asserted", func() bool { mu.Lock(); defer mu.Unlock(); return live == 1 })
	c.Close()
	waitFor(t, "request withdrawn", func() bool { mu.Lock(); defer mu.Unlock(); return live == 0 })

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	if resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/bad-header", port)); err == nil {
		resp.Body.Close()
		t.Fatalf("invalid header not aborted: %d %v", resp.StatusCode, resp.Header)
	}
	waitFor(t, "aborted request withdrawn", func() bool { mu.Lock(); defer mu.Unlock(); return live == 0 })
}

// A body piece keeps its producer's debt until it is written to the
// client, so a producer that waits on its account (the static file
// server) goes at the client's pace; once the client reads, every piece
// is written and the debt is repaid.
func TestHTTPBodyDebtHeldUntilWritten(t *testing.T) {
	s := newServer(t)
	resCh := make(chan *dataspace.Ref, 1)
	f := newFakeHTTPD(s, func(t *dataspace.Turn, req preserves.Value, res *dataspace.Ref) { resCh <- res })
	port := startTCP(t, s, f.ref)
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	var res *dataspace.Ref
	select {
	case res = <-resCh:
	case <-time.After(10 * time.Second):
		t.Fatal("no request")
	}
	// Three 8 MiB pieces: more than loopback socket buffers hold while the
	// client reads nothing.
	piece := preserves.ByteString(bytes.Repeat([]byte("x"), 8<<20))
	body, marker := dataspace.NewAccount(), dataspace.NewAccount()
	s.fr.ActivateAccount(body, func(t *dataspace.Turn) error {
		t.Message(res, msg("chunk", piece))
		t.Message(res, msg("chunk", piece))
		t.Message(res, msg("done", piece))
		return nil
	})
	// A bodiless message after them, on its own account: once it is
	// repaid, the connection actor has handled the pieces too.
	s.fr.ActivateAccount(marker, func(t *dataspace.Turn) error {
		t.Message(res, msg("header", preserves.Symbol("x-late"), preserves.String("ignored")))
		return nil
	})
	waitFor(t, "the pieces handled", func() bool { return marker.Debt() == 0 })
	if d := body.Debt(); d < 2 {
		t.Fatalf("debt %d while the client reads nothing: pieces were repaid before they were written", d)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != 3*8<<20 {
		t.Fatalf("read %d bytes", n)
	}
	waitFor(t, "the debt repaid", func() bool { return body.Debt() == 0 })
}
