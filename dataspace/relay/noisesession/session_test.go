package noisesession

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// held records the assertions currently held at it.
type held struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	vals map[dataspace.Handle]preserves.Value
}

func (h *held) Assert(_ *dataspace.Turn, v preserves.Value, hd dataspace.Handle) error {
	h.mu.Lock()
	h.vals[hd] = v
	h.mu.Unlock()
	return nil
}

func (h *held) Retract(_ *dataspace.Turn, hd dataspace.Handle) error {
	h.mu.Lock()
	delete(h.vals, hd)
	h.mu.Unlock()
	return nil
}

func (h *held) has(v preserves.Value) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range h.vals {
		if preserves.Equal(x, v) {
			return true
		}
	}
	return false
}

// inbox hands the Packets it receives to its session.
type inbox struct {
	dataspace.BaseEntity
	sess *Session
}

func (i *inbox) Message(t *dataspace.Turn, v preserves.Value) error {
	i.sess.Packet(t, v)
	return nil
}

// side is one party of a session under test, in its own actor.
type side struct {
	fr    dataspace.FacetRef
	sess  *Session
	in    *dataspace.Ref // its inbox: where the other side sends
	ended chan error     // OnEnd's argument, once per call
	ready chan *dataspace.Ref
}

var waitFor = testutil.WaitFor

// startPair runs a responder for res (exporting a fresh dataspace, whose
// assertions seen mirrors, as oid 0) and an initiator for ini (importing
// the responder's oid 0) in two actors, each the other's peer, and begins
// the session.
func startPair(tb testing.TB, ini, res *Spec) (is, rs *side, seen *held) {
	tb.Helper()
	rh, err := res.Handshake(false)
	if err != nil {
		tb.Fatal(err)
	}
	ih, err := ini.Handshake(true)
	if err != nil {
		tb.Fatal(err)
	}
	sys := dataspacetest.NewSystem(tb, dataspace.Options{})
	seen = &held{vals: make(map[dataspace.Handle]preserves.Value)}
	spawn := func(name string, h *Handshake, opts func(t *dataspace.Turn) relay.Options) *side {
		s := &side{ended: make(chan error, 4), ready: make(chan *dataspace.Ref, 1)}
		done := make(chan struct{})
		sys.Spawn(name, func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			s.fr = t.FacetRef()
			s.sess = New(t, h, Options{
				Relay:   opts(t),
				OnReady: func(_ *dataspace.Turn, peer *dataspace.Ref) { s.ready <- peer },
				OnEnd: func(t *dataspace.Turn, err error) {
					s.ended <- err
					t.StopRoot()
				},
			})
			s.in = t.Create(&inbox{sess: s.sess})
			close(done)
			return nil
		})
		<-done
		return s
	}
	// The target lives in an actor of its own, which outlives the
	// responder's.
	targets := make(chan *dataspace.Ref, 1)
	sys.Spawn("target", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		target := t.Create(dataspace.NewDataspace())
		m := t.Create(seen)
		t.During(target, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(m, caps[0])
			return nil
		})
		targets <- target
		return nil
	})
	target := <-targets
	rs = spawn("responder", rh, func(*dataspace.Turn) relay.Options { return relay.Options{InitialRef: target} })
	is = spawn("initiator", ih, func(*dataspace.Turn) relay.Options { return relay.Options{ImportInitial: true} })
	rs.fr.Activate(func(t *dataspace.Turn) error { rs.sess.Begin(t, is.in); return nil })
	is.fr.Activate(func(t *dataspace.Turn) error { is.sess.Begin(t, rs.in); return nil })
	return is, rs, seen
}

func receive[T any](tb testing.TB, what string, c <-chan T) T {
	tb.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		tb.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// Two sessions talk directly: the initiator's assertions through the
// imported oid 0 reach the responder's target, a write longer than one
// transport message arrives whole, and a Packet that does not decrypt ends
// the responder's session with an error, retracting everything asserted
// through it.
func TestSessionRelay(t *testing.T) {
	for _, proto := range []string{"", "Noise_XX_25519_ChaChaPoly_BLAKE2s", "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s", "Noise_N_25519_ChaChaPoly_BLAKE2s"} {
		t.Run(proto, func(t *testing.T) {
			sk, pk := testKeys(t)
			svc := preserves.NewRecord(preserves.Symbol("svc"), preserves.Int(1))
			ini := &Spec{Service: svc, Key: pk, Protocol: proto}
			res := &Spec{Service: svc, Key: pk, Protocol: proto, SecretKey: sk}
			is, rs, seen := startPair(t, ini, res)
			peer := receive(t, "the initiator ready", is.ready)
			if peer == nil {
				t.Fatal("no proxy for the responder's oid 0")
			}
			if p := receive(t, "the responder ready", rs.ready); p != nil {
				t.Fatalf("responder imported %v", p)
			}
			small := preserves.NewRecord(preserves.Symbol("hello"))
			big := preserves.NewRecord(preserves.Symbol("big"), preserves.String(strings.Repeat("y", 3*maxPlaintext)))
			is.fr.Activate(func(t *dataspace.Turn) error {
				t.Assert(peer, small)
				t.Assert(peer, big)
				return nil
			})
			waitFor(t, "both assertions at the target", func() bool { return seen.has(small) && seen.has(big) })

			is.fr.Activate(func(t *dataspace.Turn) error {
				t.Message(rs.in, preserves.ByteString(bytes.Repeat([]byte("garbage!"), 8)))
				return nil
			})
			if err := receive(t, "the responder's end", rs.ended); err == nil {
				t.Fatal("a corrupted packet ended the responder without an error")
			}
			waitFor(t, "assertions retracted", func() bool { return !seen.has(small) && !seen.has(big) })

			// Ending the initiator by hand reports no error.
			is.fr.Activate(func(t *dataspace.Turn) error {
				is.sess.End(t, nil)
				return nil
			})
			if err := receive(t, "the initiator's end", is.ended); err != nil {
				t.Fatalf("End(nil) reported %v", err)
			}
		})
	}
}

// An initiator given the responder's key refuses a responder proving
// another key, even when the pattern transmits it (XX).
func TestSessionWrongResponderKey(t *testing.T) {
	sk, pk := testKeys(t)
	const xx = "Noise_XX_25519_ChaChaPoly_BLAKE2s"
	ini := &Spec{Service: preserves.String("s"), Key: bytes.Repeat([]byte{1}, 32), Protocol: xx}
	res := &Spec{Service: preserves.String("s"), Key: pk, Protocol: xx, SecretKey: sk}
	is, _, _ := startPair(t, ini, res)
	err := receive(t, "the initiator's end", is.ended)
	if err == nil || !strings.Contains(err.Error(), "expected key") {
		t.Fatalf("ended with %v", err)
	}
	select {
	case <-is.ready:
		t.Fatal("the initiator started a relay")
	default:
	}
}
