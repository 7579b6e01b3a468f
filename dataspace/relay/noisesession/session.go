package noisesession

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/flynn/noise"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// maxBuffered bounds decrypted bytes the local relay has not read yet: a
// peer outrunning it ends the session instead of growing memory without
// limit (twice the relay's default packet limit).
const maxBuffered = 32 << 20

// errClosed: the session ended before a write could be sent.
var errClosed = errors.New("noisesession: session closed")

// Options configure a Session.
type Options struct {
	// Relay configures the relay run once the handshake completes: a
	// responder typically exports its target as InitialRef, an initiator
	// sets ImportInitial to use the responder's oid 0.
	Relay relay.Options
	// OnReady, if set, runs in the session facet once the relay has
	// started; peer is the proxy for the peer's oid 0 when
	// Relay.ImportInitial is set, nil otherwise.
	OnReady func(t *dataspace.Turn, peer *dataspace.Ref)
	// OnEnd, if set, runs once when the session ends: err is nil when
	// the owner ended it with End(t, nil) (the peer's retraction, say),
	// and says why otherwise. It usually stops the session facet, which
	// stops the relay and retracts everything asserted through it.
	OnEnd func(t *dataspace.Turn, err error)
}

// Session drives one side of a Noise session: the handshake (complete
// packets only, each exactly one handshake message with an empty
// payload), then decryption of inbound Packets into the relay's byte
// stream. Its methods must be called in turns of the session facet, the
// facet active when it was created; only the relay's writes happen
// elsewhere, and they reach the peer through turns of that facet too.
type Session struct {
	initiator  bool
	hs         *noise.HandshakeState // nil once established
	expectPeer []byte
	peer       *dataspace.Ref // where our Packets go
	fr         dataspace.FacetRef
	opts       Options
	recv       *noise.CipherState
	tr         *transport
	ended      bool
}

// New creates a session driving h (which it consumes) in t's active
// facet. Nothing is sent until Begin.
func New(t *dataspace.Turn, h *Handshake, opts Options) *Session {
	return &Session{
		initiator:  h.initiator,
		hs:         h.hs,
		expectPeer: h.expectPeer,
		fr:         t.FacetRef(),
		opts:       opts,
	}
}

// Begin names the peer's entity, to which every Packet of ours goes as a
// message, and sends the initiator's first handshake message; a
// responder waits for the initiator's.
func (s *Session) Begin(t *dataspace.Turn, peer *dataspace.Ref) {
	s.peer = peer
	if s.initiator {
		s.writeHandshake(t)
	}
}

// End ends the session once: it closes the relay's byte stream (so the
// relay ends too) and runs OnEnd with err. Later calls, and Packets
// arriving afterwards, are ignored.
func (s *Session) End(t *dataspace.Turn, err error) {
	if s.ended {
		return
	}
	s.ended = true
	if s.tr != nil {
		_ = s.tr.Close()
	}
	if s.opts.OnEnd != nil {
		s.opts.OnEnd(t, err)
	}
}

func (s *Session) writeHandshake(t *dataspace.Turn) {
	msg, cs1, cs2, err := s.hs.WriteMessage(nil, nil)
	if err != nil {
		s.End(t, fmt.Errorf("noise handshake: %w", err))
		return
	}
	t.Message(s.peer, preserves.ByteString(msg))
	if cs1 != nil {
		s.established(t, cs1, cs2)
	}
}

// established switches to transport mode and starts the relay: cs1
// carries initiator-to-responder traffic, cs2 the other direction.
// (One-way patterns use both as well, since the relay needs a reply
// channel.)
func (s *Session) established(t *dataspace.Turn, cs1, cs2 *noise.CipherState) {
	s.hs = nil
	send, recv := cs2, cs1
	if s.initiator {
		send, recv = cs1, cs2
	}
	s.recv = recv
	s.tr = newTransport(send, s.fr, s.peer)
	peer := s.startRelay(t)
	if s.opts.OnReady != nil {
		s.opts.OnReady(t, peer)
	}
}

