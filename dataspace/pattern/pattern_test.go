package pattern

import (
	"errors"
	"fmt"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/dataspacepatterns"
	"github.com/syndicate-go/syndicate/preserves"
)

type (
	V   = preserves.Value
	Seq = preserves.Sequence
	I   = preserves.Int
	S   = preserves.String
	Sym = preserves.Symbol
)

func rec(label string, fs ...V) V { return preserves.Rec(label, fs...) }

func dict(kvs ...V) *preserves.Dictionary { return preserves.Dict(kvs...) }

// Schema-form constructors, so tests read like the spec's examples.
func pDiscard() V            { return rec("_") }
func pBind(p V) V            { return rec("bind", p) }
func pLit(v V) V             { return rec("lit", v) }
func pGroup(t V, kvs ...V) V { return rec("group", t, dict(kvs...)) }
func tRec(l V) V             { return rec("rec", l) }
func tArr() V                { return rec("arr") }
func tDict() V               { return rec("dict") }

func mustParse(t *testing.T, v V) Pattern {
	t.Helper()
	p, err := FromValue(v)
	if err != nil {
		t.Fatalf("FromValue(%v): %v", v, err)
	}
	return p
}

func fmtSeq(vs []V) string { return fmt.Sprint(vs) }

func eqSeq(a, b []V) bool {
	return len(a) == len(b) && preserves.Equal(Seq(a), Seq(b))
}

// agreesWithSchema fails t unless FromValue and the parser generated from
// dataspacePatterns.prs (with -exact) accept the same values and render
// them alike. value.go's parser stays hand-written for speed (the
// dataspace parses every Observe asserted and retracted; the generated
// parser plus conversion takes three times as long, docs/architecture.md)
// and is held to the one definition here and in the fuzz targets.
func agreesWithSchema(t testing.TB, v V) {
	t.Helper()
	p, err := FromValue(v)
	g, gerr := dataspacepatterns.ParsePattern(v)
	if (err == nil) != (gerr == nil) {
		t.Fatalf("FromValue(%v): %v, but the generated parser: %v", v, err, gerr)
	}
	if err == nil && !preserves.Equal(ToValue(p), g.ToValue()) {
		t.Fatalf("FromValue(%v) renders as %v, the generated parser's as %v", v, ToValue(p), g.ToValue())
	}
}

func TestFromValueValid(t *testing.T) {
	emb := preserves.NewEmbedded(S("cap"))
	cases := []struct {
		in   V
		want Pattern
	}{
		{pDiscard(), Discard{}},
		{pBind(pDiscard()), Bind{Discard{}}},
		{pLit(I(3)), Lit{I(3)}},
		{pLit(S("s")), Lit{S("s")}},
		{pLit(preserves.Bool(true)), Lit{preserves.Bool(true)}},
		{pLit(preserves.NewDouble(1.5)), Lit{preserves.NewDouble(1.5)}},
		{pLit(preserves.ByteString("\x00")), Lit{preserves.ByteString("\x00")}},
		{pLit(Sym("x")), Lit{Sym("x")}},
		{pLit(emb), Lit{emb}},
		{pGroup(tArr()), Group{ArrType{}, []Entry{}}},
		{pGroup(tDict(), S("a"), pBind(pDiscard())), Dict(Entry{S("a"), Capture()})},
		{pGroup(tRec(Sym("foo")), I(10), pDiscard(), I(2), pLit(I(1))),
			NewGroup(RecType{Sym("foo")}, Entry{I(2), Lit{I(1)}}, Entry{I(10), Discard{}})},
		// Non-index keys in rec/arr groups are well-formed (they never match).
		{pGroup(tArr(), S("x"), pDiscard()), Group{ArrType{}, []Entry{{S("x"), Discard{}}}}},
		// Record labels of any kind.
		{pGroup(tRec(Seq{I(1)})), Group{RecType{Seq{I(1)}}, []Entry{}}},
	}
	for _, c := range cases {
		agreesWithSchema(t, c.in)
		got := mustParse(t, c.in)
		if !Equal(got, c.want) {
			t.Errorf("FromValue(%v) = %#v, want %#v", c.in, got, c.want)
		}
		if back := ToValue(got); !preserves.Equal(back, c.in) {
			t.Errorf("ToValue(FromValue(%v)) = %v", c.in, back)
		}
	}
}

