package preserves_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

func mustParse(t *testing.T, src string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(src)
	if err != nil {
		t.Fatalf("ParseText(%q): %v", src, err)
	}
	return v
}

func bigInt(s string) preserves.Value {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return preserves.NewBigInt(n)
}

func TestTextAtoms(t *testing.T) {
	sym := func(s string) preserves.Value { return preserves.Symbol(s) }
	dbl := func(f float64) preserves.Value { return preserves.NewDouble(f) }
	cases := []struct {
		src  string
		want preserves.Value
	}{
		{"#t", preserves.Bool(true)},
		{"#f", preserves.Bool(false)},
		{"0", preserves.Int(0)},
		{"-0", preserves.Int(0)},
		{"+127", preserves.Int(127)},
		{"007", preserves.Int(7)},
		{"-9223372036854775808", preserves.Int(math.MinInt64)},
		{"9223372036854775807", preserves.Int(math.MaxInt64)},
		{"9223372036854775808", bigInt("9223372036854775808")},
		{"-87112285931760246646623899502532662132736", bigInt("-87112285931760246646623899502532662132736")},
		{"0000000000000000000000001", preserves.Int(1)},
		{"1.0", dbl(1)},
		{"1e0", dbl(1)},
		{"1E0", dbl(1)},
		{"1e-0", dbl(1)},
		{"1.0e+0", dbl(1)},
		{"007.50", dbl(7.5)},
		{"-0.0", dbl(math.Copysign(0, -1))},
		{"+0.0", dbl(0)},
		{"1e400", dbl(math.Inf(1))},
		{"-1e400", dbl(math.Inf(-1))},
		{"37.7668", preserves.DoubleFromBits(0x4042E226809D4952)},
		{`#xd"7ff0000000000001"`, preserves.DoubleFromBits(0x7ff0000000000001)},
		{`#xd" 7f f8 00 00 00 00 01 11 "`, preserves.DoubleFromBits(0x7ff8000000000111)},
		// Tokens that look numeric but are symbols.
		{"1.", sym("1.")}, {".5", sym(".5")}, {"-.5", sym("-.5")}, {"1e", sym("1e")},
		{"1.0e", sym("1.0e")}, {"1e+", sym("1e+")}, {"1-2-3", sym("1-2-3")}, {"---1", sym("---1")},
		{"-a", sym("-a")}, {"+", sym("+")}, {"-", sym("-")}, {"...", sym("...")}, {"+1.x", sym("+1.x")},
		{"inf", sym("inf")}, {"NaN", sym("NaN")}, {"0x10", sym("0x10")}, {"1_000", sym("1_000")},
		{"1.0f", sym("1.0f")}, {"true", sym("true")}, {"null", sym("null")},
		{"héllo", sym("héllo")}, {"λ→x", sym("λ→x")}, {"a~!$%^&*?_=+-/.z", sym("a~!$%^&*?_=+-/.z")},
		{"||", sym("")},
		{`|hello world|`, sym("hello world")},
		{`|a\|b\\c\/d\n|`, sym("a|b\\c/d\n")},
		{`|\uD834\uDD1E|`, sym("\U0001D11E")},
		{`""`, preserves.String("")},
		{`"a\"b\\c\/d\b\f\n\r\t"`, preserves.String("a\"b\\c/d\b\f\n\r\t")},
		{`"\u00e9\u6C34"`, preserves.String("é水")},
		{`"\uD834\uDD1E"`, preserves.String("\U0001D11E")},
		{"\"raw\nnewline\ttab\"", preserves.String("raw\nnewline\ttab")},
		{`"\u0000"`, preserves.String("\x00")},
		{`#""`, preserves.ByteString("")},
		{`#"abc\x6c\x34\xf0\\/\"\b\f\n\r\txyz"`, preserves.ByteString("abcl4\xf0\\/\"\b\f\n\r\txyz")},
		{`#x""`, preserves.ByteString("")},
		{`#x" 41 4A 4e "`, preserves.ByteString("AJN")},
		{`#[]`, preserves.ByteString("")},
		{`#[Y29 yeW 1i]`, preserves.ByteString("corymb")},
		{`#[SGk=]`, preserves.ByteString("Hi")},
		{`#[SGk]`, preserves.ByteString("Hi")},
		{`#[-_8=]`, preserves.ByteString("\xfb\xff")},
		{`#[+/8=]`, preserves.ByteString("\xfb\xff")},
		{"#:0", preserves.NewEmbedded(preserves.Int(0))},
		{"#: @a #:\"x\"", preserves.NewEmbedded(preserves.NewEmbedded(preserves.String("x")))},
	}
	for _, c := range cases {
		got := mustParse(t, c.src)
		if preserves.HasAnnotations(got) || !preserves.Equal(got, c.want) {
			t.Errorf("ParseText(%q) = %v (%T), want %v", c.src, got, got, c.want)
		}
	}
}

