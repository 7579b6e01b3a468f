package resolve

// This file is shared, byte for byte apart from the package clause, by
// services/gatekeeper (the responder) and services/resolve (the
// initiator): sibling services may not import each other (the layering
// test in cmd/syndicate-server), and no shared package was in scope, so
// TestNoiseSessionCopiesAgree in services/resolve keeps the two copies
// identical.
//
// It holds what both sides of a Noise session need (noise.prs): parsing
// and validating NoiseSpec / NoiseServiceSpec dictionaries and protocol
// names, building a flynn/noise handshake from them, the Packet codec
// (complete `bytes` or fragmented `[bytes …]`, trailing 0x80 padding),
// the handshake state machine, and the io.ReadWriteCloser that carries a
// relay (dataspace/relay) over the session's cipher states.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/flynn/noise"
	"golang.org/x/crypto/curve25519"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// Noise vocabulary (noise.prs).
var (
	symNoise         = preserves.Symbol("noise")
	symInitiator     = preserves.Symbol("initiator")
	symService       = preserves.Symbol("service")
	symNoiseKey      = preserves.Symbol("key")
	symProtocol      = preserves.Symbol("protocol")
	symPreSharedKeys = preserves.Symbol("preSharedKeys")
	symSecretKey     = preserves.Symbol("secretKey")
)

const (
	// noiseDefaultProtocol is noise.prs DefaultProtocol.
	noiseDefaultProtocol = "Noise_NK_25519_ChaChaPoly_BLAKE2s"
	noiseSuffix          = "_25519_ChaChaPoly_BLAKE2s"
	// noiseMaxMessage bounds every transport message and fragment.
	noiseMaxMessage = noise.MaxMsgLen
	// noiseMaxPlaintext is the largest plaintext one transport message
	// carries (65535 less the 16-byte AEAD tag); longer relay writes are
	// sent as a fragment list.
	noiseMaxPlaintext = noiseMaxMessage - 16
	// noiseMaxBuffered bounds decrypted bytes the local relay has not
	// read yet: a peer outrunning it ends the session instead of growing
	// memory without limit (twice the relay's default packet limit).
	noiseMaxBuffered = 32 << 20
	// noisePadding is the padding byte (`#f` in binary Preserves); no
	// binary protocol packet ends with it, since every packet is a
	// compound ending in 0x84.
	noisePadding = 0x80
)

var noiseSuite = noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s)

// noisePatterns are the standard (fundamental and one-way) patterns of the
// Noise specification, by name.
var noisePatterns = map[string]noise.HandshakePattern{
	"N": noise.HandshakeN, "K": noise.HandshakeK, "X": noise.HandshakeX,
	"NN": noise.HandshakeNN, "NK": noise.HandshakeNK, "NX": noise.HandshakeNX,
	"XN": noise.HandshakeXN, "XK": noise.HandshakeXK, "XX": noise.HandshakeXX,
	"KN": noise.HandshakeKN, "KK": noise.HandshakeKK, "KX": noise.HandshakeKX,
	"IN": noise.HandshakeIN, "IK": noise.HandshakeIK, "IX": noise.HandshakeIX,
}

// errNoiseUnsupported marks a valid protocol this implementation cannot
// run (flynn/noise supports at most one psk modifier; K-initiator patterns
// need an initiator key no NoiseSpec carries).
var errNoiseUnsupported = errors.New("noise: protocol not supported by this implementation")

// noiseProtocol is a parsed `Noise_<PATTERN>_25519_ChaChaPoly_BLAKE2s`.
type noiseProtocol struct {
	pattern noise.HandshakePattern
	psks    []int // psk modifier positions, in name order
}

