package preserves_test

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/preserves"
)

// Long decimal integers are parsed by splitting (sub-quadratic); the
// result must match math/big's own conversion at every length, around the
// split threshold and across several levels of splitting.
func TestTextHugeIntegersParseExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{19, 999, 1000, 1001, 2001, 4097, 12345} {
		var sb strings.Builder
		sb.WriteByte("123456789"[rng.IntN(9)])
		for range n - 1 {
			sb.WriteByte(byte('0' + rng.IntN(10)))
		}
		for _, sign := range []string{"", "-", "+"} {
			src := sign + sb.String()
			want, _ := new(big.Int).SetString(src, 10)
			v, err := preserves.ParseText(src)
			if err != nil {
				t.Fatalf("%d digits: %v", n, err)
			}
			if !preserves.Equal(v, preserves.NewBigInt(want)) {
				t.Fatalf("%d digits, sign %q: wrong value", n, sign)
			}
		}
	}
}

// BenchmarkTextHugeInteger parses one integer of 4 MB of digits (issue 12:
// math/big alone took 28 s).
//
//	go test -run '^$' -bench TextHugeInteger -benchtime 1x ./preserves/
func BenchmarkTextHugeInteger(b *testing.B) {
	src := "1" + strings.Repeat("1234567890", 400_000)
	for b.Loop() {
		if _, err := preserves.ParseText(src); err != nil {
			b.Fatal(err)
		}
	}
}

// FormatTextLimit does work bounded by its limit whatever the value holds:
// huge integers are not converted to decimal, long strings and sequences
// are cut, and the result is valid UTF-8 within the limit plus "…".
func TestFormatTextLimit(t *testing.T) {
	huge := new(big.Int).Lsh(big.NewInt(1), 64<<20) // 64 Mbit: minutes to print in full
	items := make(preserves.Sequence, 1<<20)
	for i := range items {
		items[i] = preserves.Bool(false)
	}
	cases := []struct {
		name string
		v    preserves.Value
		want string // a substring of the result
	}{
		{"huge integer", preserves.NewBigInt(huge), "<integer of 67108865 bits>"},
		{"huge integer in a record", preserves.NewRecord(preserves.Symbol("A"), preserves.NewBigInt(huge)), "<A <integer of"},
		{"long string", preserves.String(strings.Repeat("é", 1<<20)), `"éé`},
		{"long symbol", preserves.Symbol(strings.Repeat("s", 1<<20)), "sss"},
		{"long bytes", preserves.ByteString(strings.Repeat("x", 1<<20)), `#"xx`},
		{"many items", items, "[#f #f"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := preserves.FormatTextLimit(c.v, 200)
			if len(s) > 200+len("…") || !utf8.ValidString(s) || !strings.Contains(s, c.want) {
				t.Fatalf("got %d bytes: %q", len(s), s)
			}
		})
	}
	small := preserves.NewRecord(preserves.Symbol("ok"), preserves.String("hi"), preserves.Int(-3))
	if got := preserves.FormatTextLimit(small, 200); got != preserves.FormatText(small) {
		t.Fatalf("short value changed: %q", got)
	}
}

// Show and ShowString keep preserves.ShowLimit bytes and mark a cut with
// "…"; text that fits is unchanged.
func TestShow(t *testing.T) {
	long := strings.Repeat("é", preserves.ShowLimit)
	if s := preserves.Show(preserves.String(long)); len(s) > preserves.ShowLimit+len("…") || !strings.HasSuffix(s, "…") || !utf8.ValidString(s) {
		t.Errorf("Show: %d bytes: %q", len(s), s)
	}
	if s := preserves.ShowString(long); len(s) > preserves.ShowLimit+len("…") || !strings.HasSuffix(s, "…") || !utf8.ValidString(s) {
		t.Errorf("ShowString: %d bytes: %q", len(s), s)
	}
	v := preserves.NewRecord(preserves.Symbol("daemon"), preserves.Symbol("x"))
	if got := preserves.Show(v); got != "<daemon x>" {
		t.Errorf("Show changed a short value: %q", got)
	}
	if got := preserves.ShowString("short"); got != "short" {
		t.Errorf("ShowString changed short text: %q", got)
	}
}
