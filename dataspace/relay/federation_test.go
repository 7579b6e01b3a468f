package relay

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// server is one "server": its own System and dataspace, plus a mirror of
// what an observer of `<Observe <bind _>>` sees there.
type server struct {
	sys *dataspace.System
	ds  *dataspace.Ref
	drv *driver

	mu      sync.Mutex
	present map[string]int
}

func newServer(tb testing.TB, name string) *server {
	s := &server{sys: newSys(tb), present: make(map[string]int)}
	s.drv = newDriver(tb, s.sys, name)
	s.drv.do(func(t *dataspace.Turn) {
		s.ds = t.Create(dataspace.NewDataspace())
		t.During(s.ds, pattern.Bind{Pattern: pattern.Discard{}}, func(t *dataspace.Turn, caps []preserves.Value) error {
			k := preserves.FormatText(caps[0])
			s.mu.Lock()
			s.present[k]++
			s.mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				s.mu.Lock()
				if s.present[k]--; s.present[k] == 0 {
					delete(s.present, k)
				}
				s.mu.Unlock()
				return nil
			})
			return nil
		})
	})
	return s
}

func (s *server) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.present[k] > 0
}

func (s *server) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.present)
}

func TestFederationOverLoopbackTCP(t *testing.T) {
	checkGoroutines(t)
	a, b := newServer(t, "a"), newServer(t, "b")
	ca, cb := tcpPair(t)
	connA, peerB, err := Spawn(a.sys, "relay-to-b", ca, Options{InitialRef: a.ds, ImportInitial: true})
	if err != nil {
		t.Fatal(err)
	}
	connB, peerA, err := Spawn(b.sys, "relay-to-a", cb, Options{InitialRef: b.ds, ImportInitial: true, TextOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	// A asserts into B's dataspace and vice versa.
	a.drv.do(func(t *dataspace.Turn) { t.Assert(peerB, rec("from-a", preserves.Int(1))) })
	b.drv.do(func(t *dataspace.Turn) { t.Assert(peerA, rec("from-b", preserves.Int(2))) })
	waitFor(t, "<from-a 1> in b", func() bool { return b.has("<from-a 1>") })
	waitFor(t, "<from-b 2> in a", func() bool { return a.has("<from-b 2>") })

	// A observes B's dataspace across the wire: the observer Ref travels
	// as [0 n], the captures come back to it.
	var mu sync.Mutex
	var seen []string
	a.drv.do(func(t *dataspace.Turn) {
		t.During(peerB, pattern.Rec(preserves.Symbol("item"), pattern.Bind{Pattern: pattern.Discard{}}), func(t *dataspace.Turn, caps []preserves.Value) error {
			mu.Lock()
			seen = append(seen, "+"+preserves.FormatText(caps[0]))
			mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				mu.Lock()
				seen = append(seen, "-"+preserves.FormatText(caps[0]))
				mu.Unlock()
				return nil
			})
			return nil
		})
	})
	var hItem dataspace.Handle
	b.drv.do(func(t *dataspace.Turn) { hItem = t.Assert(b.ds, rec("item", preserves.String("x"))) })
	waitFor(t, "observed item", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 })
	b.drv.do(func(t *dataspace.Turn) { t.Retract(hItem) })
	waitFor(t, "observed retraction", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 })
	if fmt.Sprint(seen) != `[+"x" -"x"]` {
		t.Fatalf("seen %v", seen)
	}

	// Sync across the wire from both sides.
	done := make(chan string, 2)
	a.drv.do(func(t *dataspace.Turn) { t.Sync(peerB, func(*dataspace.Turn) error { done <- "a"; return nil }) })
	b.drv.do(func(t *dataspace.Turn) { t.Sync(peerA, func(*dataspace.Turn) error { done <- "b"; return nil }) })
	<-done
	<-done

	// Cutting the connection retracts everything each side asserted on
	// the other's behalf.
	ca.Close()
	waitFor(t, "b forgets a", func() bool { return !b.has("<from-a 1>") })
	waitFor(t, "a forgets b", func() bool { return !a.has("<from-b 2>") })
	<-connA.Done()
	<-connB.Done()
}