func TestFromValueMalformed(t *testing.T) {
	cases := []V{
		I(1),
		Sym("_"),
		rec("_", I(1)),
		rec("bind"),
		rec("bind", pDiscard(), pDiscard()),
		rec("bind", I(1)),
		pLit(Seq{I(1)}), // scenario 39: lit cannot hold a compound
		pLit(rec("foo")),
		pLit(dict()),
		pLit(preserves.NewSet(I(1))),
		rec("lit"),
		rec("group", tArr()),
		rec("group", tArr(), Seq{}),
		rec("group", rec("rec"), dict()),
		rec("group", rec("arr", I(1)), dict()),
		rec("group", rec("dict", I(1)), dict()),
		rec("group", rec("set"), dict()),
		rec("group", I(0), dict()),
		pGroup(tArr(), I(0), I(5)),
		pGroup(tArr(), I(0), pBind(pLit(Seq{}))),
		rec("unknown"),
		preserves.NewRecord(S("_")),
	}
	for _, c := range cases {
		agreesWithSchema(t, c)
		p, err := FromValue(c)
		if err == nil {
			t.Errorf("FromValue(%v) = %#v, want error", c, p)
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("FromValue(%v): error %v does not wrap ErrMalformed", c, err)
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("FromValue(%v): error %T is not *Error", c, err)
		}
	}
}

func TestFromValueAnnotated(t *testing.T) {
	pos := preserves.Pos{File: "x.pr", Line: 3, Col: 7}
	at := func(v V) V { return &preserves.Annotated{Pos: pos, Item: v, Anns: []V{S("note")}} }
	in := at(pGroup(at(tRec(at(Sym("foo")))), at(I(0)), at(pBind(at(pLit(at(I(1))))))))
	p := mustParse(t, in)
	want := Rec(Sym("foo"), Bind{Lit{I(1)}})
	if !Equal(p, want) {
		t.Fatalf("got %#v, want %#v", p, want)
	}
	// The parsed pattern holds plain values.
	g := p.(Group)
	if _, ok := g.Type.(RecType).Label.(*preserves.Annotated); ok {
		t.Errorf("label kept its annotation")
	}
	if _, ok := g.Entries[0].Key.(*preserves.Annotated); ok {
		t.Errorf("key kept its annotation")
	}
	if _, ok := g.Entries[0].Pattern.(Bind).Pattern.(Lit).Value.(*preserves.Annotated); ok {
		t.Errorf("literal kept its annotation")
	}

	// Errors carry the position of the offending value.
	bad := pGroup(tArr(), I(0), pLit(at(Seq{I(1)})))
	_, err := FromValue(bad)
	var pe *Error
	if !errors.As(err, &pe) || pe.Pos != pos {
		t.Fatalf("error %v: want position %v", err, pos)
	}
	if got := pe.Error(); got[:len("x.pr:3:7: ")] != "x.pr:3:7: " {
		t.Errorf("Error() = %q, want file:line:col prefix", got)
	}
}