// parseNoiseProtocol validates a protocol name: the only suite is
// 25519/ChaChaPoly/BLAKE2s; PATTERN is a standard pattern optionally
// followed by psk modifiers `pskN` joined with `+` (N at most the number
// of handshake messages, no repeats).
func parseNoiseProtocol(name string) (noiseProtocol, error) {
	rest, ok := strings.CutPrefix(name, "Noise_")
	if ok {
		rest, ok = strings.CutSuffix(rest, noiseSuffix)
	}
	if !ok || strings.Contains(rest, "_") {
		return noiseProtocol{}, fmt.Errorf("unsupported noise protocol %q: want Noise_<PATTERN>%s", name, noiseSuffix)
	}
	base, mods := rest, ""
	if i := strings.Index(rest, "psk"); i >= 0 {
		base, mods = rest[:i], rest[i:]
	}
	pat, ok := noisePatterns[base]
	if !ok {
		return noiseProtocol{}, fmt.Errorf("unknown noise handshake pattern %q in %q", base, name)
	}
	p := noiseProtocol{pattern: pat}
	if mods == "" {
		return p, nil
	}
	seen := map[int]bool{}
	for _, m := range strings.Split(mods, "+") {
		digits, ok := strings.CutPrefix(m, "psk")
		n, err := strconv.Atoi(digits)
		if !ok || err != nil || digits != strconv.Itoa(n) || n < 0 || n > len(pat.Messages) || seen[n] {
			return noiseProtocol{}, fmt.Errorf("invalid psk modifier %q in noise protocol %q", m, name)
		}
		seen[n] = true
		p.psks = append(p.psks, n)
	}
	return p, nil
}

// noiseSpec is a parsed NoiseSpec, or NoiseServiceSpec with its secretKey.
type noiseSpec struct {
	service  preserves.Value
	key      []byte
	protocol string // "" when absent (the default)
	psks     [][]byte
	secret   []byte // nil when absent
}

func (s *noiseSpec) protocolName() string {
	if s.protocol == "" {
		return noiseDefaultProtocol
	}
	return s.protocol
}

// parseNoiseSpec validates a NoiseSpec dictionary (services spec §6.2);
// withSecret also accepts a secretKey (NoiseServiceSpec), which must be a
// 32-byte Curve25519 secret whose public key is `key`. Pre-shared keys
// must be 32 bytes each (the Noise specification's size).
func parseNoiseSpec(v preserves.Value, withSecret bool) (*noiseSpec, error) {
	d, ok := preserves.Unwrap(v).(*preserves.Dictionary)
	if !ok {
		return nil, fmt.Errorf("noise spec is not a dictionary")
	}
	s := &noiseSpec{}
	sv, ok := d.Get(symService)
	if !ok {
		return nil, fmt.Errorf("noise spec has no service")
	}
	s.service = preserves.Strip(sv)
	kv, ok := d.Get(symNoiseKey)
	if !ok {
		return nil, fmt.Errorf("noise spec has no key")
	}
	kb, ok := preserves.Unwrap(kv).(preserves.ByteString)
	if !ok {
		return nil, fmt.Errorf("noise spec key is not a byte string")
	}
	s.key = kb.Bytes()
	if pv, ok := d.Get(symProtocol); ok {
		ps, ok := preserves.Unwrap(pv).(preserves.String)
		if !ok {
			return nil, fmt.Errorf("noise spec protocol is not a string")
		}
		if _, err := parseNoiseProtocol(string(ps)); err != nil {
			return nil, err
		}
		if string(ps) != noiseDefaultProtocol {
			s.protocol = string(ps)
		}
	}
	if kv, ok := d.Get(symPreSharedKeys); ok {
		seq, ok := preserves.Unwrap(kv).(preserves.Sequence)
		if !ok {
			return nil, fmt.Errorf("noise spec preSharedKeys is not a sequence")
		}
		for i, e := range seq {
			b, ok := preserves.Unwrap(e).(preserves.ByteString)
			if !ok {
				return nil, fmt.Errorf("noise spec preSharedKeys[%d] is not a byte string", i)
			}
			if len(b) != 32 {
				return nil, fmt.Errorf("noise spec preSharedKeys[%d] is %d bytes, want 32", i, len(b))
			}
			s.psks = append(s.psks, b.Bytes())
		}
	}
	if sk, ok := d.Get(symSecretKey); ok && withSecret {
		b, ok := preserves.Unwrap(sk).(preserves.ByteString)
		if !ok {
			return nil, fmt.Errorf("noise spec secretKey is not a byte string")
		}
		if len(b) != 32 {
			return nil, fmt.Errorf("noise spec secretKey is %d bytes, want 32", len(b))
		}
		s.secret = b.Bytes()
		pub, err := curve25519.X25519(s.secret, curve25519.Basepoint)
		if err != nil {
			return nil, fmt.Errorf("noise spec secretKey: %w", err)
		}
		if !bytes.Equal(pub, s.key) {
			return nil, fmt.Errorf("noise spec key is not the public key of secretKey")
		}
	}
	return s, nil
}

