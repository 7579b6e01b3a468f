package resolve

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

var waitFor = testutil.WaitFor

func newSys(tb testing.TB) *dataspace.System {
	s := dataspacetest.NewSystem(tb, dataspace.Options{})
	return s
}

// fakeGK answers `<resolve <ref {oid: "good" …}> #:k>` with `<ok #:target>`
// and other steps with `<error nope>`.
type fakeGK struct {
	dataspace.BaseEntity
	target *dataspace.Ref
}

func (g *fakeGK) Assert(t *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	r := v.(*preserves.Record)
	k, _ := dataspace.RefOf(r.Fields[1])
	step := r.Fields[0].(*preserves.Record)
	if d, ok := step.Fields[0].(*preserves.Dictionary); ok {
		if oid, _ := d.Get(preserves.Symbol("oid")); preserves.Equal(oid, preserves.String("good")) {
			t.Assert(k, ok1(dataspace.Embed(g.target)))
			return nil
		}
	}
	t.Assert(k, fail(preserves.Symbol("nope")))
	return nil
}

func ok1(v preserves.Value) preserves.Value { return ok(v) }

type sink struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	msgs []string
}

func (s *sink) Message(_ *dataspace.Turn, v preserves.Value) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, preserves.FormatText(v))
	s.mu.Unlock()
	return nil
}

func (s *sink) n() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.msgs) }

// startServer listens on loopback and serves a fake gatekeeper as oid 0.
func startServer(tb testing.TB) (port int, target *sink, conns func() int) {
	sys := newSys(tb)
	target = &sink{}
	gkc := make(chan *dataspace.Ref, 1)
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		gkc <- t.Create(&fakeGK{target: t.Create(target)})
		return nil
	})
	gk := <-gkc
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			relay.Spawn(sys, "conn", c, relay.Options{InitialRef: gk})
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, target, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// client is the resolving side: a config dataspace with the services and
// a mirror of `<a …>` answers.
type client struct {
	fr  dataspace.FacetRef
	cfg *dataspace.Ref
	mu  sync.Mutex
	ans map[string]preserves.Value // request text → answer
}

func newClient(tb testing.TB) *client { return newClientLogging(tb, zerolog.Nop()) }

// newClientLogging is newClient with the services logging to log.
func newClientLogging(tb testing.TB, log zerolog.Logger) *client {
	sys := newSys(tb)
	c := &client{ans: make(map[string]preserves.Value)}
	ch := make(chan struct{})
	sys.Spawn("client", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		c.fr = t.FacetRef()
		c.cfg = t.Create(dataspace.NewDataspace())
		if err := BootWith(t, services.Env{Config: c.cfg, Logger: log}, Options{First: 10 * time.Millisecond, Cap: 50 * time.Millisecond}); err != nil {
			return err
		}
		t.During(c.cfg, pattern.Rec(rpc.LabelA, pattern.Capture(), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			k := preserves.FormatText(caps[0])
			c.mu.Lock()
			c.ans[k] = caps[1]
			c.mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				c.mu.Lock()
				delete(c.ans, k)
				c.mu.Unlock()
				return nil
			})
			return nil
		})
		close(ch)
		return nil
	})
	<-ch
	return c
}