func TestMatchRules(t *testing.T) {
	foo := Sym("foo")
	emb := preserves.NewEmbedded(S("cap"))
	cases := []struct {
		name string
		p    Pattern
		v    V
		ok   bool
		caps []V
	}{
		{"discard atom", Discard{}, I(1), true, nil},
		{"discard compound", Discard{}, preserves.NewSet(I(1)), true, nil},
		{"bind captures", Capture(), rec("x", I(1)), true, []V{rec("x", I(1))}},
		{"bind inner fails", Bind{Lit{I(1)}}, I(2), false, nil},
		{"lit equal", Lit{I(1)}, I(1), true, nil},
		{"lit unequal", Lit{I(1)}, I(2), false, nil},
		{"lit kind", Lit{I(1)}, preserves.NewDouble(1), false, nil},
		{"lit embedded", Lit{emb}, preserves.NewEmbedded(S("cap")), true, nil},
		{"lit embedded other", Lit{emb}, preserves.NewEmbedded(S("other")), false, nil},
		{"bind embedded", Capture(), emb, true, []V{emb}},
		{"rec label", Rec(foo), rec("foo"), true, nil},
		{"rec label mismatch", Rec(foo), rec("bar"), false, nil},
		{"rec extra fields", Rec(foo, Capture()), rec("foo", I(1), I(2)), true, []V{I(1)}},
		{"rec missing field", Rec(foo, Discard{}), rec("foo"), false, nil},
		{"rec on sequence", Rec(foo), Seq{foo}, false, nil},
		{"rec label compound", Rec(Seq{I(1)}), preserves.NewRecord(Seq{I(1)}, I(0)), true, nil},
		{"rec label string vs symbol", Rec(foo), preserves.NewRecord(S("foo")), false, nil},
		{"arr", Arr(Capture()), Seq{I(1)}, true, []V{I(1)}},
		{"arr on record", Arr(), rec("foo"), false, nil},
		{"arr sparse", NewGroup(ArrType{}, Entry{I(2), Discard{}}), Seq{I(0), I(1), I(2)}, true, nil},
		{"arr sparse short", NewGroup(ArrType{}, Entry{I(2), Discard{}}), Seq{I(0), I(1)}, false, nil},
		{"arr negative key", NewGroup(ArrType{}, Entry{I(-1), Discard{}}), Seq{I(0)}, false, nil},
		{"arr string key", NewGroup(ArrType{}, Entry{S("0"), Discard{}}), Seq{I(0)}, false, nil},
		{"rec big key", NewGroup(RecType{foo}, Entry{preserves.Int(1 << 62), Discard{}}), rec("foo", I(0)), false, nil},
		{"dict", Dict(Entry{S("a"), Capture()}), dict(S("a"), I(1)), true, []V{I(1)}},
		{"dict missing key", Dict(Entry{S("a"), Capture()}), dict(S("b"), I(1)), false, nil},
		{"dict on record", Dict(), rec("foo"), false, nil},
		{"set never matches group", Arr(), preserves.NewSet(), false, nil},
		{"set never matches dict", Dict(), preserves.NewSet(), false, nil},
		{"embedded never matches group", Arr(), emb, false, nil},
		{"nil pattern is discard", Bind{}, I(4), true, []V{I(4)}},
		{"nil group type", Group{}, Seq{}, false, nil},
	}
	for _, c := range cases {
		caps, ok := Match(c.p, c.v)
		if ok != c.ok {
			t.Errorf("%s: Match ok = %v, want %v", c.name, ok, c.ok)
			continue
		}
		if ok {
			if caps == nil {
				t.Errorf("%s: nil captures on success", c.name)
			}
			if !eqSeq(caps, c.caps) {
				t.Errorf("%s: captures %s, want %s", c.name, fmtSeq(caps), fmtSeq(c.caps))
			}
		}
	}
}

func TestMatchAnnotated(t *testing.T) {
	ann := func(v V) V { return preserves.Annotate(v, S("a")) }
	v := ann(preserves.NewRecord(ann(Sym("foo")), ann(Seq{ann(I(1))}), ann(dict(ann(S("k")), ann(I(2))))))
	p := Rec(Sym("foo"), Arr(Bind{Lit{I(1)}}), Dict(Entry{S("k"), Capture()}))
	caps, ok := Match(p, v)
	if !ok || !eqSeq(caps, []V{I(1), I(2)}) {
		t.Fatalf("Match = %v %v, want [1 2]", caps, ok)
	}
}

// §11.3: pre-order, bind before its inner captures, entries by ascending key.
func TestCaptureOrder(t *testing.T) {
	p := mustParse(t, pGroup(tRec(Sym("p")),
		I(0), pBind(pGroup(tArr(), I(0), pBind(pDiscard()))),
		I(1), pBind(pDiscard())))
	caps, ok := Match(p, rec("p", Seq{I(7), I(8)}, I(9)))
	if want := []V{Seq{I(7), I(8)}, I(7), I(9)}; !ok || !eqSeq(caps, want) {
		t.Errorf("spec example: got %v %v, want %v", caps, ok, want)
	}

	// Scenario 37: entries keyed 10 and 2 → the capture at 2 comes first.
	p = mustParse(t, pGroup(tArr(), I(10), pBind(pDiscard()), I(2), pBind(pDiscard())))
	items := make(Seq, 11)
	for i := range items {
		items[i] = I(100 + i)
	}
	caps, ok = Match(p, items)
	if want := []V{I(102), I(110)}; !ok || !eqSeq(caps, want) {
		t.Errorf("key order: got %v %v, want %v", caps, ok, want)
	}

	// Dictionary keys: strings before symbols, whatever the input order.
	p = Dict(Entry{Sym("a"), Capture()}, Entry{S("z"), Capture()}, Entry{I(5), Capture()})
	caps, ok = Match(p, dict(Sym("a"), I(1), S("z"), I(2), I(5), I(3)))
	if want := []V{I(3), I(2), I(1)}; !ok || !eqSeq(caps, want) {
		t.Errorf("dict key order: got %v %v, want %v", caps, ok, want)
	}
}

