package gatekeeper

import (
	"strings"
	"testing"

	"github.com/flynn/noise"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	noiseschema "github.com/syndicate-go/syndicate/dataspace/schemas/noise"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/preserves"
)

// testKeys is a fixed responder key pair.
func testKeys(tb testing.TB) (secret, public []byte) {
	secret = make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i + 1)
	}
	public, err := noisesession.PublicKey(secret)
	if err != nil {
		tb.Fatal(err)
	}
	return secret, public
}

func dict(kvs ...preserves.Value) *preserves.Dictionary { return preserves.Dict(kvs...) }

func bs(b []byte) preserves.Value { return preserves.ByteStringFrom(b) }

func noiseBind(spec preserves.Value, target *dataspace.Ref, obs *dataspace.Ref) preserves.Value {
	var o preserves.Value = preserves.Bool(false)
	if obs != nil {
		o = dataspace.Embed(obs)
	}
	return preserves.NewRecord(gkschema.LabelBind, preserves.NewRecord(noisesession.SymNoise, spec), dataspace.Embed(target), o)
}

func isErrorString(v preserves.Value) bool {
	r, ok := v.(*preserves.Record)
	if !ok || r.Label != rpc.LabelError || len(r.Fields) != 1 {
		return false
	}
	_, ok = r.Fields[0].(preserves.String)
	return ok
}

// TestNoiseBindValidation checks the answers to noise binds; the spec
// parser's full table is noisesession.TestParseSpec.
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
		{"secret and default protocol left out", dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk), noisesession.SymSecretKey, bs(sk), noisesession.SymProtocol, preserves.String(noisesession.DefaultProtocol)),
			dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk))},
		{"psk variant and keys", dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk), noisesession.SymSecretKey, bs(sk), noisesession.SymProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"), noisesession.SymPreSharedKeys, preserves.Sequence{bs(psk)}),
			dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk), noisesession.SymProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s"), noisesession.SymPreSharedKeys, preserves.Sequence{bs(psk)})},
		{"no secret key", dict(noisesession.SymService, preserves.Symbol("s2"), noisesession.SymKey, bs(nil)),
			dict(noisesession.SymService, preserves.Symbol("s2"), noisesession.SymKey, bs(nil))},
		{"not a dictionary", preserves.Int(1), nil},
		{"unknown pattern", dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk), noisesession.SymProtocol, preserves.String("Noise_NQ_25519_ChaChaPoly_BLAKE2s")), nil},
		{"key does not match secretKey", dict(noisesession.SymService, svc, noisesession.SymKey, bs(sk), noisesession.SymSecretKey, bs(sk)), nil},
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
			want := preserves.NewRecord(gkschema.LabelBound, preserves.NewRecord(noisesession.SymNoise, c.want))
			if !preserves.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("target not a capability", func(t *testing.T) {
		obs := newBox()
		w.do(func(t *dataspace.Turn) {
			t.Assert(w.bs, preserves.NewRecord(gkschema.LabelBind, preserves.NewRecord(noisesession.SymNoise, dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk))), preserves.Int(3), dataspace.Embed(t.Create(obs))))
		})
		if got := obs.only(t); !isErrorString(got) {
			t.Fatalf("got %v", got)
		}
	})
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
		h = t.Assert(w.gk, resolve(preserves.NewRecord(noisesession.SymNoise, svc), t.Create(obs)))
	})
	return obs, h, obs.only(tb)
}