// A client killed in the middle of a stream of turns: whatever it managed
// to assert disappears from the server's dataspace.
func TestDisconnectMidTurnRetractsAll(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "srv")
	for round := range 3 {
		cc, sc := tcpPair(t)
		sconn, _, err := Spawn(srv.sys, "conn", sc, Options{InitialRef: srv.ds})
		if err != nil {
			t.Fatal(err)
		}
		cli := newServer(t, "client")
		cconn, peer, err := Spawn(cli.sys, "relay", cc, Options{ImportInitial: true})
		if err != nil {
			t.Fatal(err)
		}
		// Assert in many turns; kill the socket while turns are still being
		// produced. At most window turns are in flight: each ends with a
		// sync through the server, whose reply frees its slot. (Unthrottled,
		// the producer queued turns as fast as it could loop; on a loaded
		// machine tens of thousands of assertions were still in transit
		// when the socket died, and the server took longer than any sane
		// deadline to catch up with them.)
		const window = 8
		slots := make(chan struct{}, window)
		stop, produced := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(produced)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case slots <- struct{}{}:
				}
				cli.drv.do(func(t *dataspace.Turn) {
					for j := range 20 {
						t.Assert(peer, rec("c", preserves.Int(round), preserves.Int(i), preserves.Int(j)))
					}
					t.Sync(peer, func(*dataspace.Turn) error { <-slots; return nil })
				})
			}
		}()
		waitFor(t, "some assertions", func() bool { return srv.size() > 100 })
		var nc net.Conn = cc
		nc.Close()
		close(stop)
		<-produced
		<-cconn.Done()
		<-sconn.Done()
		waitFor(t, "dataspace empty but for the mirror's own Observe", func() bool { return srv.size() == 1 })
	}
}

// Capabilities travel through an intermediary: client 1 publishes a local
// entity in the server's dataspace, client 2 finds it there (a proxy of
// the server's connection to client 1, re-exported on the connection to
// client 2) and messages it; the message reaches client 1's entity. When
// client 1 leaves, its publication disappears for client 2.
func TestCapabilityThroughIntermediary(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "srv")
	dial := func(name string) (*server, *Conn, *dataspace.Ref) {
		cc, sc := tcpPair(t)
		if _, _, err := Spawn(srv.sys, "conn-"+name, sc, Options{InitialRef: srv.ds}); err != nil {
			t.Fatal(err)
		}
		cli := newServer(t, name)
		conn, peer, err := Spawn(cli.sys, "relay", cc, Options{ImportInitial: true})
		if err != nil {
			t.Fatal(err)
		}
		return cli, conn, peer
	}
	c1, conn1, peer1 := dial("c1")
	c2, _, peer2 := dial("c2")
	e := newRecorder()
	c1.drv.do(func(t *dataspace.Turn) {
		t.Assert(peer1, rec("service", dataspace.Embed(t.Create(e))))
	})
	var mu sync.Mutex
	var found *dataspace.Ref
	gone := make(chan struct{})
	c2.drv.do(func(t *dataspace.Turn) {
		t.During(peer2, pattern.Rec(preserves.Symbol("service"), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			r, _ := dataspace.RefOf(caps[0])
			mu.Lock()
			found = r
			mu.Unlock()
			t.Message(r, rec("hello", preserves.String("from c2")))
			t.OnStop(func(*dataspace.Turn) error { close(gone); return nil })
			return nil
		})
	})
	waitFor(t, "message at c1's entity", func() bool { return e.has(`!<hello "from c2">`) })
	mu.Lock()
	if found == nil || found.Entity() == e {
		t.Fatal("c2 should hold a proxy, not c1's entity")
	}
	mu.Unlock()
	conn1.Close()
	select {
	case <-gone:
	case <-time.After(patience):
		t.Fatal("c1's publication outlived its connection")
	}
}