func TestScenarios34to36(t *testing.T) {
	// 34
	p := mustParse(t, pGroup(tArr(), I(1), pDiscard()))
	for _, c := range []struct {
		v  V
		ok bool
	}{{Seq{I(1)}, false}, {Seq{I(1), I(2)}, true}, {Seq{I(1), I(2), I(3)}, true}} {
		if _, ok := Match(p, c.v); ok != c.ok {
			t.Errorf("34: Match(%v) = %v, want %v", c.v, ok, c.ok)
		}
	}
	// 35
	p = mustParse(t, pGroup(tDict(), Sym("a"), pBind(pDiscard())))
	if caps, ok := Match(p, dict(Sym("a"), I(1), Sym("b"), I(2))); !ok || !eqSeq(caps, []V{I(1)}) {
		t.Errorf("35: got %v %v, want [1]", caps, ok)
	}
	if _, ok := Match(p, dict(Sym("b"), I(2))); ok {
		t.Errorf("35: {b: 2} matched")
	}
	// 36
	p = mustParse(t, pGroup(tRec(Sym("foo"))))
	for _, v := range []V{rec("foo"), rec("foo", I(1)), rec("foo", I(1), Seq{}, S("x"))} {
		if caps, ok := Match(p, v); !ok || len(caps) != 0 {
			t.Errorf("36: Match(%v) = %v %v, want [] true", v, caps, ok)
		}
	}
	for _, v := range []V{rec("bar"), preserves.NewRecord(S("foo")), Seq{Sym("foo")}} {
		if _, ok := Match(p, v); ok {
			t.Errorf("36: Match(%v) matched", v)
		}
	}
	// 27/38 at the pattern level.
	p = mustParse(t, pGroup(tRec(Sym("foo")), I(0), pBind(pDiscard())))
	if caps, ok := Match(p, rec("foo", I(1))); !ok || !eqSeq(caps, []V{I(1)}) {
		t.Errorf("27: got %v %v", caps, ok)
	}
	obs := rec("Observe", ToValue(p), preserves.NewEmbedded(S("o")))
	if caps, ok := Match(Capture(), obs); !ok || !eqSeq(caps, []V{obs}) {
		t.Errorf("38: got %v %v", caps, ok)
	}
}

func TestMatchAppendReusesBuffer(t *testing.T) {
	p := Rec(Sym("foo"), Capture(), Capture())
	buf := make([]V, 0, 8)
	out, ok := MatchAppend(buf, p, rec("foo", I(1), I(2)))
	if !ok || len(out) != 2 || &out[0] != &buf[:1][0] {
		t.Fatalf("MatchAppend did not append into the buffer: %v %v", out, ok)
	}
	v := rec("foo", I(1), I(2))
	var pat Pattern = p // convert once: boxing the Group is not Match's cost
	allocs := testing.AllocsPerRun(100, func() {
		out, _ = MatchAppend(buf[:0], pat, v)
	})
	_ = out
	if allocs != 0 {
		t.Errorf("MatchAppend allocates %v times per run", allocs)
	}
}

