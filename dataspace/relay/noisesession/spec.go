package noisesession

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flynn/noise"
	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/curve25519"

	noiseschema "github.com/syndicate-go/syndicate/dataspace/schemas/noise"
	"github.com/syndicate-go/syndicate/preserves"
)

// Names from noise.prs for dataspace patterns and hand-built values: the
// `<noise …>` step and description label (noise.prs NoiseStepType, a
// literal the generator exports no label for) and the NoiseSpec /
// NoiseServiceSpec dictionary keys. Specs themselves are parsed and
// rendered by the generated dataspace/schemas/noise.
const (
	SymNoise         preserves.Symbol = "noise"
	SymService       preserves.Symbol = "service"
	SymKey           preserves.Symbol = "key"
	SymProtocol      preserves.Symbol = "protocol"
	SymPreSharedKeys preserves.Symbol = "preSharedKeys"
	SymSecretKey     preserves.Symbol = "secretKey"
)

const (
	// DefaultProtocol is noise.prs DefaultProtocol, used when a spec names
	// none.
	DefaultProtocol = "Noise_NK_25519_ChaChaPoly_BLAKE2s"
	// protocolSuffix is the only cipher suite supported.
	protocolSuffix = "_25519_ChaChaPoly_BLAKE2s"
)

var suite = noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s)

// patterns are the standard (fundamental and one-way) patterns of the
// Noise specification, by name.
var patterns = map[string]noise.HandshakePattern{
	"N": noise.HandshakeN, "K": noise.HandshakeK, "X": noise.HandshakeX,
	"NN": noise.HandshakeNN, "NK": noise.HandshakeNK, "NX": noise.HandshakeNX,
	"XN": noise.HandshakeXN, "XK": noise.HandshakeXK, "XX": noise.HandshakeXX,
	"KN": noise.HandshakeKN, "KK": noise.HandshakeKK, "KX": noise.HandshakeKX,
	"IN": noise.HandshakeIN, "IK": noise.HandshakeIK, "IX": noise.HandshakeIX,
}

// ErrUnsupported marks a valid protocol this implementation cannot run
// (flynn/noise supports at most one psk modifier; K-initiator patterns
// need an initiator key no NoiseSpec carries).
var ErrUnsupported = errors.New("noisesession: protocol not supported by this implementation")

// protocol is a parsed `Noise_<PATTERN>_25519_ChaChaPoly_BLAKE2s`.
type protocol struct {
	pattern noise.HandshakePattern
	psks    []int // psk modifier positions, in name order
}

// parseProtocol validates a protocol name: the only suite is
// 25519/ChaChaPoly/BLAKE2s; PATTERN is a standard pattern optionally
// followed by psk modifiers `pskN` joined with `+` (N at most the number
// of handshake messages, no repeats).
func parseProtocol(name string) (protocol, error) {
	rest, ok := strings.CutPrefix(name, "Noise_")
	if ok {
		rest, ok = strings.CutSuffix(rest, protocolSuffix)
	}
	if !ok || strings.Contains(rest, "_") {
		return protocol{}, fmt.Errorf("unsupported noise protocol %q: want Noise_<PATTERN>%s", preserves.ShowString(name), protocolSuffix)
	}
	base, mods := rest, ""
	if i := strings.Index(rest, "psk"); i >= 0 {
		base, mods = rest[:i], rest[i:]
	}
	pat, ok := patterns[base]
	if !ok {
		return protocol{}, fmt.Errorf("unknown noise handshake pattern %q in %q", preserves.ShowString(base), preserves.ShowString(name))
	}
	p := protocol{pattern: pat}
	if mods == "" {
		return p, nil
	}
	seen := map[int]bool{}
	for _, m := range strings.Split(mods, "+") {
		digits, ok := strings.CutPrefix(m, "psk")
		n, err := strconv.Atoi(digits)
		if !ok || err != nil || digits != strconv.Itoa(n) || n < 0 || n > len(pat.Messages) || seen[n] {
			return protocol{}, fmt.Errorf("invalid psk modifier %q in noise protocol %q", preserves.ShowString(m), preserves.ShowString(name))
		}
		seen[n] = true
		p.psks = append(p.psks, n)
	}
	return p, nil
}

// Spec is a parsed NoiseSpec, or a NoiseServiceSpec with its secret key.
type Spec struct {
	// Service is the service selector (annotations stripped).
	Service preserves.Value
	// Key is the responder's static public key (any length in a bare
	// NoiseSpec; patterns that need it require 32 bytes).
	Key []byte
	// Protocol is the protocol name, "" when absent or the default.
	Protocol string
	// PreSharedKeys are 32 bytes each.
	PreSharedKeys [][]byte
	// SecretKey is the responder's 32-byte Curve25519 secret, nil when
	// absent (always nil unless parsed with withSecret).
	SecretKey []byte
}

