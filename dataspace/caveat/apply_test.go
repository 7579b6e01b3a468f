package caveat

import (
	"errors"
	"math/big"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// fakeCap stands in for the runtime's capability: it records the caveats
// it has been attenuated with and applies them like a real Cap would.
type fakeCap struct {
	name string
	cs   []Caveat
}

func (f *fakeCap) AttenuateCaveats(cs []Caveat) (any, error) {
	if err := Validate(cs); err != nil {
		return nil, err
	}
	return &fakeCap{name: f.name, cs: append(append([]Caveat(nil), f.cs...), cs...)}, nil
}

// send is what the runtime does on assert/message: rewrite through the
// cap's attenuation.
func (f *fakeCap) send(v V) (V, bool) { return Apply(f.cs, v) }

type applyCase struct {
	in   V
	want V // nil: rejected
}

func checkApply(t *testing.T, cs []Caveat, cases []applyCase) {
	t.Helper()
	for _, c := range cases {
		got, ok := Apply(cs, c.in)
		switch {
		case c.want == nil && ok:
			t.Errorf("Apply(%v) = %v, want rejection", c.in, got)
		case c.want != nil && !ok:
			t.Errorf("Apply(%v) rejected, want %v", c.in, c.want)
		case c.want != nil && !preserves.Equal(got, c.want):
			t.Errorf("Apply(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// §18 scenario 45.
func TestScenario45RewriteRecord(t *testing.T) {
	cs := mustList(t, rewrite(prec(sym("foo"), bind(discard())), prec(sym("bar"), ref(0))))
	if err := Validate(cs); err != nil {
		t.Fatal(err)
	}
	checkApply(t, cs, []applyCase{
		{rec("foo", i(1)), rec("bar", i(1))},
		{rec("foo", i(1), i(2)), nil},
		{rec("baz", i(1)), nil},
		{rec("foo"), nil},
		{seq(sym("foo"), i(1)), nil},
	})
}

// §18 scenario 46: c1 then c2 → the value passes c2 first, then c1.
func TestScenario46Order(t *testing.T) {
	c1 := mustParse(t, rewrite(prec(sym("b"), bind(discard())), prec(sym("c"), ref(0))))
	c2 := mustParse(t, rewrite(prec(sym("a"), bind(discard())), prec(sym("b"), ref(0))))
	checkApply(t, []Caveat{c1, c2}, []applyCase{
		{rec("a", i(7)), rec("c", i(7))}, // c2: a→b, then c1: b→c
		{rec("b", i(7)), nil},            // c2 rejects b
	})
	// The opposite order composes the other way.
	checkApply(t, []Caveat{c2, c1}, []applyCase{
		{rec("a", i(7)), nil},
		{rec("b", i(7)), nil}, // c1: b→c, then c2 rejects c
	})

	// Through a (fake) capability attenuated twice.
	var cap Attenuable = &fakeCap{name: "ds"}
	p, err := cap.AttenuateCaveats([]Caveat{c1})
	if err != nil {
		t.Fatal(err)
	}
	p, err = p.(Attenuable).AttenuateCaveats([]Caveat{c2})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.(*fakeCap).send(rec("a", i(1))); !ok || !preserves.Equal(got, rec("c", i(1))) {
		t.Fatalf("send through twice-attenuated cap = %v, %v", got, ok)
	}
}

// §18 scenario 47.
func TestScenario47RejectEverything(t *testing.T) {
	inputs := []V{i(1), str("x"), sym("y"), rec("foo", i(1)), seq(), dict(), preserves.NewEmbedded(&fakeCap{})}
	for _, cv := range []V{or(), sym("mystery"), rec("future-caveat", i(1)), reject(discard())} {
		cs := mustList(t, cv)
		if err := Validate(cs); err != nil {
			t.Fatalf("Validate(%v) = %v; reject/unknown/or are always valid", cv, err)
		}
		for _, in := range inputs {
			if got, ok := Apply(cs, in); ok {
				t.Errorf("caveat %v passed %v as %v", cv, in, got)
			}
		}
		// Rejection anywhere in a chain rejects.
		chain := append(mustList(t, rewrite(bind(discard()), ref(0))), cs...)
		chain = append(chain, mustList(t, rewrite(bind(discard()), ref(0)))...)
		if _, ok := Apply(chain, i(1)); ok {
			t.Errorf("chain containing %v passed a value", cv)
		}
	}
}

// §18 scenario 48.
func TestScenario48Validate(t *testing.T) {
	cases := []struct {
		name string
		v    V
		want error
	}{
		{"unbound ref", rewrite(bind(discard()), ref(1)), ErrUnboundRef},
		{"bind under not", rewrite(not(bind(discard())), lit(i(1))), ErrBindingUnderNegation},
		{"negative ref", rewrite(bind(discard()), ref(-1)), ErrUnboundRef},
		{"ref with no binds", rewrite(discard(), ref(0)), ErrUnboundRef},
		{"deep bind under not", rewrite(not(prec(sym("x"), and(discard(), bind(discard())))), lit(i(1))), ErrBindingUnderNegation},
		{"unbound in alternative", or(rewrite(bind(discard()), ref(0)), rewrite(discard(), ref(0))), ErrUnboundRef},
		{"unbound inside rec template", rewrite(bind(discard()), rec("rec", sym("a"), seq(ref(0), ref(1)))), ErrUnboundRef},
		{"unbound inside dict template", rewrite(bind(discard()), rec("dict", dict(sym("k"), ref(3)))), ErrUnboundRef},
		{"unbound inside arr template", rewrite(bind(discard()), rec("arr", seq(ref(2)))), ErrUnboundRef},
		{"unbound attenuate target", rewrite(bind(sym("Embedded")), attenuate(ref(1))), ErrUnboundRef},
		{"invalid nested caveat", rewrite(bind(sym("Embedded")), attenuate(ref(0), rewrite(discard(), ref(0)))), ErrUnboundRef},
		{"nested bind under not", rewrite(bind(sym("Embedded")), attenuate(ref(0), rewrite(not(bind(discard())), lit(i(0))))), ErrBindingUnderNegation},
		{"valid: two binds", rewrite(prec(sym("p"), bind(discard()), bind(discard())), rec("arr", seq(ref(1), ref(0)))), nil},
		{"valid: dict binds", rewrite(pdict(sym("k"), bind(discard())), ref(0)), nil},
		{"valid: not without bind", rewrite(and(bind(discard()), not(lit(i(0)))), ref(0)), nil},
		{"valid: reject with bind under not", reject(not(bind(discard()))), nil},
		{"valid: unknown", sym("whatever"), nil},
		// The nested caveats have their own bindings: ref 0 there refers
		// to the nested pattern, not the outer one.
		{"valid: nested scope", rewrite(bind(sym("Embedded")), attenuate(ref(0), rewrite(bind(discard()), ref(0)))), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Put a valid caveat first so the error must come from the
			// right element.
			cs := mustList(t, reject(discard()), tc.v)
			err := Validate(cs)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Msg == "" {
				t.Fatalf("error %v is not a detailed *Error", err)
			}
			t.Log(err)
			other := ErrUnboundRef
			if tc.want == ErrUnboundRef {
				other = ErrBindingUnderNegation
			}
			if errors.Is(err, other) {
				t.Fatalf("error %v matches both sentinels", err)
			}
		})
	}
	if err := Validate([]Caveat{nil}); !errors.Is(err, ErrNilValue) {
		t.Fatalf("Validate([nil]) = %v", err)
	}
}

// §18 scenario 49.
func TestScenario49AttenuateTemplate(t *testing.T) {
	cs := mustList(t, rewrite(bind(sym("Embedded")), attenuate(ref(0), reject(discard()))))
	if err := Validate(cs); err != nil {
		t.Fatal(err)
	}
	orig := &fakeCap{name: "target"}
	out, ok := Apply(cs, preserves.NewEmbedded(orig))
	if !ok {
		t.Fatal("embedded cap rejected")
	}
	emb, isEmb := out.(*preserves.Embedded)
	if !isEmb {
		t.Fatalf("result %v is not embedded", out)
	}
	nc, isCap := emb.Payload.(*fakeCap)
	if !isCap || nc == orig || nc.name != "target" || len(nc.cs) != 1 {
		t.Fatalf("result payload %#v is not a fresh attenuated copy", emb.Payload)
	}
	if len(orig.cs) != 0 {
		t.Fatalf("original cap was modified")
	}
	for _, v := range []V{i(1), rec("anything"), preserves.NewEmbedded(orig)} {
		if got, ok := nc.send(v); ok {
			t.Errorf("attenuated cap passed %v as %v", v, got)
		}
	}
	// Not embedded → the pattern fails → rejected.
	for _, v := range []V{i(1), str("cap"), rec("ref", i(0))} {
		if got, ok := Apply(cs, v); ok {
			t.Errorf("non-embedded %v passed as %v", v, got)
		}
	}
}

func TestAttenuateTemplateFailures(t *testing.T) {
	// Embedded but not attenuable.
	cs := mustList(t, rewrite(bind(sym("Embedded")), attenuate(ref(0))))
	if _, ok := Apply(cs, preserves.NewEmbedded("just a string")); ok {
		t.Error("non-attenuable payload accepted")
	}
	// Template yields a non-embedded.
	cs = mustList(t, rewrite(bind(discard()), attenuate(ref(0))))
	if _, ok := Apply(cs, i(3)); ok {
		t.Error("attenuate of a non-embedded accepted")
	}
	// The payload refuses the attenuation (here: invalid caveats, which
	// Validate would have caught, but Apply must fail closed anyway).
	cs = []Caveat{Rewrite{Pattern: PBind{Pattern: PEmbedded{}}, Template: TAttenuate{
		Template: TRef{Binding: 0},
		Caveats:  []Caveat{Rewrite{Pattern: PDiscard{}, Template: TRef{Binding: 5}}},
	}}}
	if _, ok := Apply(cs, preserves.NewEmbedded(&fakeCap{})); ok {
		t.Error("failed attenuation accepted")
	}
	// Attenuate inside a compound template: fine when it works.
	cs = mustList(t, rewrite(prec(sym("give"), bind(sym("Embedded"))),
		rec("rec", sym("got"), seq(attenuate(ref(0), reject(lit(i(1))))))))
	out, ok := Apply(cs, rec("give", preserves.NewEmbedded(&fakeCap{name: "x"})))
	if !ok {
		t.Fatal("rejected")
	}
	c := out.(*preserves.Record).Fields[0].(*preserves.Embedded).Payload.(*fakeCap)
	if _, ok := c.send(i(1)); ok {
		t.Error("nested attenuation not applied")
	}
	if got, ok := c.send(i(2)); !ok || !preserves.Equal(got, i(2)) {
		t.Error("nested attenuation too strict")
	}
}

// The reference's `or` commits to the first alternative whose pattern
// matches, even when that alternative's template then fails.
func TestOrStopsAtFirstMatch(t *testing.T) {
	cs := mustList(t, or(
		rewrite(prec(sym("x"), bind(discard())), attenuate(ref(0))), // matches <x 1>, then fails
		rewrite(bind(discard()), ref(0)),                            // would accept anything
	))
	checkApply(t, cs, []applyCase{
		{rec("x", i(1)), nil},
		{rec("y", i(1)), rec("y", i(1))},
		{i(5), i(5)},
	})
	// An unvalidated out-of-range ref is also a template failure.
	bad := []Caveat{Alts{Alternatives: []Rewrite{
		{Pattern: PLitInt(1), Template: TRef{Binding: 0}},
		{Pattern: PBind{Pattern: PDiscard{}}, Template: TRef{Binding: 0}},
	}}}
	checkApply(t, bad, []applyCase{{i(1), nil}, {i(2), i(2)}})
	// First matching alternative wins over later ones.
	cs = mustList(t, or(
		rewrite(prec(sym("x"), discard()), lit(str("first"))),
		rewrite(prec(sym("x"), discard()), lit(str("second"))),
	))
	checkApply(t, cs, []applyCase{{rec("x", i(0)), str("first")}, {rec("x"), nil}})
}

// PLitInt is shorthand for a literal integer pattern.
func PLitInt(n int64) Pattern { return Lit{Value: preserves.Int(n)} }

func TestPatternMatching(t *testing.T) {
	emb := preserves.NewEmbedded(&fakeCap{})
	bigNum := preserves.NewBigInt(new(big.Int).Lsh(big.NewInt(1), 70))
	cases := []struct {
		name string
		p    V
		yes  []V
		no   []V
	}{
		{"discard", discard(), []V{i(1), emb, seq()}, nil},
		{"Boolean", sym("Boolean"), []V{preserves.Bool(true), preserves.Bool(false)}, []V{i(0), sym("true")}},
		{"Double", sym("Double"), []V{preserves.NewDouble(1.5)}, []V{i(1)}},
		{"SignedInteger", sym("SignedInteger"), []V{i(-3), bigNum}, []V{preserves.NewDouble(3), str("3")}},
		{"String", sym("String"), []V{str("")}, []V{sym("s"), preserves.ByteString("s")}},
		{"ByteString", sym("ByteString"), []V{preserves.ByteString("\x00")}, []V{str("")}},
		{"Symbol", sym("Symbol"), []V{sym("a")}, []V{str("a")}},
		{"Embedded", sym("Embedded"), []V{emb}, []V{rec("embedded")}},
		{"lit atom", lit(i(3)), []V{i(3)}, []V{i(4), preserves.NewDouble(3)}},
		{"lit compound", lit(rec("a", seq(i(1)))), []V{rec("a", seq(i(1)))}, []V{rec("a", seq(i(1), i(2)))}},
		{"rec exact arity", prec(sym("a"), discard()), []V{rec("a", i(1))}, []V{rec("a"), rec("a", i(1), i(2)), rec("b", i(1))}},
		{"rec non-symbol label", prec(i(5), discard()), []V{preserves.NewRecord(i(5), i(1))}, []V{rec("5", i(1))}},
		{"arr exact length", parr(discard(), lit(i(2))), []V{seq(i(1), i(2))}, []V{seq(i(1)), seq(i(1), i(2), i(3)), seq(i(1), i(3))}},
		{"arr empty", parr(), []V{seq()}, []V{seq(i(1)), rec("arr")}},
		{"dict extra keys", pdict(sym("a"), lit(i(1))), []V{dict(sym("a"), i(1)), dict(sym("a"), i(1), sym("b"), i(2))}, []V{dict(), dict(sym("a"), i(2)), seq()}},
		{"and", and(prec(sym("p"), discard()), not(prec(sym("p"), lit(i(0))))), []V{rec("p", i(1))}, []V{rec("p", i(0)), i(0)}},
		{"empty and", and(), []V{i(0)}, nil},
		{"not", not(sym("String")), []V{i(0)}, []V{str("s")}},
		{"bind", bind(sym("Symbol")), []V{sym("x")}, []V{i(1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := mustParse(t, reject(tc.p)).(Reject)
			if !ok {
				t.Fatalf("pattern %v did not parse", tc.p)
			}
			for _, v := range tc.yes {
				if _, ok := Match(p.Pattern, v); !ok {
					t.Errorf("%v should match %v", tc.p, v)
				}
				// Annotated inputs match the same way.
				if _, ok := Match(p.Pattern, preserves.Annotate(v, str("ann"))); !ok {
					t.Errorf("%v should match annotated %v", tc.p, v)
				}
			}
			for _, v := range tc.no {
				if _, ok := Match(p.Pattern, v); ok {
					t.Errorf("%v should not match %v", tc.p, v)
				}
			}
		})
	}
}

func TestBindingOrder(t *testing.T) {
	// Pre-order, left to right: the outer bind before its inner ones;
	// dict entries by ascending key; and-branches in order.
	p := mustParse(t, reject(bind(prec(sym("r"),
		bind(parr(bind(discard()), bind(discard()))),
		pdict(sym("z"), bind(discard()), sym("a"), bind(discard())),
		and(bind(sym("SignedInteger")), bind(discard())),
	)))).(Reject).Pattern
	v := rec("r", seq(i(1), i(2)), dict(sym("a"), str("A"), sym("z"), str("Z")), i(9))
	bs, ok := Match(p, v)
	if !ok {
		t.Fatal("no match")
	}
	want := []V{v, seq(i(1), i(2)), i(1), i(2), str("A"), str("Z"), i(9), i(9)}
	if len(bs) != len(want) {
		t.Fatalf("bindings %v, want %v", bs, want)
	}
	for j := range want {
		if !preserves.Equal(bs[j], want[j]) {
			t.Fatalf("binding %d = %v, want %v", j, bs[j], want[j])
		}
	}
	// A failed match returns no bindings.
	if bs, ok := Match(p, rec("r", seq(i(1)), dict(), i(9))); ok || bs != nil {
		t.Fatalf("failed match returned %v, %v", bs, ok)
	}
}

func TestTemplates(t *testing.T) {
	cs := mustList(t, rewrite(
		prec(sym("in"), bind(discard()), bind(discard())),
		rec("rec", sym("out"), seq(
			ref(1),
			rec("arr", seq(ref(0), lit(str("k")))),
			rec("dict", dict(sym("x"), ref(0), str("y"), lit(rec("z")))),
			lit(seq(i(1), i(2))),
		)),
	))
	if err := Validate(cs); err != nil {
		t.Fatal(err)
	}
	checkApply(t, cs, []applyCase{{
		rec("in", i(1), str("two")),
		rec("out", str("two"), seq(i(1), str("k")), dict(sym("x"), i(1), str("y"), rec("z")), seq(i(1), i(2))),
	}})
	// A literal template ignores the input entirely.
	checkApply(t, mustList(t, rewrite(discard(), lit(sym("constant")))), []applyCase{{i(1), sym("constant")}})
}

func TestRejectPassesOthersUnchanged(t *testing.T) {
	cs := mustList(t, reject(prec(sym("secret"), discard())))
	ann := preserves.Annotate(rec("public", i(1)), str("keep me"))
	checkApply(t, cs, []applyCase{
		{rec("secret", i(1)), nil},
		{rec("secret", i(1), i(2)), rec("secret", i(1), i(2))}, // exact arity
		{rec("public", i(1)), rec("public", i(1))},
	})
	// A value passing a reject is returned as is (same value, not a copy).
	if got, ok := Apply(cs, ann); !ok || got != ann {
		t.Fatalf("reject changed a passing value: %v", got)
	}
}

func TestEmptyListPasses(t *testing.T) {
	v := rec("anything", i(1))
	if got, ok := Apply(nil, v); !ok || got != v {
		t.Fatal("empty caveat list must pass the value unchanged")
	}
}

func TestHandBuiltNilsFailClosed(t *testing.T) {
	cs := []Caveat{
		Rewrite{Pattern: Lit{}, Template: Lit{Value: i(1)}},
		Rewrite{Pattern: PDiscard{}, Template: Lit{}},
		Rewrite{Pattern: PDiscard{}, Template: TRec{}},
		Rewrite{Pattern: PDiscard{}, Template: TDict{Entries: []TDictEntry{{Template: Lit{Value: i(1)}}}}},
		Rewrite{Pattern: PRec{}, Template: Lit{Value: i(1)}},
		Rewrite{Pattern: PDict{Entries: []PDictEntry{{Pattern: PDiscard{}}}}, Template: Lit{Value: i(1)}},
		Rewrite{Pattern: nil, Template: nil},
		nil,
	}
	for j, c := range cs {
		if got, ok := Apply([]Caveat{c}, dict()); ok {
			t.Errorf("caveat %d passed as %v", j, got)
		}
		// Validate refuses them all, before anything could render them.
		if err := Validate([]Caveat{c}); !errors.Is(err, ErrNilValue) {
			t.Errorf("Validate(caveat %d) = %v, want ErrNilValue", j, err)
		}
	}
	for j, c := range []Caveat{Reject{}, Reject{Pattern: PNot{Pattern: PArr{Items: []Pattern{nil}}}}, Unknown{}} {
		if err := Validate([]Caveat{c}); !errors.Is(err, ErrNilValue) {
			t.Errorf("Validate(incomplete %d) = %v, want ErrNilValue", j, err)
		}
	}
}
