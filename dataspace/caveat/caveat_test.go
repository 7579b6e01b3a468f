package caveat

import (
	"errors"
	"math/big"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// Small constructors so the tests read close to Preserves text.
type V = preserves.Value

func sym(s string) preserves.Symbol  { return preserves.Symbol(s) }
func rec(l string, fs ...V) V        { return preserves.Rec(l, fs...) }
func seq(vs ...V) preserves.Sequence { return preserves.Sequence(vs) }
func i(n int64) V                    { return preserves.Int(n) }
func str(s string) V                 { return preserves.String(s) }
func dict(kvs ...V) V                { return preserves.Dict(kvs...) }

// Pattern/template/caveat vocabulary of sturdy.prs.
func discard() V               { return rec("_") }
func bind(p V) V               { return rec("bind", p) }
func lit(v V) V                { return rec("lit", v) }
func ref(n int64) V            { return rec("ref", i(n)) }
func prec(l V, ps ...V) V      { return rec("rec", l, seq(ps...)) }
func parr(ps ...V) V           { return rec("arr", seq(ps...)) }
func rewrite(p, t V) V         { return rec("rewrite", p, t) }
func reject(p V) V             { return rec("reject", p) }
func or(rs ...V) V             { return rec("or", seq(rs...)) }
func attenuate(t V, cs ...V) V { return rec("attenuate", t, seq(cs...)) }
func not(p V) V                { return rec("not", p) }
func and(ps ...V) V            { return rec("and", seq(ps...)) }
func pdict(kvs ...V) V         { return rec("dict", dict(kvs...)) }
func mustParse(t *testing.T, v V) Caveat {
	t.Helper()
	c, err := FromValue(v)
	if err != nil {
		t.Fatalf("FromValue(%v): %v", v, err)
	}
	return c
}

func mustList(t *testing.T, vs ...V) []Caveat {
	t.Helper()
	cs := make([]Caveat, len(vs))
	for j, v := range vs {
		cs[j] = mustParse(t, v)
	}
	return cs
}

func TestFromValueShapes(t *testing.T) {
	cases := []struct {
		name string
		v    V
		want string // dynamic type name
	}{
		{"rewrite", rewrite(bind(discard()), ref(0)), "Rewrite"},
		{"or", or(rewrite(discard(), lit(i(1)))), "Alts"},
		{"empty or", or(), "Alts"},
		{"reject", reject(discard()), "Reject"},
		{"symbol", sym("frob"), "Unknown"},
		{"rewrite extra field", rec("rewrite", discard(), ref(0), i(1)), "Unknown"},
		{"rewrite bad pattern", rewrite(rec("bind"), ref(0)), "Unknown"},
		{"rewrite bad template", rewrite(discard(), sym("x")), "Unknown"},
		{"rewrite ref not int", rewrite(discard(), rec("ref", str("0"))), "Unknown"},
		{"or not sequence", rec("or", rewrite(discard(), ref(0))), "Unknown"},
		{"or with a reject", or(reject(discard())), "Unknown"},
		{"reject bad pattern", reject(sym("Embeddd")), "Unknown"},
		{"discard with field", reject(rec("_", i(1))), "Unknown"},
		{"dict not dict", reject(rec("dict", seq())), "Unknown"},
		{"string label", preserves.NewRecord(str("rewrite"), discard(), ref(0)), "Unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.v)
			var got string
			switch c.(type) {
			case Rewrite:
				got = "Rewrite"
			case Alts:
				got = "Alts"
			case Reject:
				got = "Reject"
			case Unknown:
				got = "Unknown"
			}
			if got != tc.want {
				t.Fatalf("FromValue(%v) = %T, want %s", tc.v, c, tc.want)
			}
			if back := ToValue(c); !preserves.Equal(back, tc.v) {
				t.Fatalf("ToValue(FromValue(v)) = %v, want %v", back, tc.v)
			}
		})
	}
}

func TestFromValueNil(t *testing.T) {
	if _, err := FromValue(nil); !errors.Is(err, ErrNilValue) {
		t.Fatalf("FromValue(nil) error = %v, want ErrNilValue", err)
	}
}