// toValue renders the NoiseSpec part: protocol only when not the default,
// preSharedKeys only when non-empty, never the secret.
func (s *noiseSpec) toValue() preserves.Value {
	es := []preserves.DictEntry{
		{Key: symService, Value: s.service},
		{Key: symNoiseKey, Value: preserves.ByteStringFrom(s.key)},
	}
	if s.protocol != "" {
		es = append(es, preserves.DictEntry{Key: symProtocol, Value: preserves.String(s.protocol)})
	}
	if len(s.psks) > 0 {
		seq := make(preserves.Sequence, len(s.psks))
		for i, k := range s.psks {
			seq[i] = preserves.ByteStringFrom(k)
		}
		es = append(es, preserves.DictEntry{Key: symPreSharedKeys, Value: seq})
	}
	return preserves.NewDictionary(es...)
}

// noisePrologue is the canonical binary encoding of the service selector.
func noisePrologue(service preserves.Value) ([]byte, error) {
	return preserves.EncodeBinary(preserves.Strip(service), preserves.EncodeOptions{
		Embedded: func(any) (preserves.Value, error) {
			return nil, fmt.Errorf("noise service selector holds a capability")
		},
	})
}

func hasToken(ms []noise.MessagePattern, tok noise.MessagePattern) bool {
	for _, m := range ms {
		if m == tok {
			return true
		}
	}
	return false
}

// sendsStatic reports whether the party sending messages at even (the
// initiator) or odd (the responder) indexes transmits its static key.
func sendsStatic(p noise.HandshakePattern, initiator bool) bool {
	for i, msg := range p.Messages {
		if (i%2 == 0) == initiator && hasToken(msg, noise.MessagePatternS) {
			return true
		}
	}
	return false
}

// handshake builds one side's handshake state for the spec. The initiator
// gets a fresh static key pair when its pattern transmits one (NoiseSpec
// carries no initiator identity); the responder's static key is secretKey.
func (s *noiseSpec) handshake(initiator bool) (*noise.HandshakeState, error) {
	proto, err := parseNoiseProtocol(s.protocolName())
	if err != nil {
		return nil, err
	}
	pat := proto.pattern
	if len(proto.psks) > 1 {
		return nil, fmt.Errorf("%w: %s has %d psk modifiers (flynn/noise runs at most one)", errNoiseUnsupported, s.protocolName(), len(proto.psks))
	}
	if len(pat.InitiatorPreMessages) > 0 {
		return nil, fmt.Errorf("%w: %s needs the initiator's static key in advance, which a noise spec cannot carry", errNoiseUnsupported, s.protocolName())
	}
	prologue, err := noisePrologue(s.service)
	if err != nil {
		return nil, err
	}
	cfg := noise.Config{CipherSuite: noiseSuite, Pattern: pat, Initiator: initiator, Prologue: prologue}
	responderStatic := hasToken(pat.ResponderPreMessages, noise.MessagePatternS) || sendsStatic(pat, false)
	if initiator {
		if hasToken(pat.ResponderPreMessages, noise.MessagePatternS) {
			if len(s.key) != 32 {
				return nil, fmt.Errorf("noise spec key is %d bytes; %s needs the responder's 32-byte public key", len(s.key), s.protocolName())
			}
			cfg.PeerStatic = s.key
		}
		if sendsStatic(pat, true) {
			kp, err := noiseSuite.GenerateKeypair(rand.Reader)
			if err != nil {
				return nil, err
			}
			cfg.StaticKeypair = kp
		}
	} else if responderStatic {
		if s.secret == nil {
			return nil, fmt.Errorf("noise spec has no secretKey; %s needs the responder's static key", s.protocolName())
		}
		cfg.StaticKeypair = noise.DHKey{Private: s.secret, Public: s.key}
	}
	if len(proto.psks) == 1 {
		// PSKs are drawn in order; all-zeros once exhausted.
		psk := make([]byte, 32)
		if len(s.psks) > 0 {
			psk = s.psks[0]
		}
		cfg.PresharedKey = psk
		cfg.PresharedKeyPlacement = proto.psks[0]
	}
	return noise.NewHandshakeState(cfg)
}

// ---- Packets ----

