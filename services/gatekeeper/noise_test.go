package gatekeeper

import (
	"errors"
	"strings"
	"testing"

	"github.com/flynn/noise"
	"golang.org/x/crypto/curve25519"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// testKeys is a fixed responder key pair.
func testKeys(tb testing.TB) (secret, public []byte) {
	secret = make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i + 1)
	}
	public, err := curve25519.X25519(secret, curve25519.Basepoint)
	if err != nil {
		tb.Fatal(err)
	}
	return secret, public
}

func dict(kvs ...preserves.Value) *preserves.Dictionary {
	var es []preserves.DictEntry
	for i := 0; i+1 < len(kvs); i += 2 {
		es = append(es, preserves.DictEntry{Key: kvs[i], Value: kvs[i+1]})
	}
	return preserves.NewDictionary(es...)
}

func bs(b []byte) preserves.Value { return preserves.ByteStringFrom(b) }

func noiseBind(spec preserves.Value, target *dataspace.Ref, obs *dataspace.Ref) preserves.Value {
	var o preserves.Value = preserves.Bool(false)
	if obs != nil {
		o = dataspace.Embed(obs)
	}
	return preserves.NewRecord(symBind, preserves.NewRecord(symNoise, spec), dataspace.Embed(target), o)
}

func isErrorString(v preserves.Value) bool {
	r, ok := v.(*preserves.Record)
	if !ok || r.Label != symError || len(r.Fields) != 1 {
		return false
	}
	_, ok = r.Fields[0].(preserves.String)
	return ok
}

