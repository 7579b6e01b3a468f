package format

import "github.com/syndicate-go/syndicate/preserves"

// group returns the end (exclusive) of the instruction starting at toks[i],
// and for each of its tokens whether it is a block (a sequence in
// instruction position, whose items are instructions themselves). The rules
// are those of the script parser (services spec §4.3); an incomplete
// instruction at the end of toks ends there, and a token that starts no
// instruction is a group of its own, so every token is written exactly once.
func group(toks []preserves.Value, i int) (int, []bool) {
	var blocks []bool
	end := instr(toks, i, &blocks)
	return end, blocks
}

// instr appends the block flags of the instruction at toks[i] to blocks and
// returns its end.
func instr(toks []preserves.Value, i int, blocks *[]bool) int {
	if i >= len(toks) {
		return i
	}
	mark := func(block bool) { *blocks = append(*blocks, block) }
	operand := func(j int) int { // a non-instruction operand, if present
		if j < len(toks) {
			mark(false)
			return j + 1
		}
		return j
	}
	switch x := preserves.Unwrap(toks[i]).(type) {
	case preserves.Sequence:
		mark(true)
		return i + 1
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "?" || s == "??" || s == "=~":
			mark(false)
			return instr(toks, operand(i+1), blocks)
		case s == "?-":
			mark(false)
			return instr(toks, i+1, blocks)
		case s == "!" || s == "+=" || s == "dialect":
			mark(false)
			return operand(i + 1)
		case s == "let":
			mark(false)
			j := operand(operand(i + 1)) // PATTERN =
			return conv(toks, j, blocks)
		case len(s) > 1 && s[0] == '$':
			mark(false)
			return instr(toks, i+1, blocks)
		}
	}
	mark(false)
	return i + 1
}

// conv is the right-hand side of let: `stringify E`, `join SEP PIECES`, or
// one token.
func conv(toks []preserves.Value, i int, blocks *[]bool) int {
	if i >= len(toks) {
		return i
	}
	*blocks = append(*blocks, false)
	if s, ok := preserves.Unwrap(toks[i]).(preserves.Symbol); ok {
		switch s {
		case "stringify":
			return conv(toks, i+1, blocks)
		case "join":
			return conv(toks, conv(toks, i+1, blocks), blocks)
		}
	}
	return i + 1
}

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
		j := i + 1
		for j < len(src) && src[j] != '\n' && src[j] != '\r' {
			j++
		}
		return j
	case '{':
		*depth++
		return i + 2
	case '"':
		return skipQuoted(src, i+2, '"')
	case '[':
		for j := i + 2; j < len(src); j++ {
			if src[j] == ']' {
				return j + 1
			}
		}
		return len(src)
	case ':':
		return i + 2
	case 'x':
		for j := i + 2; j < len(src); j++ {
			if src[j] == '"' {
				return skipQuoted(src, j+1, '"')
			}
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
