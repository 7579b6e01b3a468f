package preserves_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// TestReadAllTextMany: ReadAllText gathers values in chunks; the result must
// be every value in order, whatever the count relative to the chunk sizes.
func TestReadAllTextMany(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 100, 5000, 9000} {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "<v %d> ", i)
		}
		for _, opts := range []preserves.TextOptions{{}, {Positions: true}} {
			vs, err := preserves.ReadAllText([]byte(b.String()), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != n {
				t.Fatalf("n=%d: %d values", n, len(vs))
			}
			for i, v := range vs {
				want := preserves.Rec("v", preserves.Int(int64(i)))
				if !preserves.Equal(v, want) {
					t.Fatalf("n=%d: value %d is %v", n, i, v)
				}
			}
		}
	}
	// Values read before an error are returned with it.
	vs, err := preserves.ReadAllText([]byte(strings.Repeat("1 ", 40)+"<"), preserves.TextOptions{})
	if err == nil || len(vs) != 40 {
		t.Fatalf("%d values, error %v", len(vs), err)
	}
}

// TestTextPositionsSlabs: in Positions mode wrappers, records and item
// slices are carved from shared chunks. Appending to a returned slice must
// not overwrite a neighbour, and the values must equal a plain read.
func TestTextPositionsSlabs(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "<r %d [a %d] {k: %d}> [x y] <e> ", i, i, i)
	}
	src := []byte(b.String())
	plain, err := preserves.ReadAllText(src, preserves.TextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pos, err := preserves.ReadAllText(src, preserves.TextOptions{File: "s", Positions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pos) != len(plain) {
		t.Fatalf("%d vs %d values", len(pos), len(plain))
	}
	for i := range pos {
		if !preserves.Equal(pos[i], plain[i]) {
			t.Fatalf("value %d: %v vs %v", i, pos[i], plain[i])
		}
		if p := preserves.PosOf(pos[i]); !p.IsValid() || p.File != "s" {
			t.Fatalf("value %d has position %v", i, p)
		}
	}
	before := preserves.FormatText(preserves.Strip(preserves.Sequence(pos)))
	// Grow every record's fields and every sequence by appending.
	for _, v := range pos {
		switch x := preserves.Unwrap(v).(type) {
		case *preserves.Record:
			_ = append(x.Fields, preserves.Symbol("clobber"))
			if len(x.Fields) > 1 {
				s := preserves.Unwrap(x.Fields[1]).(preserves.Sequence)
				_ = append(s, preserves.Symbol("clobber"))
			}
		case preserves.Sequence:
			_ = append(x, preserves.Symbol("clobber"))
		}
	}
	if after := preserves.FormatText(preserves.Strip(preserves.Sequence(pos))); after != before {
		t.Fatal("appending to a returned slice changed another value")
	}
}

// TestTextPositionsStreamSlabs reads through NewTextReader (small chunks of
// input, so the slab size guess starts from almost nothing).
func TestTextPositionsStreamSlabs(t *testing.T) {
	src := strings.Repeat(`<a {b: [1 2 3]} "s">`+"\n", 2000)
	r := preserves.NewTextReader(&oneByteReader{r: bytes.NewReader([]byte(src))}, preserves.TextOptions{Positions: true})
	n := 0
	for {
		v, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p := preserves.PosOf(v); p.Line != n+1 || p.Col != 1 {
			t.Fatalf("value %d at %v", n, p)
		}
		rec := preserves.Unwrap(v).(*preserves.Record)
		if p := preserves.PosOf(rec.Fields[1]); p.Line != n+1 || p.Col != 17 {
			t.Fatalf("value %d: string at %v", n, p)
		}
		n++
	}
	if n != 2000 {
		t.Fatalf("%d values", n)
	}
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return o.r.Read(p)
}

// TestTextSymbolCache: symbols go through a small direct-mapped cache; names
// that collide or overflow it must still read back as themselves.
func TestTextSymbolCache(t *testing.T) {
	var b strings.Builder
	var want []preserves.Value
	for i := range 6000 {
		name := fmt.Sprintf("s%d", i%2500)
		if i%3 == 0 {
			name = "label"
		}
		if i%7 == 0 {
			name = strings.Repeat("long", 9) // not cached (over 32 bytes)
		}
		fmt.Fprintf(&b, "%s ", name)
		want = append(want, preserves.Symbol(name))
	}
	b.WriteString("|| |a b|")
	want = append(want, preserves.Symbol(""), preserves.Symbol("a b"))
	for _, stream := range []bool{false, true} {
		var got []preserves.Value
		if stream {
			r := preserves.NewTextReader(strings.NewReader(b.String()), preserves.TextOptions{})
			for {
				v, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
		} else {
			var err error
			if got, err = preserves.ReadAllText([]byte(b.String()), preserves.TextOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("stream=%v: %d values", stream, len(got))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("stream=%v: value %d is %v, want %v", stream, i, got[i], want[i])
			}
		}
	}
}

// TestTextPositionsAgainstOffsets: every position's line and column agree
// with its offset, counted afresh, over input mixing short and long gaps,
// CRLF line ends and non-ASCII text (the reader advances positions
// incrementally, with a fast path for short ASCII gaps).
func TestTextPositionsAgainstOffsets(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "<a%d \"é%d\">\r\n", i, i)
		case 1:
			fmt.Fprintf(&b, "[ünï %d]%s", i, strings.Repeat(" ", 70+i%5))
		case 2:
			fmt.Fprintf(&b, "{k: %d, \"ß\": [x\ty]}\n\n", i)
		case 3:
			fmt.Fprintf(&b, "# %s\n", strings.Repeat("x", i%90))
		default:
			fmt.Fprintf(&b, "@\"note\" # comment ✓\n %d ", i)
		}
	}
	src := b.String()
	vs, err := preserves.ReadAllText([]byte(src), preserves.TextOptions{Positions: true, Annotations: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var check func(v preserves.Value)
	check = func(v preserves.Value) {
		p := preserves.PosOf(v)
		before := src[:p.Offset]
		line := 1 + strings.Count(before, "\n")
		col := 1 + len([]rune(before[strings.LastIndexByte(before, '\n')+1:]))
		if p.Line != line || p.Col != col {
			t.Fatalf("value %v at offset %d: %d:%d, want %d:%d", v, p.Offset, p.Line, p.Col, line, col)
		}
		n++
		switch x := preserves.Unwrap(v).(type) {
		case *preserves.Record:
			check(x.Label)
			for _, f := range x.Fields {
				check(f)
			}
		case preserves.Sequence:
			for _, f := range x {
				check(f)
			}
		case *preserves.Dictionary:
			for _, e := range x.Entries() {
				check(e.Key)
				check(e.Value)
			}
		}
	}
	for _, v := range vs {
		check(v)
	}
	if n < 1000 {
		t.Fatalf("only %d positions checked", n)
	}
}