func TestNoiseBindValidation(t *testing.T) {
	w := newWorld(t)
	sk, pk := testKeys(t)
	psk := make([]byte, 32)
	psk[0] = 9
	svc := preserves.String("svc")
	cases := []struct {
		name string
		spec preserves.Value
		want preserves.Value // nil: an <error "…"> answer
	}{
		{"default protocol", dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk)),
			dict(symService, svc, symNoiseKey, bs(pk))},
		{"default protocol spelled out is left out", dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk), symProtocol, preserves.String(noiseDefaultProtocol)),
			dict(symService, svc, symNoiseKey, bs(pk))},
		{"other protocol kept", dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk), symProtocol, preserves.String("Noise_XX_25519_ChaChaPoly_BLAKE2s")),
			dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_XX_25519_ChaChaPoly_BLAKE2s"))},
		{"psk variant and keys", dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk), symProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"), symPreSharedKeys, preserves.Sequence{bs(psk)}),
			dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"), symPreSharedKeys, preserves.Sequence{bs(psk)})},
		{"empty psk list left out", dict(symService, svc, symNoiseKey, bs(pk), symPreSharedKeys, preserves.Sequence{}),
			dict(symService, svc, symNoiseKey, bs(pk))},
		{"no secret key", dict(symService, preserves.Symbol("s2"), symNoiseKey, bs(nil)),
			dict(symService, preserves.Symbol("s2"), symNoiseKey, bs(nil))},
		{"not a dictionary", preserves.Int(1), nil},
		{"no service", dict(symNoiseKey, bs(pk)), nil},
		{"no key", dict(symService, svc), nil},
		{"key not bytes", dict(symService, svc, symNoiseKey, preserves.String("k")), nil},
		{"protocol not a string", dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.Symbol("Noise_NK_25519_ChaChaPoly_BLAKE2s")), nil},
		{"other suite", dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_NK_25519_AESGCM_SHA256")), nil},
		{"unknown pattern", dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_NQ_25519_ChaChaPoly_BLAKE2s")), nil},
		{"psk out of range", dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_NKpsk3_25519_ChaChaPoly_BLAKE2s")), nil},
		{"psk repeated", dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_NKpsk1+psk1_25519_ChaChaPoly_BLAKE2s")), nil},
		{"psk not a number", dict(symService, svc, symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_NKpskx_25519_ChaChaPoly_BLAKE2s")), nil},
		{"preSharedKeys not a sequence", dict(symService, svc, symNoiseKey, bs(pk), symPreSharedKeys, bs(psk)), nil},
		{"preSharedKeys item not bytes", dict(symService, svc, symNoiseKey, bs(pk), symPreSharedKeys, preserves.Sequence{preserves.Int(1)}), nil},
		{"preSharedKeys item short", dict(symService, svc, symNoiseKey, bs(pk), symPreSharedKeys, preserves.Sequence{bs(psk[:5])}), nil},
		{"secretKey not bytes", dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, preserves.String("s")), nil},
		{"secretKey short", dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk[:31])), nil},
		{"key does not match secretKey", dict(symService, svc, symNoiseKey, bs(sk), symSecretKey, bs(sk)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := newBox()
			w.do(func(t *dataspace.Turn) { t.Assert(w.bs, noiseBind(c.spec, t.Create(newBox()), t.Create(obs))) })
			got := obs.only(t)
			if c.want == nil {
				if !isErrorString(got) {
					t.Fatalf("got %v, want <error \"…\">", got)
				}
				return
			}
			want := preserves.NewRecord(symBound, preserves.NewRecord(symNoise, c.want))
			if !preserves.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("target not a capability", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) {
			t.Assert(w.bs, preserves.NewRecord(symBind, preserves.NewRecord(symNoise, dict(symService, svc, symNoiseKey, bs(pk))), preserves.Int(3), dataspace.Embed(t.Create(obs))))
		})
		if got := obs.only(t); !isErrorString(got) {
			t.Fatalf("got %v", got)
		}
	})
}

func TestParseNoiseProtocol(t *testing.T) {
	for _, p := range []string{"N", "K", "X", "NN", "NK", "NX", "XN", "XK", "XX", "KN", "KK", "KX", "IN", "IK", "IX",
		"Npsk0", "Npsk1", "NKpsk0", "NKpsk2", "XXpsk3", "NNpsk0+psk2", "IKpsk1+psk2"} {
		if _, err := parseNoiseProtocol("Noise_" + p + noiseSuffix); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"", "NNN", "XXpsk4", "Npsk2", "NNpsk01", "NNpsk-1", "NNpsk0+", "NNpsk0+psk0", "XXfallback", "NK1", "nk"} {
		if _, err := parseNoiseProtocol("Noise_" + p + noiseSuffix); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	if _, err := parseNoiseProtocol("Noise_NK_448_ChaChaPoly_BLAKE2s"); err == nil {
		t.Error("448 accepted")
	}
}

// rawSession is an initiator written directly against flynn/noise,
// speaking the wire format of noise.prs to the gatekeeper's responder.
type rawSession struct {
	w        *world
	me       *box // receives the responder's Packets
	session  *dataspace.Ref
	initH    dataspace.Handle
	send     *noise.CipherState
	recv     *noise.CipherState
	obs      *box
	resolveH dataspace.Handle
}

// resolveNoise asserts `<resolve <noise svc> #:obs>` and returns obs's only
// answer.
func resolveNoise(tb testing.TB, w *world, svc preserves.Value) (*box, dataspace.Handle, preserves.Value) {
	obs := newBox()
	var h dataspace.Handle
	w.do(func(t *dataspace.Turn) {
		h = t.Assert(w.gk, resolve(preserves.NewRecord(symNoise, svc), t.Create(obs)))
	})
	return obs, h, obs.only(tb)
}

func startRaw(tb testing.TB, w *world, svc preserves.Value, pub []byte) *rawSession {
	tb.Helper()
	obs, rh, ans := resolveNoise(tb, w, svc)
	r, ok := ans.(*preserves.Record)
	if !ok || r.Label != symOk {
		tb.Fatalf("resolve answered %v", ans)
	}
	session, ok := dataspace.RefOf(r.Fields[0])
	if !ok {
		tb.Fatalf("resolve answered %v", ans)
	}
	hs, err := noise.NewHandshakeState(noise.Config{
		CipherSuite: noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s),
		Pattern:     noise.HandshakeNK,
		Initiator:   true,
		Prologue:    preserves.EncodeCanonical(svc),
		PeerStatic:  pub,
	})
	if err != nil {
		tb.Fatal(err)
	}
	msg1, _, _, err := hs.WriteMessage(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	s := &rawSession{w: w, me: newBox(), session: session, obs: obs, resolveH: rh}
	w.do(func(t *dataspace.Turn) {
		s.initH = t.Assert(session, preserves.NewRecord(symInitiator, dataspace.Embed(t.Create(s.me))))
		t.Message(session, preserves.ByteStringFrom(msg1))
	})
	msg2 := s.nextMsg(tb, 0)
	_, cs1, cs2, err := hs.ReadMessage(nil, []byte(msg2.(preserves.ByteString)))
	if err != nil || cs1 == nil {
		tb.Fatalf("handshake: %v", err)
	}
	s.send, s.recv = cs1, cs2
	return s
}

// nextMsg waits for the i-th Packet from the responder.
func (s *rawSession) nextMsg(tb testing.TB, i int) preserves.Value {
	tb.Helper()
	waitFor(tb, "a packet from the responder", func() bool {
		s.me.mu.Lock()
		defer s.me.mu.Unlock()
		return len(s.me.msgs) > i
	})
	s.me.mu.Lock()
	defer s.me.mu.Unlock()
	return s.me.msgs[i]
}

func turnBytes(tb testing.TB, evs ...relay.Event) []byte {
	b, err := relay.AppendPacket(nil, relay.Packet{Kind: relay.TurnPacket, Events: evs}.ToValue(), relay.Binary)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func assertEv(v preserves.Value, h int64) relay.Event {
	return relay.Event{Oid: 0, Kind: relay.EvAssert, Value: v, Handle: h}
}

func (s *rawSession) seal(tb testing.TB, plain []byte) []byte {
	ct, err := s.send.Encrypt(nil, nil, plain)
	if err != nil {
		tb.Fatal(err)
	}
	return ct
}

func (s *rawSession) sendPacket(p preserves.Value) {
	s.w.do(func(t *dataspace.Turn) { t.Message(s.session, p) })
}

// watchTarget mirrors the assertions of a fresh dataspace into a box.
func watchTarget(w *world) (*dataspace.Ref, *box) {
	mirror := newBox()
	var ds *dataspace.Ref
	w.do(func(t *dataspace.Turn) {
		ds = t.Create(dataspace.NewDataspace())
		m := t.Create(mirror)
		t.During(ds, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(m, caps[0])
			return nil
		})
	})
	return ds, mirror
}

func (b *box) has(v preserves.Value) bool {
	for _, x := range b.all() {
		if preserves.Equal(x, v) {
			return true
		}
	}
	return false
}

func TestNoiseResponderRawInitiator(t *testing.T) {
	w := newWorld(t)
	sk, pk := testKeys(t)
	svc := preserves.NewRecord(preserves.Symbol("svc"), preserves.Int(1))
	ds, seen := watchTarget(w)
	w.do(func(t *dataspace.Turn) {
		t.Assert(w.bs, noiseBind(dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk)), ds, nil))
	})
	s := startRaw(t, w, svc, pk)

	// A Turn padded with 0x80 bytes.
	hello := preserves.NewRecord(preserves.Symbol("hello"))
	plain := append(turnBytes(t, assertEv(hello, 1)), 0x80, 0x80, 0x80)
	s.sendPacket(preserves.ByteStringFrom(s.seal(t, plain)))
	waitFor(t, "<hello> at the target", func() bool { return seen.has(hello) })

	// A Turn split into two fragments, each its own transport message.
	frag := preserves.NewRecord(preserves.Symbol("frag"), preserves.String(strings.Repeat("x", 100)))
	plain = turnBytes(t, assertEv(frag, 2))
	half := len(plain) / 2
	s.sendPacket(preserves.Sequence{preserves.ByteStringFrom(s.seal(t, plain[:half])), preserves.ByteStringFrom(s.seal(t, plain[half:]))})
	waitFor(t, "<frag> at the target", func() bool { return seen.has(frag) })

	// The responder's traffic is encrypted too: a Sync through oid 0 is
	// answered with `#t` to the initiator's oid 7.
	syncPeer := preserves.NewEmbedded(preserves.Sequence{preserves.Int(0), preserves.Int(7)})
	s.sendPacket(preserves.ByteStringFrom(s.seal(t, turnBytes(t, relay.Event{Oid: 0, Kind: relay.EvSync, Value: syncPeer}))))
	reply := s.nextMsg(t, 1)
	rb, ok := reply.(preserves.ByteString)
	if !ok {
		t.Fatalf("reply packet %v", reply)
	}
	pt, err := s.recv.Decrypt(nil, nil, []byte(rb))
	if err != nil {
		t.Fatal(err)
	}
	v, err := preserves.DecodeBinary(stripNoisePadding(pt), preserves.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := relay.ParsePacket(v)
	if err != nil || pkt.Kind != relay.TurnPacket || len(pkt.Events) != 1 ||
		pkt.Events[0].Oid != 7 || pkt.Events[0].Kind != relay.EvMessage || !preserves.Equal(pkt.Events[0].Value, preserves.Bool(true)) {
		t.Fatalf("reply %v (%v)", v, err)
	}

	// A corrupted ciphertext ends the session: its assertions go, and so
	// does the <ok #:SESSION> answer.
	never := preserves.NewRecord(preserves.Symbol("never"))
	ct := s.seal(t, turnBytes(t, assertEv(never, 3)))
	ct[len(ct)/2] ^= 1
	s.sendPacket(preserves.ByteStringFrom(ct))
	waitFor(t, "assertions retracted", func() bool { return !seen.has(hello) && !seen.has(frag) })
	waitFor(t, "ok withdrawn", func() bool { return len(s.obs.all()) == 0 })
	if seen.has(never) {
		t.Fatal("the corrupted turn was applied")
	}
}

func TestNoiseResponderEnds(t *testing.T) {
	w := newWorld(t)
	sk, pk := testKeys(t)
	svc := preserves.String("ends")
	ds, seen := watchTarget(w)
	w.do(func(t *dataspace.Turn) {
		t.Assert(w.bs, noiseBind(dict(symService, svc, symNoiseKey, bs(pk), symSecretKey, bs(sk)), ds, nil))
	})
	hello := preserves.NewRecord(preserves.Symbol("hello"))

	t.Run("retracted initiator", func(t *testing.T) {
		s := startRaw(t, w, svc, pk)
		s.sendPacket(preserves.ByteStringFrom(s.seal(t, turnBytes(t, assertEv(hello, 1)))))
		waitFor(t, "<hello>", func() bool { return seen.has(hello) })
		w.do(func(t *dataspace.Turn) { t.Retract(s.initH) })
		waitFor(t, "<hello> retracted", func() bool { return !seen.has(hello) })
		waitFor(t, "ok withdrawn", func() bool { return len(s.obs.all()) == 0 })
	})
	t.Run("retracted resolve", func(t *testing.T) {
		s := startRaw(t, w, svc, pk)
		s.sendPacket(preserves.ByteStringFrom(s.seal(t, turnBytes(t, assertEv(hello, 1)))))
		waitFor(t, "<hello>", func() bool { return seen.has(hello) })
		w.do(func(t *dataspace.Turn) { t.Retract(s.resolveH) })
		waitFor(t, "<hello> retracted", func() bool { return !seen.has(hello) })
	})
	t.Run("handshake payload", func(t *testing.T) {
		obs, _, ans := resolveNoise(t, w, svc)
		session, _ := dataspace.RefOf(ans.(*preserves.Record).Fields[0])
		hs, _ := noise.NewHandshakeState(noise.Config{
			CipherSuite: noiseSuite, Pattern: noise.HandshakeNK, Initiator: true,
			Prologue: preserves.EncodeCanonical(svc), PeerStatic: pk,
		})
		msg1, _, _, _ := hs.WriteMessage(nil, []byte("payload"))
		me := newBox()
		w.do(func(t *dataspace.Turn) {
			t.Assert(session, preserves.NewRecord(symInitiator, dataspace.Embed(t.Create(me))))
			t.Message(session, preserves.ByteStringFrom(msg1))
		})
		waitFor(t, "ok withdrawn", func() bool { return len(obs.all()) == 0 })
		me.mu.Lock()
		defer me.mu.Unlock()
		if len(me.msgs) != 0 {
			t.Fatalf("responder answered %v", me.msgs)
		}
	})
	t.Run("wrong prologue", func(t *testing.T) {
		obs, _, ans := resolveNoise(t, w, svc)
		session, _ := dataspace.RefOf(ans.(*preserves.Record).Fields[0])
		hs, _ := noise.NewHandshakeState(noise.Config{
			CipherSuite: noiseSuite, Pattern: noise.HandshakeNK, Initiator: true,
			Prologue: preserves.EncodeCanonical(preserves.String("other")), PeerStatic: pk,
		})
		msg1, _, _, _ := hs.WriteMessage(nil, nil)
		w.do(func(t *dataspace.Turn) {
			t.Assert(session, preserves.NewRecord(symInitiator, dataspace.Embed(t.Create(newBox()))))
			t.Message(session, preserves.ByteStringFrom(msg1))
		})
		waitFor(t, "ok withdrawn", func() bool { return len(obs.all()) == 0 })
	})
}

// Q12: specs that validate but cannot run, or cannot be used, answer
// `<error "…">` instead of staying silent.
func TestNoiseResolveErrors(t *testing.T) {
	w := newWorld(t)
	sk, pk := testKeys(t)
	binds := map[string]preserves.Value{
		"multi-psk":   dict(symService, preserves.String("multi-psk"), symNoiseKey, bs(pk), symSecretKey, bs(sk), symProtocol, preserves.String("Noise_NKpsk0+psk2_25519_ChaChaPoly_BLAKE2s")),
		"k-pattern":   dict(symService, preserves.String("k-pattern"), symNoiseKey, bs(pk), symSecretKey, bs(sk), symProtocol, preserves.String("Noise_KK_25519_ChaChaPoly_BLAKE2s")),
		"no-secret":   dict(symService, preserves.String("no-secret"), symNoiseKey, bs(pk)),
		"bad-spec":    dict(symService, preserves.String("bad-spec"), symNoiseKey, bs(pk), symProtocol, preserves.String("Noise_ZZ_25519_ChaChaPoly_BLAKE2s")),
		"short-psk":   dict(symService, preserves.String("short-psk"), symNoiseKey, bs(pk), symPreSharedKeys, preserves.Sequence{bs([]byte("x"))}),
		"secret-type": dict(symService, preserves.String("secret-type"), symNoiseKey, bs(pk), symSecretKey, preserves.Int(0)),
	}
	w.do(func(t *dataspace.Turn) {
		for _, spec := range binds {
			t.Assert(w.bs, noiseBind(spec, t.Create(newBox()), nil))
		}
	})
	for name := range binds {
		t.Run(name, func(t *testing.T) {
			_, _, ans := resolveNoise(t, w, preserves.String(name))
			if !isErrorString(ans) {
				t.Fatalf("got %v", ans)
			}
		})
	}
	t.Run("noise step without a selector", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(preserves.NewRecord(symNoise), t.Create(obs))) })
		if v := obs.only(t); !preserves.Equal(v, errInvalid) {
			t.Fatalf("got %v", v)
		}
	})
	if _, err := (&noiseSpec{service: preserves.Int(1), protocol: "Noise_NNpsk0+psk1_25519_ChaChaPoly_BLAKE2s"}).handshake(false); !errors.Is(err, errNoiseUnsupported) {
		t.Fatalf("multi-psk: %v is not errNoiseUnsupported", err)
	}
}

