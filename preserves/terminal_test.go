package preserves

import "testing"

func TestTerminalText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\twith tab":     "plain text\twith tab",
		"x\x1b]0;PWNED\x07\x1b[2J": `"x\u001b]0;PWNED\u0007\u001b[2J"`,
		"csi \u009b2J nel \u0085":  `"csi \u009b2J nel \u0085"`,
		"abc\u202edcba":            `"abc\u202edcba"`,
		"bad \xff byte":            `"bad \uFFFD byte"`,
		"ünïcödé ok":               "ünïcödé ok",
	} {
		if got := TerminalText(in); got != want {
			t.Errorf("TerminalText(%q) = %q, want %q", in, got, want)
		}
	}
	// Escapes read back as the same string.
	s := "a\u009b\u202e\u2066b"
	v, err := ParseText(FormatText(String(s)))
	if err != nil || v != String(s) {
		t.Errorf("round trip of %q: %v %v", s, v, err)
	}
}

// TerminalSafe's eight-bytes-at-a-time scan agrees with a rune-by-rune
// one for every byte at every position of a word and across words.
func TestTerminalSafeWordScan(t *testing.T) {
	slow := func(s string) bool {
		for _, r := range []byte(s) {
			if (r < 0x20 && r != '\t') || r >= 0x7f {
				return false
			}
		}
		return true
	}
	for b := 0; b < 256; b++ {
		for pos := 0; pos < 17; pos++ {
			line := []byte("plain ascii text!")
			line[pos] = byte(b)
			s := string(line)
			if b < 0x80 && TerminalSafe(s) != slow(s) {
				t.Fatalf("byte %#x at %d: TerminalSafe %v", b, pos, TerminalSafe(s))
			}
			if b >= 0x80 && TerminalSafe(s) {
				t.Fatalf("byte %#x at %d (not UTF-8) taken as safe", b, pos)
			}
		}
	}
}