func TestLiftDrop(t *testing.T) {
	emb := preserves.NewEmbedded(S("c"))
	vals := []V{
		I(1), S("s"), emb, rec("foo"), rec("foo", I(1), Seq{S("x"), rec("bar")}),
		Seq{}, dict(S("a"), Seq{I(1)}, Sym("b"), emb),
	}
	for _, v := range vals {
		p := MustLift(v)
		if caps, ok := Match(p, v); !ok || len(caps) != 0 {
			t.Errorf("MustLift(%v) does not match it: %v %v", v, caps, ok)
		}
		back, ok := Drop(p)
		if !ok || !preserves.Equal(back, v) {
			t.Errorf("Drop(MustLift(%v)) = %v %v", v, back, ok)
		}
		if _, err := FromValue(ToValue(p)); err != nil {
			t.Errorf("MustLift(%v) is not well-formed: %v", v, err)
		}
	}
	// Extensibility: MustLift(<foo 1>) also matches <foo 1 2>.
	if _, ok := Match(MustLift(rec("foo", I(1))), rec("foo", I(1), I(2))); !ok {
		t.Errorf("MustLift(<foo 1>) does not match <foo 1 2>")
	}
	// Lift strips annotations.
	if p := MustLift(preserves.Annotate(I(1), S("a"))); !Equal(p, Lit{I(1)}) {
		t.Errorf("MustLift(annotated) = %#v", p)
	} else if _, ann := p.(Lit).Value.(*preserves.Annotated); ann {
		t.Errorf("Lift kept the annotation")
	}
	// Sets cannot be lifted.
	if _, err := Lift(Seq{preserves.NewSet()}); !errors.Is(err, ErrMalformed) {
		t.Errorf("Lift(set) error = %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("MustLift(set) did not panic")
			}
		}()
		MustLift(preserves.NewSet())
	}()

	noDrop := []Pattern{
		Discard{}, Capture(), Rec(Sym("foo"), Discard{}), Arr(Lit{I(1)}, Capture()),
		NewGroup(ArrType{}, Entry{I(1), Lit{I(1)}}), // index 0 missing counts as <_>
		NewGroup(ArrType{}, Entry{S("k"), Lit{I(1)}}),
		Dict(Entry{S("a"), Discard{}}),
		Group{}, Lit{},
	}
	for _, p := range noDrop {
		if v, ok := Drop(p); ok {
			t.Errorf("Drop(%#v) = %v, want none", p, v)
		}
	}
	if v, ok := Drop(Rec(Sym("foo"))); !ok || !preserves.Equal(v, rec("foo")) {
		t.Errorf("Drop(empty rec group) = %v %v, want <foo>", v, ok)
	}
}

func TestBuildersAndEqual(t *testing.T) {
	g := NewGroup(ArrType{}, Entry{I(10), Discard{}}, Entry{I(2), Capture()}, Entry{I(2), Lit{I(0)}})
	if len(g.Entries) != 2 || !preserves.Equal(g.Entries[0].Key, I(2)) ||
		!Equal(g.Entries[0].Pattern, Lit{I(0)}) || !preserves.Equal(g.Entries[1].Key, I(10)) {
		t.Errorf("NewGroup did not sort and dedupe: %#v", g)
	}
	r := Rec(Sym("foo"), Capture(), Lit{I(1)})
	want := rec("group", tRec(Sym("foo")), dict(I(0), pBind(pDiscard()), I(1), pLit(I(1))))
	if !preserves.Equal(ToValue(r), want) {
		t.Errorf("Rec builder = %v, want %v", ToValue(r), want)
	}
	distinct := []Pattern{
		Discard{}, Capture(), Lit{I(1)}, Lit{I(2)}, Rec(Sym("foo")), Rec(Sym("bar")), Arr(), Dict(),
		Arr(Discard{}), Arr(Capture()), NewGroup(ArrType{}, Entry{I(1), Discard{}}),
	}
	for i, p := range distinct {
		for j, q := range distinct {
			if Equal(p, q) != (i == j) {
				t.Errorf("Equal(%#v, %#v) = %v", p, q, !(i == j))
			}
		}
	}
	if !Equal(Bind{}, Capture()) {
		t.Errorf("nil sub-pattern should equal Discard")
	}
}

// Records with extra fields are refused (the schema language allows them;
// dataspacePatterns is generated with -exact), and the error names the
// offending record's place.
func TestExtraFieldsNamePosition(t *testing.T) {
	pos := preserves.Pos{File: "x.pr", Line: 4, Col: 2}
	bad := &preserves.Annotated{Pos: pos, Item: rec("bind", pDiscard(), I(1))}
	for _, v := range []V{bad, pGroup(tArr(), I(0), bad), rec("group", rec("arr"), dict(I(0), bad))} {
		agreesWithSchema(t, v)
		_, err := FromValue(v)
		var pe *Error
		if !errors.As(err, &pe) || pe.Pos != pos || !errors.Is(err, ErrMalformed) {
			t.Errorf("FromValue(%v) = %v, want ErrMalformed at %v", v, err, pos)
		}
	}
}