func TestFromValueStructure(t *testing.T) {
	v := rewrite(
		and(
			prec(sym("foo"), bind(sym("String")), sym("Embedded"), lit(seq(i(1), i(2)))),
			not(parr()),
		),
		attenuate(rec("rec", sym("bar"), seq(ref(0), rec("arr", seq(lit(i(1)))))), reject(discard())),
	)
	got := mustParse(t, v)
	want := Rewrite{
		Pattern: PAnd{Patterns: []Pattern{
			PRec{Label: sym("foo"), Fields: []Pattern{
				PBind{Pattern: PAtom{Kind: preserves.KindString}},
				PEmbedded{},
				Lit{Value: seq(i(1), i(2))},
			}},
			PNot{Pattern: PArr{Items: []Pattern{}}},
		}},
		Template: TAttenuate{
			Template: TRec{Label: sym("bar"), Fields: []Template{
				TRef{Binding: 0},
				TArr{Items: []Template{Lit{Value: i(1)}}},
			}},
			Caveats: []Caveat{Reject{Pattern: PDiscard{}}},
		},
	}
	// Compare through the value form: both directions must agree.
	if !preserves.Equal(ToValue(got), ToValue(want)) || !preserves.Equal(ToValue(want), v) {
		t.Fatalf("parsed %#v\nwant   %#v", got, want)
	}
	r := got.(Rewrite)
	if k := r.Pattern.(PAnd).Patterns[0].(PRec).Fields[0].(PBind).Pattern.(PAtom).Kind; k != preserves.KindString {
		t.Fatalf("atom kind = %v", k)
	}
}

func TestAtomSymbols(t *testing.T) {
	for _, name := range []string{"Boolean", "Double", "SignedInteger", "String", "ByteString", "Symbol"} {
		c := mustParse(t, reject(sym(name)))
		p, ok := c.(Reject).Pattern.(PAtom)
		if !ok || p.Kind.String() != name {
			t.Fatalf("%s parsed as %#v", name, c)
		}
	}
	for _, name := range []string{"Record", "Sequence", "Set", "Dictionary", "boolean"} {
		if _, ok := mustParse(t, reject(sym(name))).(Unknown); !ok {
			t.Fatalf("%s should make the caveat unknown", name)
		}
	}
}

func TestAnnotationsIgnored(t *testing.T) {
	v := preserves.Annotate(rewrite(
		preserves.Annotate(bind(preserves.Annotate(discard(), str("note"))), str("x")),
		rec("lit", preserves.Annotate(seq(preserves.Annotate(i(1), str("one"))), str("y"))),
	), str("top"))
	c := mustParse(t, v)
	if _, ok := c.(Rewrite); !ok {
		t.Fatalf("annotated rewrite parsed as %T", c)
	}
	// Literals are stored stripped, so the round trip equals Strip(v)
	// structurally and carries no annotations.
	back := ToValue(c)
	if !preserves.Equal(back, v) {
		t.Fatalf("round trip %v != %v", back, v)
	}
	lit := c.(Rewrite).Template.(Lit).Value
	if _, ok := lit.(preserves.Sequence)[0].(*preserves.Annotated); ok {
		t.Fatalf("literal kept an annotation")
	}
}

func TestBigRef(t *testing.T) {
	huge := preserves.NewBigInt(new(big.Int).Lsh(big.NewInt(1), 80))
	v := rewrite(bind(discard()), rec("ref", huge))
	c := mustParse(t, v)
	if _, ok := c.(Rewrite); !ok {
		t.Fatalf("big ref parsed as %T", c)
	}
	if back := ToValue(c); !preserves.Equal(back, v) {
		t.Fatalf("round trip %v != %v", back, v)
	}
	if err := Validate([]Caveat{c}); !errors.Is(err, ErrUnboundRef) {
		t.Fatalf("Validate = %v, want ErrUnboundRef", err)
	}
	if _, ok := Apply([]Caveat{c}, i(1)); ok {
		t.Fatalf("big ref instantiated")
	}
}

func TestListFromValue(t *testing.T) {
	cs, err := ListFromValue(seq(reject(discard()), sym("zzz")))
	if err != nil || len(cs) != 2 {
		t.Fatalf("ListFromValue = %v, %v", cs, err)
	}
	if _, ok := cs[1].(Unknown); !ok {
		t.Fatalf("second caveat = %T, want Unknown", cs[1])
	}
	if back := ListToValue(cs); !preserves.Equal(back, seq(reject(discard()), sym("zzz"))) {
		t.Fatalf("ListToValue = %v", back)
	}
	if _, err := ListFromValue(reject(discard())); !errors.Is(err, ErrMalformedRef) {
		t.Fatalf("non-sequence: err = %v", err)
	}
	if _, err := ListFromValue(nil); !errors.Is(err, ErrNilValue) {
		t.Fatalf("nil: err = %v", err)
	}
}

