package relay

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenSession replays a fixed session (inbound packets from the test
// acting as peer, local actions of a driver) and compares every byte the
// relay writes with testdata/session.{bin,txt}: binary when the peer
// speaks binary, text (newline-terminated) when it speaks text.
func TestGoldenSession(t *testing.T) {
	for _, syn := range []Syntax{Binary, Text} {
		t.Run(syn.String(), func(t *testing.T) {
			h := newWire(t, Options{TextOutput: syn == Text})
			var out bytes.Buffer
			send := func(s string) {
				t.Helper()
				if syn == Text {
					h.send(s)
				} else {
					h.sendBinary(s)
				}
			}
			expect := func(want string) {
				t.Helper()
				v, got, raw := h.recv()
				if got != syn {
					t.Fatalf("reply in %v", got)
				}
				if s := preserves.FormatText(v); s != want {
					t.Fatalf("got %s, want %s", s, want)
				}
				out.Write(raw)
				if syn == Text {
					out.WriteByte('\n')
				}
			}
			// 1. The peer asserts, pinning its oid 3, and syncs.
			send(`[[0 <A <hello "world" #:[0 3]> 1>] [0 <S #:[0 4]>]]`)
			expect(`[[4 <M #t>]]`)
			// 2. One local turn: an assertion carrying a local object and a
			// message with assorted atoms.
			e := newRecorder()
			h.drv.do(func(t *dataspace.Turn) {
				t.Assert(h.peer, rec("greeting", dataspace.Embed(t.Create(e))))
				t.Message(h.peer, rec("note", preserves.NewDouble(1.5), preserves.ByteString("bytes"),
					preserves.NewDictionary(preserves.DictEntry{Key: preserves.Symbol("k"), Value: preserves.Sequence{preserves.Int(1), preserves.Int(-2)}})))
			})
			expect(`[[0 <A <greeting #:[0 1]> 0>] [0 <M <note 1.5 #"bytes" {k: [1 -2]}>>]]`)
			// 3. A message to the peer's object 3, reached through the
			// proxy it handed us.
			waitFor(t, "hello", func() bool { return h.rec.count() == 1 })
			three, _ := dataspace.RefOf(h.rec.values()[0].(*preserves.Record).Fields[1])
			h.drv.do(func(t *dataspace.Turn) { t.Message(three, rec("hi")) })
			expect(`[[3 <M <hi>>]]`)
			// 4. The peer sends our object back, attenuated, and we send
			// the proxy back: it is the peer's own [1 3].
			send(`[[0 <A <back #:[1 1 <reject <rec secret [<_>]>>]> 2>]]`)
			waitFor(t, "back", func() bool { return h.rec.count() == 2 })
			h.drv.do(func(t *dataspace.Turn) { t.Assert(h.peer, rec("yours", dataspace.Embed(three))) })
			expect(`[[0 <A <yours #:[1 3]> 1>]]`)
			// 5. A local sync with the peer's oid 0.
			synced := make(chan struct{})
			h.drv.do(func(t *dataspace.Turn) {
				t.Sync(h.peer, func(*dataspace.Turn) error { close(synced); return nil })
			})
			expect(`[[0 <S #:[0 2]>]]`)
			send(`[[2 <M #t>]]`)
			<-synced
			// 6. The peer says goodbye with an error; we answer with ours.
			send(`<error "bye" #f>`)
			expect(`<error "relay: peer error: bye #f" #f>`)

			name := filepath.Join("testdata", "session.bin")
			if syn == Text {
				name = filepath.Join("testdata", "session.txt")
			}
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(name, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(name)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("session bytes differ from %s:\ngot  %q\nwant %q", name, out.Bytes(), want)
			}
		})
	}
}

// The binary example of runtime spec §15.2, byte for byte.
func TestSpecBinaryExample(t *testing.T) {
	v := Packet{Kind: TurnPacket, Events: []Event{{Oid: 0, Kind: EvAssert, Value: rec("hello"), Handle: 3}}}.ToValue()
	got, err := AppendPacket(nil, v, Binary)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0xB5, 0xB5, 0xB0, 0x00, 0xB4, 0xB3, 0x01, 0x41, 0xB4, 0xB3, 0x05, 'h', 'e', 'l', 'l', 'o', 0x84, 0xB0, 0x01, 0x03, 0x84, 0x84, 0x84}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x", got)
	}
	emb, _ := AppendPacket(nil, mineRef(5), Binary)
	if !bytes.Equal(emb, []byte{0x86, 0xB5, 0xB0, 0x00, 0xB0, 0x01, 0x05, 0x84}) {
		t.Fatalf("embedded [0 5] = % x", emb)
	}
	txt, _ := AppendPacket(nil, mineRef(5), Text)
	if string(txt) != "#:[0 5]\n" {
		t.Fatalf("text %q", txt)
	}
	p, err := ParsePacket(mustParse(t, "[[0 <A <hello> 3>]]"))
	if err != nil || p.Kind != TurnPacket || p.Events[0].Handle != 3 || !preserves.Equal(p.ToValue(), v) {
		t.Fatalf("parse: %+v %v", p, err)
	}
}