func TestTextCompounds(t *testing.T) {
	i := func(n int64) preserves.Value { return preserves.Int(n) }
	s := func(x string) preserves.Value { return preserves.Symbol(x) }
	cases := []struct {
		src  string
		want preserves.Value
	}{
		{"<discard>", preserves.Rec("discard")},
		{"<7[]>", preserves.NewRecord(i(7), preserves.Sequence{})},
		{"< a\n\t1 2 >", preserves.Rec("a", i(1), i(2))},
		{`<"str" #f>`, preserves.NewRecord(preserves.String("str"), preserves.Bool(false))},
		{"[]", preserves.Sequence{}},
		{"[,, 1,, 2,,]", preserves.Sequence{i(1), i(2)}},
		{"[12]", preserves.Sequence{i(12)}},
		{"[1 2]", preserves.Sequence{i(1), i(2)}},
		{`[abc"x"]`, preserves.Sequence{s("abc"), preserves.String("x")}},
		{"[#f#f]", preserves.Sequence{preserves.Bool(false), preserves.Bool(false)}},
		{"#{}", preserves.NewSet()},
		{"#{3, 1 2}", preserves.NewSet(i(1), i(2), i(3))},
		{"{}", preserves.NewDictionary()},
		{"{a:b}", preserves.NewDictionary(preserves.DictEntry{Key: s("a"), Value: s("b")})},
		{`{ "k" : 1, [1]: {x: #:y} ,}`, preserves.NewDictionary(
			preserves.DictEntry{Key: preserves.String("k"), Value: i(1)},
			preserves.DictEntry{Key: preserves.Sequence{i(1)}, Value: preserves.NewDictionary(
				preserves.DictEntry{Key: s("x"), Value: preserves.NewEmbedded(s("y"))})})},
		{"[a # comment\n b]", preserves.Sequence{s("a"), s("b")}},
		{"#!/usr/bin/env syndicate\n<x>", preserves.Rec("x")},
	}
	for _, c := range cases {
		got := mustParse(t, c.src)
		if !preserves.Equal(got, c.want) {
			t.Errorf("ParseText(%q) = %v, want %v", c.src, got, c.want)
		}
	}
}

