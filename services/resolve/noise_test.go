package resolve

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/gatekeeper"
)

// held records the assertions currently held at it.
type held struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	vals map[dataspace.Handle]preserves.Value
}

func newHeld() *held { return &held{vals: make(map[dataspace.Handle]preserves.Value)} }

func (b *held) Assert(_ *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	b.mu.Lock()
	b.vals[h] = v
	b.mu.Unlock()
	return nil
}

func (b *held) Retract(_ *dataspace.Turn, h dataspace.Handle) error {
	b.mu.Lock()
	delete(b.vals, h)
	b.mu.Unlock()
	return nil
}

func (b *held) has(v preserves.Value) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range b.vals {
		if preserves.Equal(x, v) {
			return true
		}
	}
	return false
}

func noiseKeys(tb testing.TB) (secret, public []byte) {
	secret = bytes.Repeat([]byte{0x5a}, 32)
	public, err := noisesession.PublicKey(secret)
	if err != nil {
		tb.Fatal(err)
	}
	return secret, public
}

func sdict(kvs ...preserves.Value) *preserves.Dictionary { return preserves.Dict(kvs...) }

// startNoiseServer runs our own gatekeeper over a bind space holding
// `<bind <noise SPEC> #:target #f>` for each spec, served as oid 0 on a
// loopback TCP port; seen mirrors the target dataspace.
func startNoiseServer(tb testing.TB, specs ...preserves.Value) (port int, seen *held) {
	port, seen, _ = startNoiseServerWithBinds(tb, specs...)
	return port, seen
}

// startNoiseServerWithBinds is startNoiseServer also returning a function
// that retracts every bind.
func startNoiseServerWithBinds(tb testing.TB, specs ...preserves.Value) (port int, seen *held, unbind func()) {
	sys := newSys(tb)
	seen = newHeld()
	gkc := make(chan *dataspace.Ref, 1)
	var fr dataspace.FacetRef
	var binds []dataspace.Handle
	unbind = func() {
		fr.Activate(func(t *dataspace.Turn) error {
			for _, h := range binds {
				t.Retract(h)
			}
			return nil
		})
	}
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		fr = t.FacetRef()
		bs := t.Create(dataspace.NewDataspace())
		target := t.Create(dataspace.NewDataspace())
		m := t.Create(seen)
		t.During(target, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(m, caps[0])
			return nil
		})
		for _, spec := range specs {
			binds = append(binds, t.Assert(bs, preserves.NewRecord(preserves.Symbol("bind"), preserves.NewRecord(noisesession.SymNoise, spec), dataspace.Embed(target), preserves.Bool(false))))
		}
		gkc <- gatekeeper.New(t, bs, zerolog.Nop())
		return nil
	})
	gk := <-gkc
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			relay.Spawn(sys, "conn", c, relay.Options{InitialRef: gk})
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, seen, unbind
}

// When the responder's side goes (here: its bind is withdrawn, which
// stops the session actor and its <ok #:SESSION>), the initiator's session
// ends: the resolved path is withdrawn and so is everything asserted
// through it.
func TestNoiseResponderWithdraws(t *testing.T) {
	sk, pk := noiseKeys(t)
	port, seen, unbind := startNoiseServerWithBinds(t, sdict(noisesession.SymService, preserves.Symbol("w"), noisesession.SymKey, preserves.ByteStringFrom(pk), noisesession.SymSecretKey, preserves.ByteStringFrom(sk)))
	c := newClient(t)
	route := preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, preserves.NewRecord(noisesession.SymNoise, sdict(noisesession.SymService, preserves.Symbol("w"), noisesession.SymKey, preserves.ByteStringFrom(pk))))
	req := preserves.NewRecord(gkschema.LabelResolvePath, route)
	c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
	waitFor(t, "resolved", func() bool { return c.answer(req) != nil })
	tgt, _ := dataspace.RefOf(c.answer(req).(*preserves.Record).Fields[0].(*preserves.Record).Fields[2])
	hello := preserves.NewRecord(preserves.Symbol("hello"))
	c.do(func(t *dataspace.Turn) { t.Assert(tgt, hello) })
	waitFor(t, "assertion at the target", func() bool { return seen.has(hello) })
	unbind()
	waitFor(t, "answer withdrawn", func() bool { return c.answer(req) == nil })
	waitFor(t, "assertion withdrawn", func() bool { return !seen.has(hello) })
}

