package relay

// Runtime spec §18 scenarios 51–62, with the test playing the peer over a
// real loopback TCP connection and writing raw packets.

import (
	"errors"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

func rec(label string, fields ...preserves.Value) preserves.Value {
	return preserves.Rec(label, fields...)
}

// inActor runs fn in a turn of the relay's host actor (the membrane is
// only touched there).
func (h *wireHarness) inActor(fn func()) {
	h.conn.Facet().Activate(func(*dataspace.Turn) error { fn(); return nil })
}

func TestScenario51ReleasedOidIgnoredNeverIssuedFatal(t *testing.T) {
	h := newWire(t, Options{})
	e := newRecorder()
	var eRef *dataspace.Ref
	var hx dataspace.Handle
	h.drv.do(func(t *dataspace.Turn) {
		eRef = t.Create(e)
		hx = t.Assert(h.peer, rec("x", dataspace.Embed(eRef)))
	})
	if got := h.recvText(); !strings.HasPrefix(got, "[[0 <A <x #:[0 1]> ") {
		t.Fatalf("got %s", got)
	}
	h.drv.do(func(t *dataspace.Turn) { t.Retract(hx) })
	if got := h.recvText(); !strings.HasPrefix(got, "[[0 <R ") {
		t.Fatalf("got %s", got)
	}
	// oid 1 is now released: the event to it is ignored, the rest of the
	// packet is processed.
	h.send(`[[1 <A <late> 7>] [0 <A <ok> 8>]]`)
	waitFor(t, "<ok>", func() bool { return h.rec.has("+<ok>") })
	if len(e.logged()) != 0 {
		t.Fatalf("released oid received %v", e.logged())
	}
	// An oid never allocated is a connection error.
	h.send(`[[99 <A <bad> 9>]]`)
	pkts := h.expectEOF()
	if len(pkts) != 1 || !strings.HasPrefix(pkts[0], `<error "relay: `) {
		t.Fatalf("expected one Error packet, got %v", pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "retraction of <ok>", func() bool { return h.rec.count() == 0 })
}

func TestScenario52DuplicateRemoteHandle(t *testing.T) {
	h := newWire(t, Options{})
	h.send(`[[0 <A <a> 1>]]`)
	waitFor(t, "<a>", func() bool { return h.rec.count() == 1 })
	h.send(`[[0 <A <b> 1>]]`)
	pkts := h.expectEOF()
	if len(pkts) != 1 || !strings.Contains(pkts[0], "duplicate remote handle") {
		t.Fatalf("got %v", pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "teardown", func() bool { return h.rec.count() == 0 })
}

func TestScenario53UnknownRetractIgnored(t *testing.T) {
	h := newWire(t, Options{})
	h.send(`[[0 <R 42>]]`)
	h.send(`[[0 <A <ok> 1>]]`)
	waitFor(t, "<ok>", func() bool { return h.rec.has("+<ok>") })
	h.send(`[[0 <R 1>] [0 <R 1>]]`)
	waitFor(t, "retraction", func() bool { return h.rec.has("-<ok>") })
	if h.conn.Err() != nil {
		t.Fatal(h.conn.Err())
	}
}

func TestScenario54PeerDisconnectRetractsEverything(t *testing.T) {
	h := newWire(t, Options{})
	h.send(`[[0 <A <a> 1>] [0 <A <b> 2>]]`)
	h.sendBinary(`[[0 <A <c> 3>]]`)
	waitFor(t, "three assertions", func() bool { return h.rec.count() == 3 })
	h.net.Close()
	waitFor(t, "retractions", func() bool { return h.rec.count() == 0 })
	if err := h.closed(); err != nil {
		t.Fatalf("clean EOF gave %v", err)
	}
}

func TestScenario55InboundErrorPacket(t *testing.T) {
	h := newWire(t, Options{})
	h.send(`[[0 <A <a> 1>]]`)
	waitFor(t, "<a>", func() bool { return h.rec.count() == 1 })
	h.send(`<error "boom" 3>`)
	pkts := h.expectEOF()
	if len(pkts) != 1 || !strings.Contains(pkts[0], "boom") {
		t.Fatalf("expected an Error packet back, got %v", pkts)
	}
	err := h.closed()
	var pe *PeerError
	if !errors.Is(err, ErrPeer) || !errors.As(err, &pe) || pe.Message != "boom" {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "teardown", func() bool { return h.rec.count() == 0 })
}

func TestScenario56TransientReferenceReceived(t *testing.T) {
	h := newWire(t, Options{})
	h.send(`[[0 <M <m #:[0 5]>>]]`)
	pkts := h.expectEOF()
	if len(pkts) != 1 || !strings.Contains(pkts[0], "transient") {
		t.Fatalf("got %v", pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
}

func TestScenario56TransientReferenceSent(t *testing.T) {
	h := newWire(t, Options{})
	h.drv.do(func(t *dataspace.Turn) {
		t.Message(h.peer, rec("m", dataspace.Embed(t.Create(newRecorder()))))
	})
	pkts := h.expectEOF()
	if len(pkts) != 2 || pkts[0] != "[[0 <M <m #:[0 1]>>]]" || !strings.Contains(pkts[1], "transient") {
		t.Fatalf("got %v", pkts)
	}
	if err := h.closed(); !errors.Is(err, ErrTransient) {
		t.Fatalf("err = %v", err)
	}
}

func TestScenario56PinnedReferenceInMessageIsFine(t *testing.T) {
	h := newWire(t, Options{})
	// The peer first pins its oid 5 by an assertion, then mentions it in a
	// message: allowed.
	h.send(`[[0 <A <hold #:[0 5]> 1>] [0 <M <m #:[0 5]>>]]`)
	waitFor(t, "message", func() bool { return len(h.rec.logged()) == 2 })
	if h.conn.Err() != nil {
		t.Fatal(h.conn.Err())
	}
}

func TestScenario57WireRefMineAndYours(t *testing.T) {
	h := newWire(t, Options{})
	e := newRecorder()
	var eRef *dataspace.Ref
	h.drv.do(func(t *dataspace.Turn) {
		eRef = t.Create(e)
		t.Assert(h.peer, rec("x", dataspace.Embed(eRef)))
	})
	if got := h.recvText(); !strings.HasPrefix(got, "[[0 <A <x #:[0 1]> ") {
		t.Fatalf("got %s", got)
	}
	h.send(`[[0 <A <echo #:[1 1]> 1>] [0 <A <att #:[1 1 <reject <rec secret [<_>]>>]> 2>]]`)
	waitFor(t, "echoes", func() bool { return h.rec.count() == 2 })
	for _, v := range h.rec.values() {
		r := v.(*preserves.Record)
		got, ok := dataspace.RefOf(r.Fields[0])
		if !ok {
			t.Fatalf("%v: not a ref", v)
		}
		switch r.Label {
		case preserves.Symbol("echo"):
			if !got.Equal(eRef) {
				t.Fatalf("[1 1] resolved to %v, want %v", got, eRef)
			}
		case preserves.Symbol("att"):
			c, err := caveat.FromValue(rec("reject", rec("rec", preserves.Symbol("secret"), preserves.Sequence{rec("_")})))
			if err != nil {
				t.Fatal(err)
			}
			want, err := eRef.Attenuate(c)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(want) {
				t.Fatalf("[1 1 c] resolved to %v, want %v", got, want)
			}
			// Attenuation cannot be escaped: a secret sent through it is
			// dropped, a public one arrives.
			h.drv.do(func(t *dataspace.Turn) {
				t.Message(got, rec("secret", preserves.Int(1)))
				t.Message(got, rec("public", preserves.Int(1)))
			})
		}
	}
	waitFor(t, "public message", func() bool { return e.has("!<public 1>") })
	if e.has("!<secret 1>") {
		t.Fatal("attenuation escaped")
	}
	// Sending the attenuated Cap back yields [0 1] again, not a new export.
	var att *dataspace.Ref
	for _, v := range h.rec.values() {
		if r := v.(*preserves.Record); r.Label == preserves.Symbol("att") {
			att, _ = dataspace.RefOf(r.Fields[0])
		}
	}
	h.drv.do(func(t *dataspace.Turn) { t.Assert(h.peer, rec("back", dataspace.Embed(att))) })
	if got := h.recvText(); !strings.HasPrefix(got, "[[0 <A <back #:[0 1]> ") {
		t.Fatalf("got %s", got)
	}
}

func TestScenario57AttenuationOnIncomingYoursCannotBeWidened(t *testing.T) {
	h := newWire(t, Options{})
	// Export an attenuated Cap to the peer: the peer sees a fresh oid and
	// its events pass through the local attenuation.
	e := newRecorder()
	h.drv.do(func(t *dataspace.Turn) {
		r := t.Create(e)
		c, _ := caveat.FromValue(rec("reject", rec("rec", preserves.Symbol("secret"), preserves.Sequence{rec("_")})))
		a, _ := r.Attenuate(c)
		t.Assert(h.peer, rec("x", dataspace.Embed(a)))
	})
	if got := h.recvText(); !strings.HasPrefix(got, "[[0 <A <x #:[0 1]> ") {
		t.Fatalf("got %s", got)
	}
	h.send(`[[1 <M <secret 1>>] [1 <M <public 1>>]]`)
	waitFor(t, "public", func() bool { return e.has("!<public 1>") })
	// Even naming the object as [1 1] with no caveats only reaches the
	// attenuated Cap.
	h.send(`[[0 <A <again #:[1 1]> 5>]]`)
	waitFor(t, "again", func() bool { return h.rec.count() == 1 })
	r := h.rec.values()[0].(*preserves.Record)
	got, _ := dataspace.RefOf(r.Fields[0])
	h.drv.do(func(t *dataspace.Turn) { t.Message(got, rec("secret", preserves.Int(2))) })
	h.drv.do(func(t *dataspace.Turn) { t.Message(got, rec("public", preserves.Int(2))) })
	waitFor(t, "public 2", func() bool { return e.has("!<public 2>") })
	if e.has("!<secret 1>") || e.has("!<secret 2>") {
		t.Fatalf("attenuation escaped: %v", e.logged())
	}
}

func TestScenario58ReleaseAndFreshOid(t *testing.T) {
	h := newWire(t, Options{})
	e := newRecorder()
	var eRef *dataspace.Ref
	var hx dataspace.Handle
	h.drv.do(func(t *dataspace.Turn) {
		eRef = t.Create(e)
		hx = t.Assert(h.peer, rec("x", dataspace.Embed(eRef)))
	})
	h.recv()
	// The peer pins oid 1 too, then the local side retracts: still alive.
	h.send(`[[0 <A <echo #:[1 1]> 1>]]`)
	waitFor(t, "echo", func() bool { return h.rec.count() == 1 })
	h.drv.do(func(t *dataspace.Turn) { t.Retract(hx) })
	h.recv()
	h.send(`[[1 <M <hi>>]]`)
	waitFor(t, "hi", func() bool { return e.has("!<hi>") })
	// The peer retracts: the oid dies, events to it are ignored.
	h.send(`[[0 <R 1>]]`)
	waitFor(t, "echo retracted", func() bool { return h.rec.count() == 0 })
	h.send(`[[1 <M <late>>] [0 <M <still>>]]`)
	waitFor(t, "still", func() bool { return h.rec.has("!<still>") })
	if e.has("!<late>") {
		t.Fatal("event to a released oid delivered")
	}
	// Re-exporting allocates a fresh oid.
	h.drv.do(func(t *dataspace.Turn) { t.Assert(h.peer, rec("x", dataspace.Embed(eRef))) })
	if got := h.recvText(); !strings.HasPrefix(got, "[[0 <A <x #:[0 2]> ") {
		t.Fatalf("got %s", got)
	}
	// oid 0 survives any pin traffic.
	h.send(`[[0 <A <y #:[1 0]> 2>]]`)
	h.send(`[[0 <R 2>]]`)
	h.send(`[[0 <M <alive>>]]`)
	waitFor(t, "alive", func() bool { return h.rec.has("!<alive>") })
	h.inActor(func() {
		if s := h.conn.exported.byOid[0]; s == nil || s.count != 1 {
			t.Errorf("oid 0 symbol = %+v", s)
		}
		if _, ok := h.conn.exported.byOid[1]; ok {
			t.Error("oid 1 still exported")
		}
	})
	if h.conn.Err() != nil {
		t.Fatal(h.conn.Err())
	}
}

func TestScenario59SyntaxDetection(t *testing.T) {
	h := newWire(t, Options{})
	say := func(s string) {
		h.drv.do(func(t *dataspace.Turn) { t.Message(h.peer, preserves.Symbol(s)) })
	}
	say("first")
	_, syn, _ := h.recv()
	if syn != Binary {
		t.Fatalf("initial syntax %v, want binary", syn)
	}
	h.send(`[[0 <M <t1>>]]`)
	waitFor(t, "t1", func() bool { return h.rec.has("!<t1>") })
	say("second")
	v, syn, raw := h.recv()
	if syn != Text || preserves.FormatText(v) != "[[0 <M second>]]" {
		t.Fatalf("got %v in %v", v, syn)
	}
	// The framer stops at the value; the newline follows.
	if h.fr.start >= len(h.fr.buf) || h.fr.buf[h.fr.start] != '\n' || string(raw) != "[[0 <M second>]]" {
		t.Fatalf("text packet not newline-terminated: %q %q", raw, h.fr.buf[h.fr.start:])
	}
	h.sendBinary(`[[0 <M <b1>>]]`)
	waitFor(t, "b1", func() bool { return h.rec.has("!<b1>") })
	say("third")
	if _, syn, _ = h.recv(); syn != Binary {
		t.Fatalf("reply in %v after a binary packet", syn)
	}
	// Mixed in one write: text then binary then text, no separators
	// needed before a binary packet.
	b, _ := AppendPacket([]byte("[[0 <M <m1>>]]"), mustParse(t, "[[0 <M <m2>>]]"), Binary)
	b = append(b, "[[0 <M <m3>>]]\n"...)
	h.net.Write(b)
	waitFor(t, "m3", func() bool { return h.rec.has("!<m3>") })
	if l := h.rec.logged(); strings.Join(l[len(l)-3:], " ") != "!<m1> !<m2> !<m3>" {
		t.Fatalf("got %v", l)
	}
}

func TestScenario59TextOutputOption(t *testing.T) {
	h := newWire(t, Options{TextOutput: true})
	h.drv.do(func(t *dataspace.Turn) { t.Message(h.peer, preserves.Symbol("hi")) })
	if _, syn, _ := h.recv(); syn != Text {
		t.Fatalf("initial syntax %v, want text", syn)
	}
}

func mustParse(t testing.TB, s string) preserves.Value {
	v, err := preserves.ParseText(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScenario60TurnBatching(t *testing.T) {
	h := newWire(t, Options{})
	h.drv.do(func(t *dataspace.Turn) {
		t.Assert(h.peer, rec("a"))
		x := t.Assert(h.peer, rec("b"))
		t.Message(h.peer, rec("c"))
		t.Retract(x)
	})
	v, _, _ := h.recv()
	if s := v.(preserves.Sequence); len(s) != 4 {
		t.Fatalf("one turn gave %v", v)
	}
	h.send(`[[0 <A <x> 1>] [0 <A <y> 2>] [0 <M <z>>] [0 <R 1>]]`)
	waitFor(t, "four events", func() bool { return len(h.rec.logged()) == 4 })
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if len(h.rec.perTurn) != 1 || h.rec.perTurn[0] != 4 {
		t.Fatalf("one inbound Turn handled in turns %v", h.rec.perTurn)
	}
}

func TestScenario61ExtensionAndNopIgnored(t *testing.T) {
	h := newWire(t, Options{})
	h.send(`<do <credit-flow-control 202506>>`)
	h.send(`#f`)
	h.send(`<error "one field">`) // an Extension, not an Error
	h.sendBinary(`#f`)
	h.send(`[[0 <M <after>>]]`)
	waitFor(t, "after", func() bool { return h.rec.has("!<after>") })
	if h.conn.Err() != nil {
		t.Fatal(h.conn.Err())
	}
}

func TestScenario62SyncBothWays(t *testing.T) {
	h := newWire(t, Options{})
	// Inbound: the peer syncs with our oid 0 using its oid 7.
	h.send(`[[0 <A <a> 1>] [0 <S #:[0 7]>]]`)
	if got := h.recvText(); got != "[[7 <M #t>]]" {
		t.Fatalf("got %s", got)
	}
	h.inActor(func() {
		if _, ok := h.conn.imported.byOid[7]; ok {
			t.Error("peer's sync continuation still imported")
		}
		if s := h.conn.exported.byOid[0]; s.count != 2 { // pinned + <a>
			t.Errorf("oid 0 count %d", s.count)
		}
	})
	// Outbound: a local actor syncs with the peer's oid 0.
	done := make(chan struct{})
	h.drv.do(func(t *dataspace.Turn) {
		t.Sync(h.peer, func(*dataspace.Turn) error { close(done); return nil })
	})
	got := h.recvText()
	if got != "[[0 <S #:[0 1]>]]" {
		t.Fatalf("got %s", got)
	}
	h.send(`[[1 <M #t>]]`)
	<-done
	h.inActor(func() {
		if _, ok := h.conn.exported.byOid[1]; ok {
			t.Error("sync continuation still exported")
		}
		if s := h.conn.imported.byOid[0]; s.count != 1 {
			t.Errorf("peer oid 0 count %d", s.count)
		}
	})
}