// Every pattern flynn/noise can run completes the handshake between the
// two sides of noise_session.go, with psk placements and drawn keys.
func TestNoiseSessionPatterns(t *testing.T) {
	sk, pk := testKeys(t)
	psk := make([]byte, 32)
	psk[3] = 7
	for _, p := range []string{"N", "X", "NN", "NK", "NX", "XN", "XK", "XX", "IN", "IK", "IX", "NNpsk0", "NKpsk2", "XXpsk3", "Npsk1"} {
		for _, keys := range [][][]byte{nil, {psk}} {
			spec := &noiseSpec{service: preserves.Symbol("p"), key: pk, secret: sk, protocol: "Noise_" + p + noiseSuffix, psks: keys}
			ini, err := spec.handshake(true)
			if err != nil {
				t.Fatalf("%s initiator: %v", p, err)
			}
			res, err := spec.handshake(false)
			if err != nil {
				t.Fatalf("%s responder: %v", p, err)
			}
			parties := []*noise.HandshakeState{ini, res}
			var cs [2][2]*noise.CipherState
			for i := 0; cs[0][0] == nil; i++ {
				msg, c1, c2, err := parties[i%2].WriteMessage(nil, nil)
				if err != nil {
					t.Fatalf("%s write %d: %v", p, i, err)
				}
				cs[i%2] = [2]*noise.CipherState{c1, c2}
				_, d1, d2, err := parties[1-i%2].ReadMessage(nil, msg)
				if err != nil {
					t.Fatalf("%s read %d: %v", p, i, err)
				}
				cs[1-i%2] = [2]*noise.CipherState{d1, d2}
				if i > 4 {
					t.Fatalf("%s: no end to the handshake", p)
				}
			}
			ct, _ := cs[0][0].Encrypt(nil, nil, []byte("hi"))
			if pt, err := cs[1][0].Decrypt(nil, nil, ct); err != nil || string(pt) != "hi" {
				t.Fatalf("%s: transport %q %v", p, pt, err)
			}
		}
	}
	// A responder whose PSK differs from the initiator's fails.
	a := &noiseSpec{service: preserves.Symbol("p"), key: pk, secret: sk, protocol: "Noise_NNpsk0" + noiseSuffix, psks: [][]byte{psk}}
	b := &noiseSpec{service: preserves.Symbol("p"), key: pk, secret: sk, protocol: "Noise_NNpsk0" + noiseSuffix}
	ini, _ := a.handshake(true)
	res, _ := b.handshake(false)
	msg, _, _, _ := ini.WriteMessage(nil, nil)
	if _, _, _, err := res.ReadMessage(nil, msg); err == nil {
		t.Fatal("mismatched PSKs agreed")
	}
}