// decodeNoisePacket splits a Packet (`bytes` or `[bytes …]`) into its
// transport messages, each at most 65535 bytes.
func decodeNoisePacket(v preserves.Value) ([][]byte, error) {
	switch p := preserves.Unwrap(v).(type) {
	case preserves.ByteString:
		if len(p) > noiseMaxMessage {
			return nil, fmt.Errorf("noise packet of %d bytes exceeds %d", len(p), noiseMaxMessage)
		}
		return [][]byte{[]byte(p)}, nil
	case preserves.Sequence:
		out := make([][]byte, 0, len(p))
		for i, e := range p {
			b, ok := preserves.Unwrap(e).(preserves.ByteString)
			if !ok {
				return nil, fmt.Errorf("noise packet fragment %d is not a byte string", i)
			}
			if len(b) > noiseMaxMessage {
				return nil, fmt.Errorf("noise packet fragment %d of %d bytes exceeds %d", i, len(b), noiseMaxMessage)
			}
			out = append(out, []byte(b))
		}
		return out, nil
	}
	return nil, fmt.Errorf("noise packet is neither bytes nor a sequence of bytes")
}

// stripNoisePadding drops the trailing 0x80 bytes of a decrypted Packet.
func stripNoisePadding(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == noisePadding {
		b = b[:len(b)-1]
	}
	return b
}

// sealNoisePacket encrypts plaintext as one Packet: a single transport
// message, or a fragment list of 65519-byte pieces when it is longer.
func sealNoisePacket(cs *noise.CipherState, plaintext []byte) (preserves.Value, error) {
	if len(plaintext) <= noiseMaxPlaintext {
		ct, err := cs.Encrypt(nil, nil, plaintext)
		if err != nil {
			return nil, err
		}
		return preserves.ByteString(ct), nil
	}
	var seq preserves.Sequence
	for len(plaintext) > 0 {
		n := min(len(plaintext), noiseMaxPlaintext)
		ct, err := cs.Encrypt(nil, nil, plaintext[:n])
		if err != nil {
			return nil, err
		}
		seq = append(seq, preserves.ByteString(ct))
		plaintext = plaintext[n:]
	}
	return seq, nil
}

// ---- session ----

// noiseSession drives one side of a session: the handshake (complete
// packets only, each exactly one handshake message with an empty
// payload), then decryption of inbound Packets into a noiseTransport.
// Everything but the transport's write side runs in turns of the session's
// facet.
type noiseSession struct {
	initiator bool
	hs        *noise.HandshakeState // nil once established
	peer      *dataspace.Ref        // where our Packets go
	fr        dataspace.FacetRef    // the session facet
	recv      *noise.CipherState
	tr        *noiseTransport
	ended     bool
	// expectPeer, when set, is the static key the peer must prove: an
	// initiator given the responder's key checks it even when the pattern
	// transmits that key rather than taking it in advance (XX, NX, IX).
	expectPeer []byte
	// ready runs when the handshake completes, in the session facet:
	// it starts the relay over tr.
	ready func(t *dataspace.Turn, tr *noiseTransport)
	// end runs once when the session fails (err set) or is ended by the
	// peer's retraction (err nil).
	end func(t *dataspace.Turn, err error)
}

// begin sends the initiator's first handshake message; the responder
// waits for it.
func (s *noiseSession) begin(t *dataspace.Turn) {
	if s.initiator {
		s.writeHandshake(t)
	}
}

func (s *noiseSession) fail(t *dataspace.Turn, err error) {
	if s.ended {
		return
	}
	s.ended = true
	if s.tr != nil {
		_ = s.tr.Close()
	}
	s.end(t, err)
}

func (s *noiseSession) writeHandshake(t *dataspace.Turn) {
	msg, cs1, cs2, err := s.hs.WriteMessage(nil, nil)
	if err != nil {
		s.fail(t, fmt.Errorf("noise handshake: %w", err))
		return
	}
	t.Message(s.peer, preserves.ByteString(msg))
	if cs1 != nil {
		s.established(t, cs1, cs2)
	}
}

// established switches to transport mode: cs1 carries initiator-to-
// responder traffic, cs2 the other direction. (One-way patterns use both
// as well, since the relay needs a reply channel.)
func (s *noiseSession) established(t *dataspace.Turn, cs1, cs2 *noise.CipherState) {
	s.hs = nil
	send, recv := cs2, cs1
	if s.initiator {
		send, recv = cs1, cs2
	}
	s.recv = recv
	s.tr = newNoiseTransport(send, s.fr, s.peer)
	s.ready(t, s.tr)
}