func TestTextErrors(t *testing.T) {
	cases := []struct {
		src   string
		class error
		pos   string // line:col of the error
	}{
		{"", preserves.ErrEmpty, "1:1"},
		{"   ", preserves.ErrUnexpectedEOF, "1:4"},
		{"[1 }", preserves.ErrSyntax, "1:4"},
		{"[1 2", preserves.ErrUnexpectedEOF, "1:5"},
		{"<>", preserves.ErrSyntax, "1:1"},
		{"<a, b>", preserves.ErrSyntax, "1:3"},
		{"1 2", preserves.ErrSyntax, "1:3"},
		{"[#ffoo]", preserves.ErrSyntax, "1:4"},
		{"ab(c", preserves.ErrSyntax, "1:3"},
		{"a\u00a0", preserves.ErrSyntax, "1:2"}, // NBSP is neither bare nor whitespace
		{"{a: 1 a: 2}", preserves.ErrSyntax, "1:7"},
		{"{a: 1 @x a: 2}", preserves.ErrSyntax, "1:7"}, // where the annotated key starts
		{"#{b a @c b}", preserves.ErrSyntax, "1:7"},
		{"{a 1}", preserves.ErrSyntax, "1:4"},
		{"{a:}", preserves.ErrSyntax, "1:4"},
		{"{a: b, c: d ", preserves.ErrUnexpectedEOF, "1:13"},
		{"[1 # c\n]", preserves.ErrSyntax, "2:1"},
		{"# c", preserves.ErrUnexpectedEOF, "1:4"},
		{"# c\n", preserves.ErrUnexpectedEOF, "2:1"},
		{"@a", preserves.ErrUnexpectedEOF, "1:3"},
		{"#:", preserves.ErrUnexpectedEOF, "1:3"},
		{"#", preserves.ErrUnexpectedEOF, "1:2"},
		{"#q", preserves.ErrSyntax, "1:2"},
		{`"abc`, preserves.ErrUnexpectedEOF, "1:5"},
		{`"\u6c"`, preserves.ErrSyntax, "1:6"},
		{`"\q"`, preserves.ErrSyntax, "1:2"},
		{`"\|"`, preserves.ErrSyntax, "1:2"},
		{`|\"|`, preserves.ErrSyntax, "1:2"},
		{`"\uD834"`, preserves.ErrSyntax, "1:2"},
		{`"\uDD1E"`, preserves.ErrSyntax, "1:2"},
		{`"\uD834\u0041"`, preserves.ErrSyntax, "1:8"},
		{`"\uD834`, preserves.ErrUnexpectedEOF, "1:8"},
		{"\"\xff\"", preserves.ErrSyntax, "1:1"},
		{"a\xff", preserves.ErrSyntax, "1:2"},
		{`#"\u6c34"`, preserves.ErrSyntax, "1:3"},
		{`#"é"`, preserves.ErrSyntax, "1:3"},
		{`#"\x4"`, preserves.ErrSyntax, "1:6"},
		{`#x"414 243"`, preserves.ErrSyntax, "1:7"},
		{`#x"41, 42"`, preserves.ErrSyntax, "1:6"},
		{`#x"41`, preserves.ErrUnexpectedEOF, "1:6"},
		{`#xd"00"`, preserves.ErrSyntax, "1:1"},
		{`#xd"000000000000000000"`, preserves.ErrSyntax, "1:21"},
		{`#xd"7ff 00000000000000"`, preserves.ErrSyntax, "1:8"},
		{`#xq`, preserves.ErrSyntax, "1:3"},
		{`#[S]`, preserves.ErrSyntax, "1:1"},
		{`#[SG=k]`, preserves.ErrSyntax, "1:6"},
		{`#[SG!]`, preserves.ErrSyntax, "1:5"},
		{`x]`, preserves.ErrSyntax, "1:2"},
		{"a;", preserves.ErrSyntax, "1:2"},
		{"[\n\n  é é é }", preserves.ErrSyntax, "3:9"}, // columns count code points
		{"[\n\"multi\nline\" }", preserves.ErrSyntax, "3:7"},
	}
	for _, c := range cases {
		v, err := preserves.ParseTextOptions([]byte(c.src), preserves.TextOptions{File: "in.pr"})
		if err == nil {
			t.Errorf("ParseText(%q) = %v, want an error", c.src, v)
			continue
		}
		var pe *preserves.Error
		if !errors.As(err, &pe) {
			t.Errorf("ParseText(%q): error %T is not *preserves.Error", c.src, err)
			continue
		}
		if !errors.Is(err, c.class) {
			t.Errorf("ParseText(%q): %v: class %v, want %v", c.src, err, pe.Class, c.class)
		}
		if got := fmt.Sprintf("%d:%d", pe.Pos.Line, pe.Pos.Col); got != c.pos {
			t.Errorf("ParseText(%q): %v: at %s, want %s", c.src, err, got, c.pos)
		}
		if !strings.HasPrefix(err.Error(), "in.pr:"+c.pos+": ") {
			t.Errorf("ParseText(%q): error printed as %q", c.src, err)
		}
	}
}