func startRaw(tb testing.TB, w *world, svc preserves.Value, pub []byte) *rawSession {
	tb.Helper()
	obs, rh, ans := resolveNoise(tb, w, svc)
	r, ok := ans.(*preserves.Record)
	if !ok || r.Label != rpc.LabelOk {
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
		s.initH = t.Assert(session, preserves.NewRecord(noiseschema.LabelInitiator, dataspace.Embed(t.Create(s.me))))
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
		t.Assert(w.bs, noiseBind(dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk), noisesession.SymSecretKey, bs(sk)), ds, nil))
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
	v, err := preserves.DecodeBinary(noisesession.StripPadding(pt), preserves.DecodeOptions{})
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
		t.Assert(w.bs, noiseBind(dict(noisesession.SymService, svc, noisesession.SymKey, bs(pk), noisesession.SymSecretKey, bs(sk)), ds, nil))
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
			CipherSuite: noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s), Pattern: noise.HandshakeNK, Initiator: true,
			Prologue: preserves.EncodeCanonical(svc), PeerStatic: pk,
		})
		msg1, _, _, _ := hs.WriteMessage(nil, []byte("payload"))
		me := newBox()
		w.do(func(t *dataspace.Turn) {
			t.Assert(session, preserves.NewRecord(noiseschema.LabelInitiator, dataspace.Embed(t.Create(me))))
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
			CipherSuite: noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s), Pattern: noise.HandshakeNK, Initiator: true,
			Prologue: preserves.EncodeCanonical(preserves.String("other")), PeerStatic: pk,
		})
		msg1, _, _, _ := hs.WriteMessage(nil, nil)
		w.do(func(t *dataspace.Turn) {
			t.Assert(session, preserves.NewRecord(noiseschema.LabelInitiator, dataspace.Embed(t.Create(newBox()))))
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
		"multi-psk":   dict(noisesession.SymService, preserves.String("multi-psk"), noisesession.SymKey, bs(pk), noisesession.SymSecretKey, bs(sk), noisesession.SymProtocol, preserves.String("Noise_NKpsk0+psk2_25519_ChaChaPoly_BLAKE2s")),
		"k-pattern":   dict(noisesession.SymService, preserves.String("k-pattern"), noisesession.SymKey, bs(pk), noisesession.SymSecretKey, bs(sk), noisesession.SymProtocol, preserves.String("Noise_KK_25519_ChaChaPoly_BLAKE2s")),
		"no-secret":   dict(noisesession.SymService, preserves.String("no-secret"), noisesession.SymKey, bs(pk)),
		"bad-spec":    dict(noisesession.SymService, preserves.String("bad-spec"), noisesession.SymKey, bs(pk), noisesession.SymProtocol, preserves.String("Noise_ZZ_25519_ChaChaPoly_BLAKE2s")),
		"short-psk":   dict(noisesession.SymService, preserves.String("short-psk"), noisesession.SymKey, bs(pk), noisesession.SymPreSharedKeys, preserves.Sequence{bs([]byte("x"))}),
		"secret-type": dict(noisesession.SymService, preserves.String("secret-type"), noisesession.SymKey, bs(pk), noisesession.SymSecretKey, preserves.Int(0)),
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
		w.do(func(t *dataspace.Turn) {
			t.Assert(w.gk, resolve(preserves.NewRecord(noisesession.SymNoise), t.Create(obs)))
		})
		if v := obs.only(t); !preserves.Equal(v, errInvalid) {
			t.Fatalf("got %v", v)
		}
	})
}

// The direct-resolution race applies to noise steps too: a party in the
// bind space answering the forwarded Resolve first wins.
func TestNoiseDirectAnswer(t *testing.T) {
	w := newWorld(t)
	w.do(func(t *dataspace.Turn) {
		p := pattern.Rec(gkschema.LabelResolve, pattern.Rec(noisesession.SymNoise, pattern.MustLift(preserves.String("direct"))), pattern.Capture())
		t.During(w.bs, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			k, _ := dataspace.RefOf(caps[0])
			t.Assert(k, preserves.NewRecord(rpc.LabelError, preserves.String("no such service")))
			return nil
		})
	})
	_, _, ans := resolveNoise(t, w, preserves.String("direct"))
	if want := preserves.NewRecord(rpc.LabelError, preserves.String("no such service")); !preserves.Equal(ans, want) {
		t.Fatalf("got %v", ans)
	}
}
