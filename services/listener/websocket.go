package listener

// Server side of RFC 6455 (WebSocket), just enough to carry the Syndicate
// relay (services spec §7.2): the opening handshake, and a connection type
// whose Read yields the payload bytes of binary frames and whose Write sends
// each relay packet as one binary frame.
//
// Written here rather than taken from golang.org/x/net/websocket: that
// module is not among the project's dependencies, and its Conn hides frame
// boundaries on write (a Write is one frame, but the relay's writer hands
// over several packets in one Write) and answers pings itself, so the
// packet-per-frame rule and the text-frame rule would need as much code
// around it as the framing below.

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// wsGUID is the fixed suffix of the accept-key computation (RFC 6455 §1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Frame opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// Close status codes sent when the server ends a session (RFC 6455 §7.4.1).
const (
	closeNormal      = 1000
	closeProtocol    = 1002
	closeUnsupported = 1003
	closeTooBig      = 1009
)

// maxWSFrame bounds one inbound frame's payload: the relay's own packet
// bound, since a frame carries one packet.
const maxWSFrame = 16 << 20

// Sentinel errors of WebSocket sessions, tested with errors.Is.
var (
	// ErrWSProtocol: the peer broke RFC 6455 framing rules.
	ErrWSProtocol = errors.New("listener: websocket protocol error")
	// ErrWSText: the peer sent a text frame, which ends the session
	// (services spec §7.2: only binary frames carry packets).
	ErrWSText = errors.New("listener: websocket text frame")
	// ErrWSTooBig: a frame's payload exceeds the bound.
	ErrWSTooBig = errors.New("listener: websocket frame too big")
)

// isWebSocketUpgrade reports whether r asks for a WebSocket upgrade (any
// path): an `Upgrade: websocket` header with `Connection: upgrade`.
func isWebSocketUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Upgrade", "websocket") && headerHasToken(r.Header, "Connection", "upgrade")
}

// headerHasToken reports whether a comma-separated header lists tok
// (case-insensitively).
func headerHasToken(h http.Header, name, tok string) bool {
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), tok) {
				return true
			}
		}
	}
	return false
}