// End to end: our initiator (this package) through a TCP relay to our
// responder (services/gatekeeper), for several protocols; assertions made
// through the resolved path reach the bound target and are withdrawn with
// the question.
func TestNoiseResolvePath(t *testing.T) {
	sk, pk := noiseKeys(t)
	psk := bytes.Repeat([]byte{7}, 32)
	type proto struct {
		name, protocol string
		psks           preserves.Value
	}
	protos := []proto{
		{"nk-default", "", nil},
		{"xx", "Noise_XX_25519_ChaChaPoly_BLAKE2s", nil},
		{"nn-psk0", "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s", preserves.Sequence{preserves.ByteStringFrom(psk)}},
		{"ik-psk2-zero", "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s", nil},
	}
	spec := func(p proto, secret bool) preserves.Value {
		kvs := []preserves.Value{noisesession.SymService, preserves.String(p.name), noisesession.SymKey, preserves.ByteStringFrom(pk)}
		if secret {
			kvs = append(kvs, noisesession.SymSecretKey, preserves.ByteStringFrom(sk))
		}
		if p.protocol != "" {
			kvs = append(kvs, noisesession.SymProtocol, preserves.String(p.protocol))
		}
		if p.psks != nil {
			kvs = append(kvs, noisesession.SymPreSharedKeys, p.psks)
		}
		return sdict(kvs...)
	}
	var specs []preserves.Value
	for _, p := range protos {
		specs = append(specs, spec(p, true))
	}
	port, seen := startNoiseServer(t, specs...)
	c := newClient(t)
	for _, p := range protos {
		t.Run(p.name, func(t *testing.T) {
			route := preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, preserves.NewRecord(noisesession.SymNoise, spec(p, false)))
			req := preserves.NewRecord(gkschema.LabelResolvePath, route)
			var qh dataspace.Handle
			c.do(func(t *dataspace.Turn) { qh = t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
			waitFor(t, "resolved", func() bool { return c.answer(req) != nil })
			a := c.answer(req).(*preserves.Record)
			rp, isRec := a.Fields[0].(*preserves.Record)
			if a.Label != rpc.LabelOk || !isRec || rp.Label != gkschema.LabelResolvedPath {
				t.Fatalf("answer %v", a)
			}
			tgt, _ := dataspace.RefOf(rp.Fields[2])
			hello := preserves.NewRecord(preserves.Symbol("hello"), preserves.String(p.name), preserves.String(strings.Repeat("y", 70000)))
			c.do(func(t *dataspace.Turn) { t.Assert(tgt, hello) })
			waitFor(t, "assertion at the target", func() bool { return seen.has(hello) })
			c.do(func(t *dataspace.Turn) { t.Retract(qh) })
			waitFor(t, "assertion withdrawn", func() bool { return !seen.has(hello) })
		})
	}
}

// Specs that cannot be used answer the step, and so the route, with
// `<error "…">`.
func TestNoiseStepErrors(t *testing.T) {
	port, _ := startNoiseServer(t)
	c := newClient(t)
	_, pk := noiseKeys(t)
	for name, s := range map[string]preserves.Value{
		"not a dictionary": preserves.Int(1),
		"multi psk":        sdict(noisesession.SymService, preserves.String("x"), noisesession.SymKey, preserves.ByteStringFrom(pk), noisesession.SymProtocol, preserves.String("Noise_NNpsk0+psk2_25519_ChaChaPoly_BLAKE2s")),
		"K pattern":        sdict(noisesession.SymService, preserves.String("x"), noisesession.SymKey, preserves.ByteStringFrom(pk), noisesession.SymProtocol, preserves.String("Noise_KK_25519_ChaChaPoly_BLAKE2s")),
		"short key for NK": sdict(noisesession.SymService, preserves.String("x"), noisesession.SymKey, preserves.ByteString("k")),
	} {
		t.Run(name, func(t *testing.T) {
			req := preserves.NewRecord(gkschema.LabelResolvePath, preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, preserves.NewRecord(noisesession.SymNoise, s)))
			c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
			waitFor(t, "an answer", func() bool { return c.answer(req) != nil })
			r, isRec := c.answer(req).(*preserves.Record)
			if !isRec || r.Label != rpc.LabelError || len(r.Fields) != 1 {
				t.Fatalf("answer %v", c.answer(req))
			}
			if _, isStr := r.Fields[0].(preserves.String); !isStr {
				t.Fatalf("answer %v", r)
			}
		})
	}
}

