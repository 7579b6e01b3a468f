package format

import "bytes"

// A lexical scan of Preserves text, for one purpose: finding where a value
// ends, so that blank lines between instructions are kept. The reader
// records where each value starts, not where it ends. The grammar of
// instructions is not here: it is the parser's (script.Group).

// skipValue returns the offset just past the Preserves value whose item
// starts at src[i] (after its annotations). It is a lexical scan, used only
// to find the gap between two values for blank-line detection, so it errs
// on the short side: an unrecognised construct ends at the next delimiter.
func skipValue(src []byte, i int) int {
	depth := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '<' || c == '[' || c == '{':
			depth++
			i++
			continue
		case c == '>' || c == ']' || c == '}':
			depth--
			i++
		case c == '"' || c == '|':
			i = skipQuoted(src, i+1, c)
		case c == '#':
			i = skipHash(src, i, &depth)
			if depth > 0 || (i >= 2 && src[i-2] == '#' && src[i-1] == ':') {
				continue // inside a compound, a set just opened, or `#:` before its payload
			}
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ':' || c == '@':
			i++
			continue
		default:
			i = skipBare(src, i)
		}
		if depth <= 0 {
			return i
		}
	}
	return i
}

// skipHash handles the `#` forms: comments and `#!` lines to the end of the
// line, `#{` (a set opens), `#"…"`, `#x"…"`, `#xd"…"`, `#[…]`, `#:` and
// `#t`/`#f`. It returns the offset after the form; for `#{` it raises depth
// and returns the offset after the brace.
func skipHash(src []byte, i int, depth *int) int {
	if i+1 >= len(src) {
		return i + 1
	}
	switch c := src[i+1]; c {
	case ' ', '\t', '\r', '\n', '!':
		return lineEnd(src, i+1)
	case '{':
		*depth++
		return i + 2
	case '"':
		return skipQuoted(src, i+2, '"')
	case '[':
		if j := bytes.IndexByte(src[i+2:], ']'); j >= 0 {
			return i + 2 + j + 1
		}
		return len(src)
	case ':':
		return i + 2
	case 'x':
		if j := bytes.IndexByte(src[i+2:], '"'); j >= 0 {
			return skipQuoted(src, i+2+j+1, '"')
		}
		return len(src)
	}
	return skipBare(src, i+1)
}

func skipQuoted(src []byte, i int, q byte) int {
	for i < len(src) {
		switch src[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1
		}
		i++
	}
	return i
}

func skipBare(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\r', '\n', '<', '>', '[', ']', '{', '}', '"', '|', ',', ';', '@', ':':
			return i
		}
		i++
	}
	return i
}