// wsAccept checks the rest of the opening handshake and returns the
// Sec-WebSocket-Accept value, or the HTTP status to refuse with.
func wsAccept(r *http.Request) (string, int) {
	if r.Method != http.MethodGet || !r.ProtoAtLeast(1, 1) {
		return "", http.StatusBadRequest
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return "", http.StatusUpgradeRequired
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		return "", http.StatusBadRequest
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(sum[:]), 0
}

// wsConn is an accepted WebSocket session as an io.ReadWriteCloser for the
// relay. Read is called by one goroutine (the relay's reader); Write by
// another (the relay's writer); both may write frames (Read answers pings
// and closes), so frame writes are serialised by wmu.
type wsConn struct {
	c  net.Conn
	br *bufio.Reader

	// Reader state, owned by the reading goroutine.
	off       int64  // stream offset of the next unread byte
	remaining uint64 // payload bytes left in the current data frame
	mask      [4]byte
	maskPos   int
	inMessage bool // a fragmented binary message is open
	err       error

	wmu       sync.Mutex
	wbuf      []byte
	closeSent bool
	closeOnce sync.Once
}

func newWSConn(c net.Conn, br *bufio.Reader) *wsConn {
	return &wsConn{c: c, br: br}
}

// Read returns payload bytes of binary frames (and their continuations).
// A close frame is answered and ends the stream (io.EOF); pings are
// answered with pongs; pongs are ignored; a text frame or any framing
// error ends the session with a close frame and an error.
func (w *wsConn) Read(p []byte) (int, error) {
	for w.err == nil {
		if w.remaining > 0 {
			if len(p) == 0 {
				return 0, nil
			}
			n := len(p)
			if uint64(n) > w.remaining {
				n = int(w.remaining)
			}
			n, err := w.br.Read(p[:n])
			w.unmask(p[:n])
			w.remaining -= uint64(n)
			w.off += int64(n)
			if err != nil && n == 0 {
				return 0, w.fail(eofInFrame(err))
			}
			return n, nil
		}
		if err := w.nextFrame(); err != nil {
			return 0, w.fail(err)
		}
	}
	return 0, w.err
}

// fail records the session's end: io.EOF stays as it is (and a truncated
// frame becomes io.ErrUnexpectedEOF); a framing error is answered with a
// close frame naming the reason.
func (w *wsConn) fail(err error) error {
	if w.err != nil {
		return w.err
	}
	var fe *relay.ProtocolError
	if errors.As(err, &fe) {
		code := closeProtocol
		switch {
		case errors.Is(err, ErrWSText):
			code = closeUnsupported
		case errors.Is(err, ErrWSTooBig):
			code = closeTooBig
		}
		w.sendClose(code)
	}
	w.err = err
	return err
}

func (w *wsConn) unmask(b []byte) {
	for i := range b {
		b[i] ^= w.mask[w.maskPos&3]
		w.maskPos++
	}
}

// frameHeader is a decoded frame header (RFC 6455 §5.2).
type frameHeader struct {
	fin    bool
	rsv    byte
	opcode byte
	masked bool
	mask   [4]byte
	length uint64
	size   int // bytes the header occupied
}

// readFrameHeader decodes one frame header from r.
func readFrameHeader(r io.Reader) (frameHeader, error) {
	var h frameHeader
	var b [8]byte
	if _, err := io.ReadFull(r, b[:2]); err != nil {
		return h, err
	}
	h.size = 2
	h.fin = b[0]&0x80 != 0
	h.rsv = b[0] & 0x70
	h.opcode = b[0] & 0x0F
	h.masked = b[1]&0x80 != 0
	switch n := b[1] & 0x7F; n {
	case 126:
		if _, err := io.ReadFull(r, b[:2]); err != nil {
			return h, eofInFrame(err)
		}
		h.size += 2
		h.length = uint64(binary.BigEndian.Uint16(b[:2]))
	case 127:
		if _, err := io.ReadFull(r, b[:8]); err != nil {
			return h, eofInFrame(err)
		}
		h.size += 8
		h.length = binary.BigEndian.Uint64(b[:8])
	default:
		h.length = uint64(n)
	}
	if h.masked {
		if _, err := io.ReadFull(r, h.mask[:]); err != nil {
			return h, eofInFrame(err)
		}
		h.size += 4
	}
	return h, nil
}

// eofInFrame turns a clean EOF inside a frame header into a truncation.
func eofInFrame(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// nextFrame reads frame headers (handling control frames entirely) until a
// binary or continuation frame's payload is ready to be read.
func (w *wsConn) nextFrame() error {
	at := w.off
	h, err := readFrameHeader(w.br)
	if err != nil {
		return err
	}
	w.off += int64(h.size)
	bad := func(class error, format string, args ...any) error {
		// The relay's error type: a framing error is a protocol error of
		// the connection, at the offending frame's first byte.
		return &relay.ProtocolError{Offset: at, Msg: "websocket frame: " + fmt.Sprintf(format, args...), Err: class}
	}
	switch {
	case h.rsv != 0:
		return bad(ErrWSProtocol, "reserved bits set without a negotiated extension")
	case !h.masked:
		return bad(ErrWSProtocol, "client frame is not masked")
	case h.opcode >= 0x8 && (!h.fin || h.length > 125):
		return bad(ErrWSProtocol, "fragmented or oversized control frame")
	case h.length > maxWSFrame:
		return bad(ErrWSTooBig, "payload of %d bytes exceeds %d", h.length, maxWSFrame)
	}
	switch h.opcode {
	case opBinary, opContinuation:
		if h.opcode == opBinary && w.inMessage {
			return bad(ErrWSProtocol, "new message inside a fragmented one")
		}
		if h.opcode == opContinuation && !w.inMessage {
			return bad(ErrWSProtocol, "continuation frame outside a message")
		}
		w.inMessage = !h.fin
		w.remaining, w.mask, w.maskPos = h.length, h.mask, 0
		return nil
	case opText:
		return bad(ErrWSText, "text frame")
	case opPing, opPong, opClose:
		payload := make([]byte, h.length)
		if _, err := io.ReadFull(w.br, payload); err != nil {
			return eofInFrame(err)
		}
		w.off += int64(h.length)
		w.mask, w.maskPos = h.mask, 0
		w.unmask(payload)
		switch h.opcode {
		case opPing:
			return w.writeFrame(opPong, payload)
		case opClose:
			// Echo the peer's status code (RFC 6455 §5.5.1), then end.
			code := closeNormal
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
			}
			w.sendClose(code)
			return io.EOF
		}
		return nil
	default:
		return bad(ErrWSProtocol, "unknown opcode %#x", h.opcode)
	}
}

// appendFrameHeader appends an unmasked server frame header.
func appendFrameHeader(dst []byte, op byte, n int) []byte {
	dst = append(dst, 0x80|op)
	switch {
	case n <= 125:
		dst = append(dst, byte(n))
	case n <= 0xFFFF:
		dst = append(dst, 126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return dst
}

// writeFrame sends one complete frame.
func (w *wsConn) writeFrame(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.closeSent {
		return net.ErrClosed
	}
	w.wbuf = append(appendFrameHeader(w.wbuf[:0], op, len(payload)), payload...)
	_, err := w.c.Write(w.wbuf)
	return err
}

// sendClose sends a close frame once (best effort, bounded in time so a
// peer that does not read cannot hold the caller).
func (w *wsConn) sendClose(code int) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.closeSent {
		return
	}
	w.closeSent = true
	var body [2]byte
	binary.BigEndian.PutUint16(body[:], uint16(code))
	_ = w.c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = w.c.Write(append(appendFrameHeader(nil, opClose, 2), body[:]...))
}

// Write sends p, which holds whole relay packets, as one binary frame per
// packet (services spec §7.2). The relay's writer hands over everything
// queued since its last write, so p is split at packet boundaries; the
// frames still go out in one system call.
func (w *wsConn) Write(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.closeSent {
		return 0, net.ErrClosed
	}
	buf := w.wbuf[:0]
	for rest := p; len(rest) > 0; {
		n := packetExtent(rest)
		if n <= 0 {
			n = len(rest) // not a packet we can delimit: send what is left whole
		}
		buf = append(appendFrameHeader(buf, opBinary, n), rest[:n]...)
		rest = rest[n:]
	}
	w.wbuf = buf
	if _, err := w.c.Write(buf); err != nil {
		return 0, err
	}
	if cap(w.wbuf) > 1<<20 {
		w.wbuf = nil
	}
	return len(p), nil
}

// Close ends the session: a normal close frame if none was sent, then the
// connection is closed (unblocking Read).
func (w *wsConn) Close() error {
	var err error
	w.closeOnce.Do(func() {
		w.sendClose(closeNormal)
		err = w.c.Close()
	})
	return err
}

// packetExtent returns the length of the first relay packet in b: a text
// packet ends with its newline (the compact text writer escapes newlines
// inside strings and symbols); a binary packet is one Preserves value,
// delimited by preserves.Scanner. It returns -1 when b does not start with
// a complete packet. It only delimits the relay's own output; the peer's
// decoder validates.
func packetExtent(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	if !preserves.IsBinaryStart(b[0]) {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return i + 1
		}
		return -1
	}
	s := preserves.Scanner{MaxDepth: math.MaxInt, MaxLength: math.MaxInt}
	s.Begin(b[0])
	n, done, err := s.Scan(b, 0)
	if err != nil || !done {
		return -1
	}
	return n
}