// fakeResponder answers every noise Resolve with `<ok #:SESSION>` (or, for
// service "refuse", `<error refused>`); the session answers the first
// handshake message with garbage.
type fakeResponder struct {
	dataspace.BaseEntity
}

func (f *fakeResponder) Assert(t *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	r := v.(*preserves.Record)
	obs, _ := dataspace.RefOf(r.Fields[1])
	if preserves.Equal(r.Fields[0].(*preserves.Record).Fields[0], preserves.String("refuse")) {
		t.Assert(obs, fail(preserves.Symbol("refused")))
		return nil
	}
	t.Assert(obs, ok(dataspace.Embed(t.Create(&garbageSession{}))))
	return nil
}

type garbageSession struct {
	dataspace.BaseEntity
	peer *dataspace.Ref
}

func (g *garbageSession) Assert(_ *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	g.peer, _ = dataspace.RefOf(v.(*preserves.Record).Fields[0])
	return nil
}

func (g *garbageSession) Message(t *dataspace.Turn, _ preserves.Value) error {
	t.Message(g.peer, preserves.ByteString(strings.Repeat("garbage!", 8)))
	return nil
}

func TestNoiseStepFailures(t *testing.T) {
	c := newClient(t)
	_, pk := noiseKeys(t)
	var gk *dataspace.Ref
	c.do(func(t *dataspace.Turn) { gk = t.Create(&fakeResponder{}) })
	step := func(svc string) preserves.Value {
		return preserves.NewRecord(gkschema.LabelResolvePathStep, dataspace.Embed(gk), preserves.NewRecord(noisesession.SymNoise,
			sdict(noisesession.SymService, preserves.String(svc), noisesession.SymKey, preserves.ByteStringFrom(pk))))
	}
	t.Run("handshake garbage", func(t *testing.T) {
		req := step("garbage")
		c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
		waitFor(t, "an answer", func() bool { return c.answer(req) != nil })
		r, isRec := c.answer(req).(*preserves.Record)
		if !isRec || r.Label != rpc.LabelError {
			t.Fatalf("answer %v", c.answer(req))
		}
		if _, isStr := r.Fields[0].(preserves.String); !isStr {
			t.Fatalf("answer %v", r)
		}
	})
	t.Run("error mirrored", func(t *testing.T) {
		req := step("refuse")
		c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
		want := fail(preserves.Symbol("refused"))
		waitFor(t, "the refusal", func() bool { a := c.answer(req); return a != nil && preserves.Equal(a, want) })
	})
}

// An initiator given the responder's key checks it even when the pattern
// transmits the key (XX): a responder proving another key is refused.
func TestNoiseWrongResponderKey(t *testing.T) {
	sk, pk := noiseKeys(t)
	xx := preserves.String("Noise_XX_25519_ChaChaPoly_BLAKE2s")
	port, _ := startNoiseServer(t, sdict(noisesession.SymService, preserves.Symbol("xx"), noisesession.SymKey, preserves.ByteStringFrom(pk), noisesession.SymSecretKey, preserves.ByteStringFrom(sk), noisesession.SymProtocol, xx))
	c := newClient(t)
	other := bytes.Repeat([]byte{1}, 32)
	route := preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, preserves.NewRecord(noisesession.SymNoise, sdict(noisesession.SymService, preserves.Symbol("xx"), noisesession.SymKey, preserves.ByteStringFrom(other), noisesession.SymProtocol, xx)))
	req := preserves.NewRecord(gkschema.LabelResolvePath, route)
	c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
	waitFor(t, "an answer", func() bool { return c.answer(req) != nil })
	if r, isRec := c.answer(req).(*preserves.Record); !isRec || r.Label != rpc.LabelError {
		t.Fatalf("answer %v", c.answer(req))
	}
}
