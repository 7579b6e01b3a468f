package gatekeeper

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/schemas/rpc"
	"github.com/syndicate-go/syndicate/preserves"
)

// mustParse reads one text value.
func mustParse(tb testing.TB, text string) preserves.Value {
	tb.Helper()
	v, err := preserves.ParseText(text)
	if err != nil {
		tb.Fatalf("%s: %v", text, err)
	}
	return v
}

// TestHostileStepsAnswerInvalid (issue 12): steps whose selector or oid
// contains a set cannot become a Bind pattern. They used to panic in
// pattern.Lift and end the gatekeeper's actor (the server's top-level
// actor); now they are answered `<error invalid>` and the gatekeeper keeps
// serving.
func TestHostileStepsAnswerInvalid(t *testing.T) {
	w := newWorld(t)
	key := []byte("k")
	targetRef := (*dataspace.Ref)(nil)
	w.do(func(t *dataspace.Turn) {
		targetRef = t.Create(newBox())
		t.Assert(w.bs, bind(preserves.String("x"), key, targetRef, nil))
	})
	for _, step := range []string{
		`<noise #{1}>`,
		`<noise [#{1}]>`,
		`<ref {oid: #{1} sig: #""}>`,
		`<ref {oid: <x #{}> sig: #"" caveats: []}>`,
	} {
		obs := newBox()
		sv := mustParse(t, step)
		w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(sv, t.Create(obs))) })
		if v := obs.only(t); !preserves.Equal(v, errInvalid) {
			t.Errorf("%s: answer %v, want %v", step, v, errInvalid)
		}
		if w.a.Status() != dataspace.Running {
			t.Fatalf("%s: the gatekeeper's actor ended: %v", step, w.a.Err())
		}
	}
	good := caveat.Mint(preserves.String("x"), key)
	obs := newBox()
	w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(good.ToValue(), t.Create(obs))) })
	if r := obs.only(t).(*preserves.Record); r.Label != rpc.LabelOk {
		t.Fatalf("good resolve after hostile ones: %v", r)
	}
}

// lockedBytes collects what a peer reads.
type lockedBytes struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBytes) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Contains(l.b.Bytes(), []byte(s))
}

// TestWireResolveWithSet (issue 12): a peer with no credentials sends one
// text packet asserting a Resolve whose step holds a set. The answer
// `<error invalid>` comes back over the wire and the gatekeeper lives.
func TestWireResolveWithSet(t *testing.T) {
	for _, packet := range []string{
		`[[0 <A <resolve <noise #{1}> #:[0 1]> 0>]]`,
		`[[0 <A <resolve <ref {oid: #{1} sig: #""}> #:[0 1]> 0>]]`,
	} {
		w := newWorld(t)
		server, peer := net.Pipe()
		w.do(func(t *dataspace.Turn) {
			relay.Run(t, server, relay.Options{InitialRef: w.gk, Logger: zerolog.Nop()})
		})
		got := &lockedBytes{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 4096)
			for {
				n, err := peer.Read(buf)
				got.mu.Lock()
				got.b.Write(buf[:n])
				got.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		if _, err := io.WriteString(peer, packet); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "<error invalid> on the wire", func() bool { return got.has("<error invalid>") })
		if w.a.Status() != dataspace.Running {
			t.Fatalf("%s: the gatekeeper's actor ended: %v", packet, w.a.Err())
		}
		peer.Close()
		<-done
	}
}

// TestBindWithEmbeddedOid: a bind whose oid holds a capability cannot be
// signed (caveat.Mint panics on it). With an observer it used to crash the
// gatekeeper's actor; now it is logged as malformed and nothing else
// changes.
func TestBindWithEmbeddedOid(t *testing.T) {
	w := newWorld(t)
	obs := newBox()
	w.do(func(t *dataspace.Turn) {
		o := t.Create(obs)
		oid := preserves.Sequence{dataspace.Embed(o)}
		t.Assert(w.bs, bind(oid, []byte("k"), t.Create(newBox()), o))
	})
	key := []byte("k")
	target := newBox()
	w.do(func(t *dataspace.Turn) { t.Assert(w.bs, bind(preserves.String("x"), key, t.Create(target), nil)) })
	good := caveat.Mint(preserves.String("x"), key)
	ans := newBox()
	w.do(func(t *dataspace.Turn) { t.Assert(w.gk, resolve(good.ToValue(), t.Create(ans))) })
	if r := ans.only(t).(*preserves.Record); r.Label != rpc.LabelOk {
		t.Fatalf("good resolve: %v", r)
	}
	if w.a.Status() != dataspace.Running {
		t.Fatalf("the gatekeeper's actor ended: %v", w.a.Err())
	}
	if len(obs.all()) != 0 {
		t.Errorf("the unsignable bind was answered: %v", obs.all())
	}
}