func TestCompare(t *testing.T) {
	a := mustList(t, reject(discard()))
	b := mustList(t, reject(discard()))
	c := mustList(t, reject(discard()), sym("x"))
	if Compare(a, b) != 0 || Compare(nil, nil) != 0 || Compare(nil, []Caveat{}) != 0 {
		t.Fatalf("equal lists compare unequal")
	}
	if Compare(a, c) >= 0 || Compare(c, a) <= 0 || Compare(nil, a) >= 0 {
		t.Fatalf("Compare is not a consistent order")
	}
}

func TestBuiltValuesRender(t *testing.T) {
	// Hand-built values with dict entries out of order still render
	// (sorted) and match in key order.
	p := PDict{Entries: []PDictEntry{
		{Key: sym("b"), Pattern: PBind{Pattern: PDiscard{}}},
		{Key: sym("a"), Pattern: PBind{Pattern: PDiscard{}}},
	}}
	want := pdict(sym("a"), bind(discard()), sym("b"), bind(discard()))
	if got := patternTo(p).ToValue(); !preserves.Equal(got, want) {
		t.Fatalf("patternTo(p).ToValue() = %v, want %v", got, want)
	}
	bs, ok := Match(p, dict(sym("a"), i(1), sym("b"), i(2)))
	if !ok || len(bs) != 2 || !preserves.Equal(bs[0], i(1)) || !preserves.Equal(bs[1], i(2)) {
		t.Fatalf("Match = %v, %v; want [1 2] in key order", bs, ok)
	}
}

// `<rec L>` (PLabel, the Go extension for the fork dialect's label-only
// record pattern) matches every record labelled L, whatever its fields,
// round-trips exactly, and under `not` blocks everything else.
func TestLabelOnlyRecordPattern(t *testing.T) {
	only := reject(not(rec("rec", sym("Observe"))))
	c := mustParse(t, only)
	if _, ok := c.(Reject).Pattern.(PNot).Pattern.(PLabel); !ok {
		t.Fatalf("parsed as %#v", c)
	}
	if got := ToValue(c); !preserves.Equal(got, only) {
		t.Errorf("round trip: %v", got)
	}
	for _, tc := range []struct {
		v    V
		pass bool
	}{
		{rec("Observe"), true},
		{rec("Observe", i(1), i(2)), true},
		{rec("Observe", i(1), i(2), i(3)), true},
		{rec("observe", i(1), i(2)), false},
		{sym("Observe"), false},
		{seq(sym("Observe")), false},
	} {
		if _, ok := Apply([]Caveat{c}, tc.v); ok != tc.pass {
			t.Errorf("%v: passed %v, want %v", tc.v, ok, tc.pass)
		}
	}
	if err := Validate([]Caveat{c}); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// The generated parsers accept records with extra fields (the schema
// language does); the conversion refuses them where they are, so a
// malformed caveat inside an `attenuate` template is Unknown on its own,
// as with the hand-written parser it replaced, and everything round-trips.
func TestExtraFieldsFailClosedWhereTheyAre(t *testing.T) {
	inner := rec("reject", discard(), i(1))
	v := rewrite(bind(discard()), attenuate(ref(0), inner))
	c := mustParse(t, v)
	att, ok := c.(Rewrite).Template.(TAttenuate)
	if !ok {
		t.Fatalf("parsed as %#v", c)
	}
	if u, ok := att.Caveats[0].(Unknown); !ok || !preserves.Equal(u.Value, inner) {
		t.Errorf("inner caveat %#v, want Unknown %v", att.Caveats[0], inner)
	}
	if got := ToValue(c); !preserves.Equal(got, v) {
		t.Errorf("round trip: %v", got)
	}
	for _, bad := range []V{
		rewrite(rec("bind", discard(), i(1)), ref(0)),
		rewrite(discard(), rec("ref", i(0), i(1))),
		rewrite(rec("rec", sym("a"), seq(), i(1)), ref(0)),
		rewrite(discard(), rec("attenuate", ref(0), seq(), i(1))),
		reject(rec("dict", dict(sym("k"), rec("_", i(1))))),
		rec("or", seq(rewrite(discard(), ref(0))), i(1)),
	} {
		if c := mustParse(t, bad); !preserves.Equal(ToValue(c), bad) {
			t.Errorf("%v: round trip %v", bad, ToValue(c))
		} else if _, ok := c.(Unknown); !ok {
			t.Errorf("%v: parsed as %#v, want Unknown", bad, c)
		}
	}
}