func TestTextMaxDepth(t *testing.T) {
	deep := strings.Repeat("[", 50) + strings.Repeat("]", 50)
	if _, err := preserves.ParseTextOptions([]byte(deep), preserves.TextOptions{MaxDepth: 50}); err != nil {
		t.Fatalf("depth 50 with MaxDepth 50: %v", err)
	}
	for _, src := range []string{deep, strings.Repeat("@", 51) + "a 1", strings.Repeat("#:", 51) + "0"} {
		_, err := preserves.ParseTextOptions([]byte(src), preserves.TextOptions{MaxDepth: 49})
		if !errors.Is(err, preserves.ErrLimit) {
			t.Errorf("%.10s… with MaxDepth 49: %v, want ErrLimit", src, err)
		}
	}
	// The default limit stops hostile nesting long before the stack is at
	// risk.
	_, err := preserves.ParseText(strings.Repeat("<a ", 1000000))
	if !errors.Is(err, preserves.ErrLimit) {
		t.Errorf("a million open records: %v, want ErrLimit", err)
	}
}

func TestTextAnnotations(t *testing.T) {
	src := "@a @b <r @c x> # one\n#\n#!/bin/x\n[1]"
	opts := preserves.TextOptions{Annotations: true}
	vs, err := preserves.ReadAllText([]byte(src), opts)
	if err != nil || len(vs) != 2 {
		t.Fatalf("ReadAllText: %v %v", vs, err)
	}
	r, ok := vs[0].(*preserves.Annotated)
	if !ok || len(r.Anns) != 2 || r.Comment != nil ||
		!preserves.Equal(r.Anns[0], preserves.Symbol("a")) || !preserves.Equal(r.Anns[1], preserves.Symbol("b")) {
		t.Fatalf("first value %#v", vs[0])
	}
	field := r.Item.(*preserves.Record).Fields[0].(*preserves.Annotated)
	if !preserves.Equal(field.Anns[0], preserves.Symbol("c")) {
		t.Errorf("field annotation %v", field.Anns)
	}
	seq, ok := vs[1].(*preserves.Annotated)
	if !ok || len(seq.Anns) != 3 {
		t.Fatalf("second value %#v", vs[1])
	}
	want := []preserves.Value{preserves.String("one"), preserves.String(""),
		preserves.Rec("interpreter", preserves.String("/bin/x"))}
	wantComment := []bool{true, true, false}
	for i := range want {
		if !preserves.Equal(seq.Anns[i], want[i]) || seq.Comment[i] != wantComment[i] {
			t.Errorf("annotation %d = %v (comment %v), want %v (comment %v)", i, seq.Anns[i], seq.Comment[i], want[i], wantComment[i])
		}
	}
	// Mixed: an @ annotation before a comment keeps the flags aligned.
	v, err := preserves.ParseTextOptions([]byte("@x # y\n1"), opts)
	if err != nil {
		t.Fatal(err)
	}
	a := v.(*preserves.Annotated)
	if len(a.Comment) != 2 || a.Comment[0] || !a.Comment[1] {
		t.Errorf("Comment flags %v, want [false true]", a.Comment)
	}
	// Without Annotations everything comes back plain.
	plain, err := preserves.ReadAllText([]byte(src), preserves.TextOptions{})
	if err != nil || preserves.HasAnnotations(plain[0]) || preserves.HasAnnotations(plain[1]) {
		t.Errorf("plain read kept annotations: %v %v", plain, err)
	}
}

