package client

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

func newSys(tb testing.TB) *dataspace.System {
	s := dataspacetest.NewSystem(tb, dataspace.Options{})
	return s
}

// fakeGK answers `<resolve <ref {oid: "good" …}> #:k>` with `<ok #:target>`
// and anything else with `<error nope>`.
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
			t.Assert(k, preserves.Rec("ok", dataspace.Embed(g.target)))
			return nil
		}
	}
	t.Assert(k, preserves.Rec("error", preserves.Symbol("nope")))
	return nil
}

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

// serve accepts connections on ln, each running a relay exporting a fake
// gatekeeper as oid 0.
func serve(tb testing.TB, sys *dataspace.System, ln net.Listener) *sink {
	s := &sink{}
	gkc := make(chan *dataspace.Ref, 1)
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		gkc <- t.Create(&fakeGK{target: t.Create(s)})
		return nil
	})
	gk := <-gkc
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, _, err := relay.Spawn(sys, "conn", c, relay.Options{InitialRef: gk}); err != nil {
				c.Close()
			}
		}
	}()
	tb.Cleanup(func() { ln.Close() })
	return s
}

func TestDialAndResolve(t *testing.T) {
	dir := t.TempDir()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			srv, cli := newSys(t), newSys(t)
			var ln net.Listener
			var err error
			var addr any
			if network == "tcp" {
				ln, err = net.Listen("tcp", "127.0.0.1:0")
				if err == nil {
					a := ln.Addr().(*net.TCPAddr)
					addr = preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(a.Port))
				}
			} else {
				p := filepath.Join(dir, "s.sock")
				ln, err = net.Listen("unix", p)
				addr = "unix:" + p
			}
			if err != nil {
				t.Fatal(err)
			}
			s := serve(t, srv, ln)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			conn, gk, err := Dial(ctx, cli, addr)
			if err != nil {
				t.Fatal(err)
			}
			good := preserves.Rec("ref", preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("good")},
				preserves.DictEntry{Key: preserves.Symbol("sig"), Value: preserves.ByteString("")}))
			target, release, err := Resolve(ctx, cli, gk, good)
			if err != nil {
				t.Fatal(err)
			}
			drv := cli.Spawn("use", func(t *dataspace.Turn) error {
				t.Message(target, preserves.Symbol("hello"))
				return nil
			})
			<-drv.Done()
			deadline := time.Now().Add(20 * time.Second)
			for {
				s.mu.Lock()
				n := len(s.msgs)
				s.mu.Unlock()
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("message through the resolved capability never arrived")
				}
				time.Sleep(time.Millisecond)
			}
			release()
			bad := preserves.Rec("ref", preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("bad")},
				preserves.DictEntry{Key: preserves.Symbol("sig"), Value: preserves.ByteString("")}))
			_, _, err = Resolve(ctx, cli, gk, bad)
			var re *ResolveError
			if !errors.Is(err, ErrResolve) || !errors.As(err, &re) || !preserves.Equal(re.Detail, preserves.Symbol("nope")) {
				t.Fatalf("err = %v", err)
			}
			conn.Close()
			<-conn.Done()
		})
	}
}

// TestDialRejectsBadAddresses: every form Dial takes goes through the
// transport package (whose tests cover the parsing).
func TestDialRejectsBadAddresses(t *testing.T) {
	sys := dataspacetest.NewSystem(t, dataspace.Options{})
	for _, in := range []any{"nohost", preserves.Rec("tcp", preserves.String("h"), preserves.Int(70000)), preserves.Rec("ws", preserves.String("u")), 42} {
		if _, _, err := Dial(context.Background(), sys, in); !errors.Is(err, ErrAddress) {
			t.Errorf("%v: err = %v", in, err)
		}
	}
}