// ProtocolName is the protocol the spec runs: Protocol, or
// DefaultProtocol when that is empty.
func (s *Spec) ProtocolName() string { return cmp.Or(s.Protocol, DefaultProtocol) }

// ParseSpec validates a NoiseSpec dictionary (services spec §6.2) with
// the generated noise.prs parsers; withSecret parses a NoiseServiceSpec,
// whose secretKey must be a 32-byte Curve25519 secret whose public key is
// `key`. Beyond the schema: the protocol name must be one this
// implementation knows, and pre-shared keys must be 32 bytes each (the
// Noise specification's size); the schema's `invalid` alternatives (a
// protocol, preSharedKeys or secretKey of the wrong kind) are errors.
// Without withSecret a secretKey entry is ignored.
func ParseSpec(v preserves.Value, withSecret bool) (*Spec, error) {
	var ns noiseschema.NoiseSpec
	var secret noiseschema.SecretKeyField = noiseschema.SecretKeyFieldAbsent{}
	var err error
	if withSecret {
		var nss noiseschema.NoiseServiceSpec
		nss, err = noiseschema.ParseNoiseServiceSpec(v)
		ns, secret = nss.Base, nss.SecretKey
	} else {
		ns, err = noiseschema.ParseNoiseSpec(v)
	}
	if err != nil {
		return nil, fmt.Errorf("noise spec: %w", err)
	}
	s := &Spec{Service: preserves.Strip(ns.Service.Value), Key: ns.Key}
	switch p := ns.Protocol.(type) {
	case noiseschema.NoiseProtocolInvalid:
		return nil, fmt.Errorf("noise spec protocol must be a string")
	case noiseschema.NoiseProtocolPresent:
		if _, err := parseProtocol(p.Protocol); err != nil {
			return nil, err
		}
		if p.Protocol != DefaultProtocol {
			s.Protocol = p.Protocol
		}
	}
	switch p := ns.PreSharedKeys.(type) {
	case noiseschema.NoisePreSharedKeysInvalid:
		return nil, fmt.Errorf("noise spec preSharedKeys must be a sequence of byte strings")
	case noiseschema.NoisePreSharedKeysPresent:
		for i, b := range p.PreSharedKeys {
			if len(b) != 32 {
				return nil, fmt.Errorf("noise spec preSharedKeys[%d] is %d bytes, want 32", i, len(b))
			}
		}
		if len(p.PreSharedKeys) > 0 {
			s.PreSharedKeys = p.PreSharedKeys
		}
	}
	switch sk := secret.(type) {
	case noiseschema.SecretKeyFieldInvalid:
		return nil, fmt.Errorf("noise spec secretKey must be a byte string")
	case noiseschema.SecretKeyFieldPresent:
		if len(sk.SecretKey) != 32 {
			return nil, fmt.Errorf("noise spec secretKey is %d bytes, want 32", len(sk.SecretKey))
		}
		s.SecretKey = sk.SecretKey
		pub, err := PublicKey(s.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("noise spec secretKey: %w", err)
		}
		if !bytes.Equal(pub, s.Key) {
			return nil, fmt.Errorf("noise spec key is not the public key of secretKey")
		}
	}
	return s, nil
}

// ToValue renders the NoiseSpec part: protocol only when not the default,
// preSharedKeys only when non-empty, never the secret (a gatekeeper's
// `<bound <noise SPEC'>>` answer must not leak it).
func (s *Spec) ToValue() preserves.Value {
	ns := noiseschema.NoiseSpec{
		Key:           s.Key,
		Service:       noiseschema.ServiceSelector{Value: s.Service},
		Protocol:      noiseschema.NoiseProtocolAbsent{},
		PreSharedKeys: noiseschema.NoisePreSharedKeysAbsent{},
	}
	if s.Protocol != "" {
		ns.Protocol = noiseschema.NoiseProtocolPresent{Protocol: s.Protocol}
	}
	if len(s.PreSharedKeys) > 0 {
		ns.PreSharedKeys = noiseschema.NoisePreSharedKeysPresent{PreSharedKeys: s.PreSharedKeys}
	}
	return ns.ToValue()
}

// prologue is the canonical binary encoding of the service selector.
func prologue(service preserves.Value) ([]byte, error) {
	return preserves.EncodeBinary(preserves.Strip(service), preserves.EncodeOptions{
		Embedded: func(any) (preserves.Value, error) {
			return nil, fmt.Errorf("noise service selector holds a capability")
		},
	})
}

