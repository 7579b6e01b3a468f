package listener

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/preserves"
)

// boundListener is a server running a TCP listener on a free port, with
// the sturdy ref {oid: "x", key: #"k"} bound.
func boundListener(tb testing.TB) (*server, int) {
	s := newServer(tb)
	port := freePort(tb)
	name := tcpName(s.gk, port)
	s.do(func(t *dataspace.Turn) { t.Assert(s.cfg, preserves.NewRecord(preserves.Symbol("run-service"), name)) })
	s.do(func(t *dataspace.Turn) {
		t.Assert(s.cfg, preserves.Rec("bind",
			preserves.Rec("ref", preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("x")},
				preserves.DictEntry{Key: preserves.Symbol("key"), Value: preserves.ByteString("k")})),
			dataspace.Embed(t.Create(&sink{})), preserves.Bool(false)))
	})
	waitFor(tb, "ready", func() bool { return s.has(state(name, "ready")) })
	return s, port
}

// TestInboundConnectionStatus (federation issue): an accepted connection
// shows as `<connection-status inbound …>` once its peer has resolved
// something, without the credential it presented, and goes with the
// connection.
func TestInboundConnectionStatus(t *testing.T) {
	s, port := boundListener(t)
	inbound := func() []string {
		var out []string
		s.mu.Lock()
		defer s.mu.Unlock()
		for k := range s.present {
			if strings.HasPrefix(k, "<connection-status inbound ") {
				out = append(out, k)
			}
		}
		return out
	}

	cli := dataspace.NewSystem(dataspace.Options{})
	defer cli.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, gk, err := client.Dial(ctx, cli, preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(port)))
	if err != nil {
		t.Fatal(err)
	}
	// A failed resolve is no reason to show the connection.
	if _, _, err := client.Resolve(ctx, cli, gk, preserves.Rec("frob", preserves.Int(1))); err == nil {
		t.Fatal("frob resolved")
	}
	if got := inbound(); len(got) != 0 {
		t.Fatalf("shown before resolving anything: %v", got)
	}
	ref := caveat.Mint(preserves.String("x"), []byte("k"))
	if _, _, err := client.Resolve(ctx, cli, gk, ref.ToValue()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the inbound connection", func() bool { return len(inbound()) == 1 })
	got := inbound()[0]
	if !strings.Contains(got, `state: connected`) || !strings.Contains(got, `resolved: [<ref "x">]`) || !strings.Contains(got, `<tcp "127.0.0.1:`) {
		t.Errorf("record %s", got)
	}
	if strings.Contains(got, "sig") {
		t.Errorf("the credential shows: %s", got)
	}
	conn.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(strings.Join(s.hist(), "\n"))
		}
	})
	waitFor(t, "the record to go with the connection", func() bool { return len(inbound()) == 0 })
}

// A connection's actor ends with its relay, whether or not the peer
// asserted anything through the gatekeeper tap or resolved something:
// before, what the tap held when the relay stopped kept the actor alive
// until shutdown, one per connection a peer ever made.
func TestConnectionActorEndsWithItsRelay(t *testing.T) {
	s, port := boundListener(t)
	base := s.sys.Stats(0).Actors
	cli := dataspace.NewSystem(dataspace.Options{})
	defer cli.Shutdown(context.Background())
	for _, resolve := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, gk, err := client.Dial(ctx, cli, preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(port)))
		if err != nil {
			t.Fatal(err)
		}
		if resolve {
			ref := caveat.Mint(preserves.String("x"), []byte("k"))
			if _, _, err := client.Resolve(ctx, cli, gk, ref.ToValue()); err != nil {
				t.Fatal(err)
			}
		} else {
			synced := make(chan struct{})
			cli.Spawn("asserter", func(t *dataspace.Turn) error {
				t.Assert(gk, preserves.Symbol("hello"))
				t.Sync(gk, func(*dataspace.Turn) error { close(synced); return nil })
				return nil
			})
			<-synced
		}
		waitFor(t, "the connection's actor", func() bool { return s.sys.Stats(0).Actors > base })
		conn.Close()
		waitFor(t, "the connection's actor to end with its relay", func() bool { return s.sys.Stats(0).Actors == base })
		cancel()
	}
}