func (c *client) do(fn func(t *dataspace.Turn)) {
	c.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

func (c *client) answer(req preserves.Value) preserves.Value {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ans[preserves.FormatText(req)]
}

func tcp(port int) preserves.Value {
	return transport.TCPAddr("127.0.0.1", port).Value()
}

func TestConnectTransport(t *testing.T) {
	port, _, conns := startServer(t)
	c := newClient(t)
	req := preserves.NewRecord(gkschema.LabelConnectTransport, tcp(port))
	c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
	waitFor(t, "connected", func() bool { return c.answer(req) != nil })
	a := c.answer(req).(*preserves.Record)
	ct := a.Fields[0].(*preserves.Record)
	if a.Label != rpc.LabelOk || ct.Label != gkschema.LabelConnectedTransport || !preserves.Equal(ct.Fields[0], tcp(port)) {
		t.Fatalf("answer %v", a)
	}
	ctl, _ := dataspace.RefOf(ct.Fields[1])
	peer, _ := dataspace.RefOf(ct.Fields[2])
	// The peer is the server's oid 0: a resolve through it works.
	k := &sink{}
	c.do(func(t *dataspace.Turn) {
		t.Assert(peer, preserves.NewRecord(gkschema.LabelResolve, preserves.NewRecord(sturdy.LabelRef, preserves.NewDictionary(
			preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("good")})), dataspace.Embed(t.Create(k))))
	})
	// force-disconnect: the connection is dropped and re-established.
	c.do(func(t *dataspace.Turn) { t.Message(ctl, preserves.NewRecord(gkschema.LabelForceDisconnect)) })
	waitFor(t, "reconnect", func() bool { return conns() == 2 && c.answer(req) != nil })
}

func TestConnectTransportRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := newClient(t)
	req := preserves.NewRecord(gkschema.LabelConnectTransport, tcp(port))
	c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
	want := fail(preserves.Symbol("ConnectionRefused"))
	waitFor(t, "error answer", func() bool { a := c.answer(req); return a != nil && preserves.Equal(a, want) })
}

func TestResolvePath(t *testing.T) {
	port, target, _ := startServer(t)
	c := newClient(t)
	good := preserves.NewRecord(sturdy.LabelRef, preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("good")},
		preserves.DictEntry{Key: preserves.Symbol("sig"), Value: preserves.ByteString("")}))
	route := preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, good)
	req := preserves.NewRecord(gkschema.LabelResolvePath, route)
	c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
	waitFor(t, "resolved", func() bool { return c.answer(req) != nil })
	a := c.answer(req).(*preserves.Record)
	rp, isRec := a.Fields[0].(*preserves.Record)
	if a.Label != rpc.LabelOk || !isRec || rp.Label != gkschema.LabelResolvedPath || !preserves.Equal(rp.Fields[0], tcp(port)) {
		t.Fatalf("answer %v", a)
	}
	tgt, _ := dataspace.RefOf(rp.Fields[2])
	c.do(func(t *dataspace.Turn) { t.Message(tgt, preserves.Symbol("via-route")) })
	waitFor(t, "message at the target", func() bool { return target.n() == 1 })

	// A step the gatekeeper refuses: the error is the route's answer.
	bad := preserves.NewRecord(sturdy.LabelRef, preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("bad")},
		preserves.DictEntry{Key: preserves.Symbol("sig"), Value: preserves.ByteString("")}))
	req2 := preserves.NewRecord(gkschema.LabelResolvePath, preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, bad))
	c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req2)) })
	want := fail(preserves.Symbol("nope"))
	waitFor(t, "error answer", func() bool { a := c.answer(req2); return a != nil && preserves.Equal(a, want) })
}

// TestResolvePathWithSet (issue 12): the one-line script
// `<q <resolve-path <route [#{1}]>>>` used to panic in pattern.Lift and end
// the server. The route is answered with an error, and the service keeps
// answering.
func TestResolvePathWithSet(t *testing.T) {
	c := newClient(t)
	for _, text := range []string{
		`<resolve-path <route [#{1}]>>`,
		`<resolve-path <route [<tcp "127.0.0.1" 1>] <ref {oid: #{1} sig: #""}>>>`,
	} {
		req, err := preserves.ParseText(text)
		if err != nil {
			t.Fatal(err)
		}
		c.do(func(t *dataspace.Turn) { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)) })
		waitFor(t, "an error answer to "+text, func() bool {
			a, isRec := preserves.Unwrap(c.answer(req)).(*preserves.Record)
			return isRec && a.Label == rpc.LabelError
		})
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	req := preserves.NewRecord(gkschema.LabelConnectTransport, tcp(port))
	if !c.fr.Activate(func(t *dataspace.Turn) error { t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, req)); return nil }) {
		t.Fatal("the service's actor ended")
	}
	waitFor(t, "an answer after the hostile routes", func() bool { return c.answer(req) != nil })
}
