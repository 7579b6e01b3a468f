package resolve

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

func TestReconnectDelays(t *testing.T) {
	l := &link{s: &svc{opts: Options{First: ReconnectFirst, Cap: ReconnectCap}}}
	want := []time.Duration{0, 0, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
		400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for n, w := range want {
		if d := l.delay(n); d != w {
			t.Errorf("delay after %d failures = %v, want %v", n, d, w)
		}
	}
}

// statuses mirrors <connection-status KIND SUBJECT INFO> of a client.
func (c *client) statuses(tb testing.TB) func(kind preserves.Symbol, subject preserves.Value) (services.ConnInfo, bool) {
	var mu sync.Mutex
	// Several records of one connection may overlap for an instant (an
	// update asserts the new one before the old one's retraction is seen),
	// so each key keeps its records in arrival order.
	seen := make(map[string][]*services.ConnInfo)
	key := func(kind, subject preserves.Value) string {
		return preserves.FormatText(kind) + " " + preserves.FormatText(subject)
	}
	c.do(func(t *dataspace.Turn) {
		t.During(c.cfg, pattern.Rec(services.LabelConnectionStatus, pattern.Capture(), pattern.Capture(), pattern.Capture()),
			func(t *dataspace.Turn, caps []preserves.Value) error {
				k := key(caps[0], caps[1])
				ci := services.ParseConnInfo(caps[2])
				mu.Lock()
				seen[k] = append(seen[k], &ci)
				mu.Unlock()
				t.OnStop(func(*dataspace.Turn) error {
					mu.Lock()
					seen[k] = slices.DeleteFunc(seen[k], func(x *services.ConnInfo) bool { return x == &ci })
					mu.Unlock()
					return nil
				})
				return nil
			})
	})
	return func(kind preserves.Symbol, subject preserves.Value) (services.ConnInfo, bool) {
		mu.Lock()
		defer mu.Unlock()
		cs := seen[key(kind, subject)]
		if len(cs) == 0 {
			return services.ConnInfo{}, false
		}
		return *cs[len(cs)-1], true
	}
}

// TestConnectionStatusThroughOutage (federation issue): an outbound
// transport and a route show their states while the peer is down, while it
// comes back and after; a failure is logged once, not at every retry.
func TestConnectionStatusThroughOutage(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logs := &testutil.Buffer{}
	c := newClientLogging(t, zerolog.New(logs))
	status := c.statuses(t)
	good := preserves.NewRecord(sturdy.LabelRef, preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("good")},
		preserves.DictEntry{Key: preserves.Symbol("sig"), Value: preserves.ByteString("")}))
	route := preserves.NewRecord(gkschema.LabelRoute, preserves.Sequence{tcp(port)}, good)
	c.do(func(t *dataspace.Turn) {
		t.Assert(c.cfg, preserves.NewRecord(rpc.LabelQ, preserves.NewRecord(gkschema.LabelResolvePath, route)))
	})

	waitFor(t, "the transport failing for several attempts", func() bool {
		ci, ok := status(services.ConnOutbound, tcp(port))
		return ok && ci.State == services.ConnFailed && ci.Attempts >= 4
	})
	ci, _ := status(services.ConnOutbound, tcp(port))
	if !strings.HasPrefix(ci.Error, "ConnectionRefused: ") || ci.Next.IsZero() || ci.Since.IsZero() {
		t.Errorf("failed status %+v", ci)
	}
	if r, ok := status(services.ConnRoute, route); !ok || r.State != services.ConnWaiting {
		t.Errorf("route status %+v %v, want waiting", r, ok)
	}
	if n := logs.Count(`"message":"connect failed"`); n != 1 {
		t.Errorf("%d 'connect failed' lines after %d attempts, want 1:\n%s", n, ci.Attempts, logs.String())
	}

	// The peer comes up on that port.
	srv := startServerOn(t, port)
	waitFor(t, "connected and resolved", func() bool {
		o, _ := status(services.ConnOutbound, tcp(port))
		r, _ := status(services.ConnRoute, route)
		return o.State == services.ConnConnected && r.State == services.ConnResolved && preserves.Equal(r.Via, tcp(port))
	})
	if logs.Count(`"message":"connected"`) != 1 {
		t.Errorf("want one 'connected' line:\n%s", logs.String())
	}

	// The peer goes away: disconnected is logged once, the state says so.
	srv.stop()
	waitFor(t, "failed again", func() bool {
		o, _ := status(services.ConnOutbound, tcp(port))
		r, _ := status(services.ConnRoute, route)
		return o.State == services.ConnFailed && r.State == services.ConnWaiting
	})
	if logs.Count(`"message":"disconnected"`) != 1 || logs.Count(`"message":"connect failed"`) != 2 {
		t.Errorf("want one 'disconnected' and a second 'connect failed':\n%s", logs.String())
	}
}

// startServerOn is startServer on a given port, with a stop that closes
// the listener and every connection.
type stoppable struct{ stop func() }

func startServerOn(tb testing.TB, port int) stoppable {
	var ln net.Listener
	var err error
	waitFor(tb, "the port to be free", func() bool {
		ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		return err == nil
	})
	sys := newSys(tb)
	gkc := make(chan *dataspace.Ref, 1)
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		gkc <- t.Create(&fakeGK{target: t.Create(&sink{})})
		return nil
	})
	gk := <-gkc
	stop := testutil.Accept(ln, func(c net.Conn) {
		relay.Spawn(sys, "conn", c, relay.Options{InitialRef: gk})
	})
	tb.Cleanup(stop)
	return stoppable{stop: stop}
}
