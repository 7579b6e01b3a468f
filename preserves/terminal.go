package preserves

import "unicode/utf8"

// Terminal-safe rendering of outside text (issue 22). Whatever a daemon, a
// script or a peer says may end up on an operator's terminal: `syndicate
// status NAME`, `logs`, `observe`, `dump`, error messages, the server's
// console. One rule, here, for all of them: text is printed as it is
// only when it is valid UTF-8 without control characters (C0 but tab,
// DEL, C1 U+0080–U+009F) and without the invisible characters that
// reorder or hide text (bidirectional embeddings, overrides and isolates,
// the marks U+200E, U+200F, U+061C); anything else is printed as a quoted
// Preserves string, where each such character is a visible escape
// (`\u001b`, `\u009b`, `\u202e`) and invalid UTF-8 is U+FFFD. The text
// writer (FormatText) escapes the same characters inside every quoted
// string and symbol, so Preserves text is terminal-safe too.
//
// Invalid UTF-8 is replaced, not carried: a daemon's output line that is
// not UTF-8 travels as a byte string in `$log` (and is shown as #"…"),
// and everywhere a String is made from outside bytes the bad bytes become
// U+FFFD, so no connection ever fails to encode one.

// TerminalSafe reports whether s can be printed on a terminal as it is.
func TerminalSafe(s string) bool {
	i := 0
	// Eight bytes at a time while they are plain printable ASCII (no byte
	// below 0x20, none from 0x7f up): log lines mostly are, and this is on
	// the path of every line logged.
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		if ((w-0x20*ones)&^w|(w+ones)|w)&highs != 0 {
			break
		}
	}
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || terminalEscaped(r) {
			return false
		}
		i += n
	}
	return true
}

// TerminalText is s as it is when TerminalSafe, else quoted with escapes.
func TerminalText(s string) string {
	if TerminalSafe(s) {
		return s
	}
	return FormatText(String(s))
}

// terminalEscaped reports whether the text writer writes r as an escape:
// C1 controls and the invisible characters that reorder text.
func terminalEscaped(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