// TestTextPositions: with Positions every value, at every depth, is wrapped
// and knows where it starts.
func TestTextPositions(t *testing.T) {
	src := "<rec\n  é{k: #{s}}\n  @ann [x #:e]> 42"
	vs, err := preserves.ReadAllText([]byte(src), preserves.TextOptions{File: "p.pr", Positions: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(v preserves.Value)
	walk = func(v preserves.Value) {
		a, ok := v.(*preserves.Annotated)
		if !ok {
			t.Fatalf("value %v not wrapped", v)
		}
		if len(a.Anns) != 0 {
			t.Errorf("annotations kept without Annotations: %v", a.Anns)
		}
		if a.Pos.File != "p.pr" || src[a.Pos.Offset:a.Pos.Offset+1] == " " {
			t.Errorf("bad position %+v", a.Pos)
		}
		got = append(got, fmt.Sprintf("%s@%s", preserves.Strip(a.Item), a.Pos))
		switch x := a.Item.(type) {
		case *preserves.Record:
			walk(x.Label)
			for _, f := range x.Fields {
				walk(f)
			}
		case preserves.Sequence:
			for _, f := range x {
				walk(f)
			}
		case *preserves.Set:
			for _, f := range x.Elems() {
				walk(f)
			}
		case *preserves.Dictionary:
			for _, e := range x.Entries() {
				walk(e.Key)
				walk(e.Value)
			}
		case *preserves.Embedded:
			walk(x.Payload.(preserves.Value))
		}
	}
	for _, v := range vs {
		walk(v)
	}
	want := []string{
		`<rec |é| {k: #{s}} [x #:e]>@p.pr:1:1`, `rec@p.pr:1:2`, `|é|@p.pr:2:3`, `{k: #{s}}@p.pr:2:4`,
		`k@p.pr:2:5`, `#{s}@p.pr:2:8`, `s@p.pr:2:10`, `[x #:e]@p.pr:3:8`, `x@p.pr:3:9`,
		`#:e@p.pr:3:11`, `e@p.pr:3:13`, `42@p.pr:3:17`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("positions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// With Annotations too, the annotation values carry positions as well.
	v, err := preserves.ParseTextOptions([]byte("@a\n b"), preserves.TextOptions{Positions: true, Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	a := v.(*preserves.Annotated)
	if a.Pos.String() != "2:2" || preserves.PosOf(a.Anns[0]).String() != "1:2" {
		t.Errorf("positions %v / %v", a.Pos, preserves.PosOf(a.Anns[0]))
	}
}

// TestTextReaderStream reads a long input through small and odd-sized reads
// (forcing refills inside every kind of token, and compaction), and checks
// values and positions against the in-memory reader.
func TestTextReaderStream(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&sb, "# value %d\n<item %d \"strïng\\n\" #x\"0102\" #[AQI=] |sym bol| 1.5 [%d é] {k: v}>\n", i, i, -i)
	}
	src := []byte(sb.String())
	opts := preserves.TextOptions{File: "s.pr", Annotations: true, Positions: true}
	want, err := preserves.ReadAllText(src, opts)
	if err != nil || len(want) != 3000 {
		t.Fatalf("ReadAllText: %d values, %v", len(want), err)
	}
	for _, mk := range []func() io.Reader{
		func() io.Reader { return iotest.OneByteReader(bytes.NewReader(src)) },
		func() io.Reader { return iotest.HalfReader(bytes.NewReader(src)) },
		func() io.Reader { return bytes.NewReader(src) },
	} {
		r := preserves.NewTextReader(mk(), opts)
		for i := 0; ; i++ {
			v, err := r.Next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("stream ended after %d values", i)
				}
				break
			}
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			if d := testutil.DiffAnnotated(v, want[i]); d != "" {
				t.Fatalf("value %d: %s", i, d)
			}
			if preserves.PosOf(v) != preserves.PosOf(want[i]) || preserves.PosOf(v).Line != 2*i+2 {
				t.Fatalf("value %d at %v, want %v", i, preserves.PosOf(v), preserves.PosOf(want[i]))
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("Next after EOF: %v", err)
		}
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestTextReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	r := preserves.NewTextReader(&failingReader{data: []byte("1 [2 3"), err: boom}, preserves.TextOptions{})
	if v, err := r.Next(); err != nil || !preserves.Equal(v, preserves.Int(1)) {
		t.Fatalf("first value %v %v", v, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("read error not passed through: %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("read error not sticky: %v", err)
	}
	// Syntax errors are sticky too, and values before them are returned.
	vs, err := preserves.ReadAllText([]byte("a b ) c"), preserves.TextOptions{})
	if len(vs) != 2 || !errors.Is(err, preserves.ErrSyntax) {
		t.Fatalf("ReadAllText = %v, %v", vs, err)
	}
	// A stream that is empty or only whitespace is simply empty.
	for _, src := range []string{"", " \n\t "} {
		if vs, err := preserves.ReadAllText([]byte(src), preserves.TextOptions{}); err != nil || len(vs) != 0 {
			t.Errorf("ReadAllText(%q) = %v, %v", src, vs, err)
		}
	}
	// … but a trailing comment needs a value after it.
	if _, err := preserves.ReadAllText([]byte("1 # c\n"), preserves.TextOptions{}); !errors.Is(err, preserves.ErrUnexpectedEOF) {
		t.Errorf("trailing comment: %v", err)
	}
}

func TestTextEmbeddedHooks(t *testing.T) {
	type ref struct{ name string }
	opts := preserves.TextOptions{Embedded: func(v preserves.Value) (any, error) {
		s, ok := v.(preserves.Symbol)
		if !ok {
			return nil, fmt.Errorf("not a ref: %v", v)
		}
		return &ref{string(s)}, nil
	}}
	v, err := preserves.ParseTextOptions([]byte("[#:a #:b]"), opts)
	if err != nil {
		t.Fatal(err)
	}
	seq := v.(preserves.Sequence)
	if r, ok := seq[1].(*preserves.Embedded).Payload.(*ref); !ok || r.name != "b" {
		t.Fatalf("payload %#v", seq[1])
	}
	if _, err := preserves.ParseTextOptions([]byte("[#:1]"), opts); !errors.Is(err, preserves.ErrSyntax) ||
		!strings.Contains(err.Error(), "not a ref: 1") {
		t.Errorf("hook error: %v", err)
	}

	wopts := preserves.WriterOptions{Embedded: func(p any) (preserves.Value, error) {
		if r, ok := p.(*ref); ok {
			return preserves.Symbol(r.name), nil
		}
		return nil, errors.New("unknown payload")
	}}
	var buf bytes.Buffer
	if err := preserves.WriteText(&buf, v, wopts); err != nil || buf.String() != "[#:a #:b]" {
		t.Errorf("WriteText = %q, %v", buf.String(), err)
	}
	err = preserves.WriteText(&buf, preserves.NewEmbedded(42), wopts)
	if err == nil || !strings.Contains(err.Error(), "unknown payload") {
		t.Errorf("writer hook error: %v", err)
	}
	// Without a hook an opaque payload is still rendered, as a string.
	if s := preserves.NewEmbedded(&ref{"z"}).String(); s != `#:"&{z}"` {
		t.Errorf("opaque payload rendered as %s", s)
	}
}

func TestTextWriterAtoms(t *testing.T) {
	cases := []struct {
		v    preserves.Value
		want string
	}{
		{preserves.Bool(true), "#t"},
		{preserves.Int(-12), "-12"},
		{bigInt("-87112285931760246646623899502532662132736"), "-87112285931760246646623899502532662132736"},
		{preserves.NewDouble(1), "1.0"},
		{preserves.NewDouble(-1.5), "-1.5"},
		{preserves.NewDouble(100000), "100000.0"},
		{preserves.NewDouble(1e21), "1e+21"},
		{preserves.NewDouble(5e-324), "5e-324"},
		{preserves.NewDouble(math.Copysign(0, -1)), "-0.0"},
		{preserves.NewDouble(math.Inf(1)), `#xd"7ff0000000000000"`},
		{preserves.NewDouble(math.Inf(-1)), `#xd"fff0000000000000"`},
		{preserves.DoubleFromBits(0xfff8000000000111), `#xd"fff8000000000111"`},
		{preserves.String("a\"b\\c\n\x01\x7fé\U0001D11E/"), `"a\"b\\c\n\u0001\u007fé` + "\U0001D11E" + `/"`},
		{preserves.String("\xff"), `"\uFFFD"`},
		{preserves.Symbol("foo"), "foo"},
		{preserves.Symbol("1-2-3"), "1-2-3"},
		{preserves.Symbol("+"), "+"},
		{preserves.Symbol("---1"), "---1"},
		{preserves.Symbol("+1.x"), "+1.x"},
		{preserves.Symbol("..."), "..."},
		{preserves.Symbol("1"), "|1|"},
		{preserves.Symbol("-0"), "|-0|"},
		{preserves.Symbol("1.5"), "|1.5|"},
		{preserves.Symbol("1e5"), "|1e5|"},
		{preserves.Symbol(""), "||"},
		{preserves.Symbol("hello world"), "|hello world|"},
		{preserves.Symbol("a|b\\c\"d"), `|a\|b\\c"d|`},
		{preserves.Symbol("é"), "|é|"},
		{preserves.Symbol("a:b"), "|a:b|"},
		{preserves.ByteString("hello \"x\"\n"), `#"hello \"x\"\n"`},
		{preserves.ByteString("\x00\x01\x02"), `#x"000102"`},
		{preserves.ByteString(strings.Repeat("\x00\xff", 20)), "#[" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x00\xff", 20))) + "]"},
		{preserves.Rec("r", preserves.Int(1), preserves.Sequence{}), "<r 1 []>"},
		{preserves.NewRecord(preserves.Int(7), preserves.Sequence{}), "<7 []>"},
		{preserves.NewSet(preserves.Int(2), preserves.Symbol("a"), preserves.Int(1)), "#{1 2 a}"},
		{preserves.NewDictionary(preserves.DictEntry{Key: preserves.Symbol("b"), Value: preserves.Int(2)},
			preserves.DictEntry{Key: preserves.Symbol("a"), Value: preserves.Int(1)}), "{a: 1, b: 2}"},
		{preserves.Annotate(preserves.Int(9), preserves.String("abc"), preserves.Rec("x")), `@"abc" @<x> 9`},
		{preserves.NewEmbedded(preserves.NewEmbedded(preserves.Int(0))), "#:#:0"},
	}
	for _, c := range cases {
		if got := preserves.FormatText(c.v); got != c.want {
			t.Errorf("FormatText(%#v) = %s, want %s", c.v, got, c.want)
		}
		if got := fmt.Sprint(c.v); got != c.want {
			t.Errorf("String() = %s, want %s", got, c.want)
		}
		back, err := preserves.ParseTextOptions([]byte(c.want), preserves.TextOptions{Annotations: true})
		if c.v.(fmt.Stringer).String() == `"\uFFFD"` {
			continue // invalid UTF-8 is not preserved
		}
		if err != nil || testutil.DiffAnnotated(back, c.v) != "" {
			t.Errorf("%s reads back as %v, %v", c.want, back, err)
		}
	}
}

func TestTextWriterIndent(t *testing.T) {
	src := `# Configuration
#!/usr/bin/env syndicate-server
<require-service <daemon app>>
`
	src2 := `<daemon app {
  # the command
  argv: ["/usr/bin/app" "--verbose" "--config" "/etc/app/config.pr" "--log-level" "debug"]
  protocol: none
}>`
	opts := preserves.TextOptions{Annotations: true}
	v, err := preserves.ParseTextOptions([]byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := preserves.FormatTextIndent(v, "  "), strings.TrimSpace(src); got != want {
		t.Errorf("indented:\n%s\nwant:\n%s", got, want)
	}
	if got, want := preserves.FormatText(v), `@"Configuration" @<interpreter "/usr/bin/env syndicate-server"> <require-service <daemon app>>`; got != want {
		t.Errorf("compact: %s", got)
	}
	v2, err := preserves.ParseTextOptions([]byte(src2), opts)
	if err != nil {
		t.Fatal(err)
	}
	want2 := `<daemon app {
  # the command
  argv: [
    "/usr/bin/app"
    "--verbose"
    "--config"
    "/etc/app/config.pr"
    "--log-level"
    "debug"
  ]
  protocol: none
}>`
	if got := preserves.FormatTextIndent(v2, "  "); got != want2 {
		t.Errorf("indented:\n%s\nwant:\n%s", got, want2)
	}
	var buf bytes.Buffer
	if err := preserves.WriteText(&buf, v2, preserves.WriterOptions{Indent: "\t"}); err != nil {
		t.Fatal(err)
	}
	// Without Annotations the comment is dropped; the layout is the same.
	if want := strings.ReplaceAll(strings.ReplaceAll(want2, "  ", "\t"), "\t# the command\n", ""); buf.String() != want {
		t.Errorf("WriteText without annotations:\n%s\nwant:\n%s", buf.String(), want)
	}
	if strings.Contains(buf.String(), "#") {
		t.Errorf("annotations written although not asked for:\n%s", buf.String())
	}
}

func TestTextReaderOffset(t *testing.T) {
	src := []byte(`<a [1 2]> # c
"x" `)
	r := preserves.NewTextReader(bytes.NewReader(src), preserves.TextOptions{})
	for _, want := range []int{9, 17} {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if got := r.Offset(); got != want {
			t.Fatalf("Offset() = %d, want %d (%q)", got, want, src[:got])
		}
	}
}