// startRelay runs a relay over tr in the active facet (the session
// facet) and ends the session when the relay stops on its own (a protocol
// error from the peer, say). It returns the proxy for the peer's oid 0
// when opts.ImportInitial is set.
func (s *noiseSession) startRelay(t *dataspace.Turn, tr *noiseTransport, opts relay.Options) *dataspace.Ref {
	conn, peer := relay.Run(t, tr, opts)
	fr := s.fr
	t.LinkedTask("noise-relay-watch", func(ctx context.Context) error {
		select {
		case <-conn.Done():
			fr.Activate(func(t *dataspace.Turn) error {
				s.fail(t, conn.Err())
				return nil
			})
			return dataspace.ErrKeepFacet
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return peer
}

// packet handles one Packet from the peer.
func (s *noiseSession) packet(t *dataspace.Turn, v preserves.Value) {
	if s.ended {
		return
	}
	if s.hs != nil {
		b, ok := preserves.Unwrap(v).(preserves.ByteString)
		if !ok {
			s.fail(t, fmt.Errorf("noise handshake: packet is not a complete byte string"))
			return
		}
		payload, cs1, cs2, err := s.hs.ReadMessage(nil, []byte(b))
		if err != nil {
			s.fail(t, fmt.Errorf("noise handshake: %w", err))
			return
		}
		if len(payload) != 0 {
			s.fail(t, fmt.Errorf("noise handshake: message carries a %d-byte payload, want none", len(payload)))
			return
		}
		if ps := s.hs.PeerStatic(); len(s.expectPeer) > 0 && len(ps) > 0 && !bytes.Equal(ps, s.expectPeer) {
			s.fail(t, fmt.Errorf("noise handshake: the peer's static key is not the expected key"))
			return
		}
		if cs1 != nil {
			s.established(t, cs1, cs2)
			return
		}
		s.writeHandshake(t)
		return
	}
	pieces, err := decodeNoisePacket(v)
	if err != nil {
		s.fail(t, err)
		return
	}
	var plain []byte
	for _, p := range pieces {
		plain, err = s.recv.Decrypt(plain, nil, p)
		if err != nil {
			s.fail(t, fmt.Errorf("noise: cannot decrypt packet: %w", err))
			return
		}
	}
	if err := s.tr.feed(stripNoisePadding(plain)); err != nil {
		s.fail(t, err)
	}
}

// errNoiseClosed: the session ended before a write could be sent.
var errNoiseClosed = errors.New("noise: session closed")

// noiseTransport is the byte stream a relay runs over: Read yields
// decrypted plaintext fed by the session's turns; Write encrypts each call
// (the relay writes whole packets per call) as one Packet and sends it to
// the peer in a turn of the session facet.
type noiseTransport struct {
	send *noise.CipherState // only touched by the relay's writer goroutine
	fr   dataspace.FacetRef
	peer *dataspace.Ref

	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

func newNoiseTransport(send *noise.CipherState, fr dataspace.FacetRef, peer *dataspace.Ref) *noiseTransport {
	tr := &noiseTransport{send: send, fr: fr, peer: peer}
	tr.cond = sync.NewCond(&tr.mu)
	return tr
}

// feed queues plaintext for Read. It never blocks (it runs in a turn the
// relay's reader may be waiting for); past noiseMaxBuffered it fails.
func (tr *noiseTransport) feed(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.closed {
		return nil
	}
	if len(tr.buf)+len(b) > noiseMaxBuffered {
		return fmt.Errorf("noise: peer sent %d bytes the relay has not read", len(tr.buf)+len(b))
	}
	tr.buf = append(tr.buf, b...)
	tr.cond.Broadcast()
	return nil
}

func (tr *noiseTransport) Read(p []byte) (int, error) {
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
func (tr *noiseTransport) Write(p []byte) (int, error) {
	tr.mu.Lock()
	closed := tr.closed
	tr.mu.Unlock()
	if closed {
		return 0, errNoiseClosed
	}
	pkt, err := sealNoisePacket(tr.send, p)
	if err != nil {
		return 0, err
	}
	sent := false
	tr.fr.Activate(func(t *dataspace.Turn) error {
		t.Message(tr.peer, pkt)
		sent = true
		return nil
	})
	if !sent {
		return 0, errNoiseClosed
	}
	return len(p), nil
}

// Close unblocks Read (which then reports EOF) and refuses later writes.
func (tr *noiseTransport) Close() error {
	tr.mu.Lock()
	tr.closed = true
	tr.cond.Broadcast()
	tr.mu.Unlock()
	return nil
}