// sendsStatic reports whether the party sending messages at even (the
// initiator) or odd (the responder) indexes transmits its static key.
func sendsStatic(p noise.HandshakePattern, initiator bool) bool {
	for i, msg := range p.Messages {
		if (i%2 == 0) == initiator && slices.Contains(msg, noise.MessagePatternS) {
			return true
		}
	}
	return false
}

// Handshake is one side's handshake state, ready to be driven by a
// Session. It is used once.
type Handshake struct {
	hs        *noise.HandshakeState
	initiator bool
	// expectPeer, when set, is the static key the peer must prove: an
	// initiator given the responder's key checks it even when the pattern
	// transmits that key rather than taking it in advance (XX, NX, IX).
	expectPeer []byte
}

// Handshake builds one side's handshake state for the spec. The initiator
// gets a fresh static key pair when its pattern transmits one (NoiseSpec
// carries no initiator identity) and will check the responder's proven
// static key against Key when Key is non-empty; the responder's static key
// is SecretKey. Valid protocols this implementation cannot run fail with
// an error wrapping ErrUnsupported, so callers can refuse a spec up front.
func (s *Spec) Handshake(initiator bool) (*Handshake, error) {
	proto, err := parseProtocol(s.ProtocolName())
	if err != nil {
		return nil, err
	}
	pat := proto.pattern
	if len(proto.psks) > 1 {
		return nil, fmt.Errorf("%w: %s has %d psk modifiers (flynn/noise runs at most one)", ErrUnsupported, s.ProtocolName(), len(proto.psks))
	}
	if len(pat.InitiatorPreMessages) > 0 {
		return nil, fmt.Errorf("%w: %s needs the initiator's static key in advance, which a noise spec cannot carry", ErrUnsupported, s.ProtocolName())
	}
	pro, err := prologue(s.Service)
	if err != nil {
		return nil, err
	}
	cfg := noise.Config{CipherSuite: suite, Pattern: pat, Initiator: initiator, Prologue: pro}
	responderStatic := slices.Contains(pat.ResponderPreMessages, noise.MessagePatternS) || sendsStatic(pat, false)
	if initiator {
		if slices.Contains(pat.ResponderPreMessages, noise.MessagePatternS) {
			if len(s.Key) != 32 {
				return nil, fmt.Errorf("noise spec key is %d bytes; %s needs the responder's 32-byte public key", len(s.Key), s.ProtocolName())
			}
			cfg.PeerStatic = s.Key
		}
		if sendsStatic(pat, true) {
			kp, err := suite.GenerateKeypair(rand.Reader)
			if err != nil {
				return nil, err
			}
			cfg.StaticKeypair = kp
		}
	} else if responderStatic {
		if s.SecretKey == nil {
			return nil, fmt.Errorf("noise spec has no secretKey; %s needs the responder's static key", s.ProtocolName())
		}
		cfg.StaticKeypair = noise.DHKey{Private: s.SecretKey, Public: s.Key}
	}
	if len(proto.psks) == 1 {
		// PSKs are drawn in order; all-zeros once exhausted.
		psk := make([]byte, 32)
		if len(s.PreSharedKeys) > 0 {
			psk = s.PreSharedKeys[0]
		}
		cfg.PresharedKey = psk
		cfg.PresharedKeyPlacement = proto.psks[0]
	}
	hs, err := noise.NewHandshakeState(cfg)
	if err != nil {
		return nil, err
	}
	h := &Handshake{hs: hs, initiator: initiator}
	if initiator {
		h.expectPeer = s.Key
	}
	return h, nil
}

// PublicKey returns the X25519 public key of a 32-byte secret key: the
// `key` that goes beside `secretKey` in a NoiseServiceSpec.
func PublicKey(secret []byte) ([]byte, error) {
	return curve25519.X25519(secret, curve25519.Basepoint)
}

// GenerateKey returns a fresh X25519 key pair for a NoiseServiceSpec.
func GenerateKey() (secret, public []byte, err error) {
	secret = make([]byte, curve25519.ScalarSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	public, err = PublicKey(secret)
	return secret, public, err
}

// KeyFromText derives a key pair as the reference's `syndicate-macaroon
// noise` does: the secret key is the BLAKE2s-256 hash of text exactly as
// given (a phrase's bytes, or a hex argument's ASCII characters, not the
// bytes they would decode to).
func KeyFromText(text []byte) (secret, public []byte, err error) {
	sum := blake2s.Sum256(text)
	secret = sum[:]
	public, err = PublicKey(secret)
	return secret, public, err
}