func TestSealNoisePacket(t *testing.T) {
	mk := func() (*noise.CipherState, *noise.CipherState) {
		var k [32]byte
		return noise.UnsafeNewCipherState(noiseSuite, k, 0), noise.UnsafeNewCipherState(noiseSuite, k, 0)
	}
	for _, n := range []int{0, 1, noiseMaxPlaintext, noiseMaxPlaintext + 1, 3*noiseMaxPlaintext + 5} {
		enc, dec := mk()
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(i * 7)
		}
		v, err := sealNoisePacket(enc, plain)
		if err != nil {
			t.Fatal(err)
		}
		_, isSeq := v.(preserves.Sequence)
		if isSeq != (n > noiseMaxPlaintext) {
			t.Fatalf("%d bytes: fragmented=%v", n, isSeq)
		}
		pieces, err := decodeNoisePacket(v)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		for _, p := range pieces {
			if len(p) > noiseMaxMessage {
				t.Fatalf("%d-byte message", len(p))
			}
			if got, err = dec.Decrypt(got, nil, p); err != nil {
				t.Fatal(err)
			}
		}
		if string(got) != string(plain) {
			t.Fatalf("%d bytes: round trip differs", n)
		}
	}
	if _, err := decodeNoisePacket(preserves.ByteString(make([]byte, noiseMaxMessage+1))); err == nil {
		t.Fatal("oversize packet accepted")
	}
	if _, err := decodeNoisePacket(preserves.Sequence{preserves.Int(1)}); err == nil {
		t.Fatal("non-bytes fragment accepted")
	}
	if got := stripNoisePadding([]byte{1, 0x80, 2, 0x80, 0x80}); string(got) != "\x01\x80\x02" {
		t.Fatalf("stripped %v", got)
	}
}

// The direct-resolution race applies to noise steps too: a party in the
// bind space answering the forwarded Resolve first wins.
func TestNoiseDirectAnswer(t *testing.T) {
	w := newWorld(t)
	w.do(func(t *dataspace.Turn) {
		p := pattern.Rec(symResolve, pattern.Rec(symNoise, pattern.Lift(preserves.String("direct"))), pattern.Capture())
		t.During(w.bs, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			k, _ := dataspace.RefOf(caps[0])
			t.Assert(k, preserves.NewRecord(symError, preserves.String("no such service")))
			return nil
		})
	})
	_, _, ans := resolveNoise(t, w, preserves.String("direct"))
	if want := preserves.NewRecord(symError, preserves.String("no such service")); !preserves.Equal(ans, want) {
		t.Fatalf("got %v", ans)
	}
}