// startRelay runs a relay over the transport in the active facet (the
// session facet) and ends the session when the relay stops on its own (a
// protocol error from the peer, say). It returns the proxy for the peer's
// oid 0 when Relay.ImportInitial is set.
func (s *Session) startRelay(t *dataspace.Turn) *dataspace.Ref {
	conn, peer := relay.Run(t, s.tr, s.opts.Relay)
	fr := s.fr
	t.LinkedTask("noise-relay-watch", func(ctx context.Context) error {
		select {
		case <-conn.Done():
			fr.ActivateNow(func(t *dataspace.Turn) error {
				s.End(t, conn.Err())
				return nil
			})
			return dataspace.ErrKeepFacet
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return peer
}

// Packet handles one Packet from the peer: a handshake message while the
// handshake runs, then encrypted relay traffic. Anything malformed, or
// failing to decrypt, ends the session with an error.
func (s *Session) Packet(t *dataspace.Turn, v preserves.Value) {
	if s.ended {
		return
	}
	if s.hs != nil {
		b, ok := preserves.Unwrap(v).(preserves.ByteString)
		if !ok {
			s.End(t, fmt.Errorf("noise handshake: packet is not a complete byte string"))
			return
		}
		payload, cs1, cs2, err := s.hs.ReadMessage(nil, []byte(b))
		if err != nil {
			s.End(t, fmt.Errorf("noise handshake: %w", err))
			return
		}
		if len(payload) != 0 {
			s.End(t, fmt.Errorf("noise handshake: message carries a %d-byte payload, want none", len(payload)))
			return
		}
		if ps := s.hs.PeerStatic(); len(s.expectPeer) > 0 && len(ps) > 0 && !bytes.Equal(ps, s.expectPeer) {
			s.End(t, fmt.Errorf("noise handshake: the peer's static key is not the expected key"))
			return
		}
		if cs1 != nil {
			s.established(t, cs1, cs2)
			return
		}
		s.writeHandshake(t)
		return
	}
	pieces, err := DecodePacket(v)
	if err != nil {
		s.End(t, err)
		return
	}
	var plain []byte
	for _, p := range pieces {
		plain, err = s.recv.Decrypt(plain, nil, p)
		if err != nil {
			s.End(t, fmt.Errorf("noise: cannot decrypt packet: %w", err))
			return
		}
	}
	if err := s.tr.feed(StripPadding(plain)); err != nil {
		s.End(t, err)
	}
}

// transport is the byte stream a relay runs over: Read yields decrypted
// plaintext fed by the session's turns; Write encrypts each call (the
// relay writes whole packets, possibly several, per call) as one Packet
// and sends it to the peer in a turn of the session facet.
type transport struct {
	send *noise.CipherState // only touched by the relay's writer goroutine
	fr   dataspace.FacetRef
	peer *dataspace.Ref

	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

func newTransport(send *noise.CipherState, fr dataspace.FacetRef, peer *dataspace.Ref) *transport {
	tr := &transport{send: send, fr: fr, peer: peer}
	tr.cond = sync.NewCond(&tr.mu)
	return tr
}

// feed queues plaintext for Read. It never blocks (it runs in a turn the
// relay's reader may be waiting for); past maxBuffered it fails.
func (tr *transport) feed(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.closed {
		return nil
	}
	if len(tr.buf)+len(b) > maxBuffered {
		return fmt.Errorf("noise: peer sent %d bytes the relay has not read", len(tr.buf)+len(b))
	}
	tr.buf = append(tr.buf, b...)
	tr.cond.Broadcast()
	return nil
}

func (tr *transport) Read(p []byte) (int, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for len(tr.buf) == 0 && !tr.closed {
		tr.cond.Wait()
	}
	if len(tr.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, tr.buf)
	tr.buf = tr.buf[n:]
	if len(tr.buf) == 0 {
		tr.buf = nil // let a large burst's array go
	}
	return n, nil
}

// Write runs on the relay's writer goroutine, never inside a turn, so it
// may Activate the session facet; successive writes are sent in order
// because Activate runs them one at a time on this goroutine.
func (tr *transport) Write(p []byte) (int, error) {
	tr.mu.Lock()
	closed := tr.closed
	tr.mu.Unlock()
	if closed {
		return 0, errClosed
	}
	pkt, err := SealPacket(tr.send, p)
	if err != nil {
		return 0, err
	}
	sent := false
	tr.fr.ActivateNow(func(t *dataspace.Turn) error {
		t.Message(tr.peer, pkt)
		sent = true
		return nil
	})
	if !sent {
		return 0, errClosed
	}
	return len(p), nil
}

// Close unblocks Read (which then reports EOF) and refuses later writes.
func (tr *transport) Close() error {
	tr.mu.Lock()
	tr.closed = true
	tr.cond.Broadcast()
	tr.mu.Unlock()
	return nil
}
