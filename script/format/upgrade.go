package format

import (
	"bytes"

	"github.com/syndicate-go/syndicate/script"
)

// Upgrade rewrites the comments of the pre-2023 Preserves syntax, which ran
// from a `;` to the end of the line, into today's `#` comments, and changes
// nothing else: not the layout, not the other comments, not a byte of the
// values (`syndicate fmt --upgrade`). It returns the new text and the number
// of comments rewritten.
//
// The scan is lexical: a `;` inside a string, a quoted symbol, a byte
// string or a `#` comment is left alone. A run of semicolons (`;;`) becomes
// one `#`, followed by a space unless the comment is empty, and a space is
// put before the `#` when the `;` ended a token (`x;c` was `x` then a
// comment; `x#` would not read). If the result still does not read as
// Preserves text, the error (with its position) is returned with it, so
// that nothing half-upgraded is written back: this happens when a `;`
// comment stood just before a closing bracket, where a `#` comment, which
// annotates the value after it, cannot go.
func Upgrade(file string, src []byte) ([]byte, int, error) {
	var out bytes.Buffer
	n := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '|':
			j := skipQuoted(src, i+1, c)
			out.Write(src[i:j])
			i = j
		case c == '#' && i+1 < len(src) && src[i+1] == '"':
			j := skipQuoted(src, i+2, '"')
			out.Write(src[i:j])
			i = j
		case c == '#' && i+1 < len(src) && src[i+1] == 'x':
			j := i + 2
			for j < len(src) && src[j] != '"' && !isSpace(src[j]) {
				j++
			}
			if j < len(src) && src[j] == '"' {
				j = skipQuoted(src, j+1, '"')
			}
			out.Write(src[i:j])
			i = j
		case c == '#' && (i+1 >= len(src) || isSpace(src[i+1]) || src[i+1] == '!'):
			j := lineEnd(src, i)
			out.Write(src[i:j])
			i = j
		case c == ';':
			n++
			if b := out.Bytes(); len(b) > 0 && !isSpace(b[len(b)-1]) {
				out.WriteByte(' ')
			}
			out.WriteByte('#')
			j := i
			for j < len(src) && src[j] == ';' {
				j++
			}
			end := lineEnd(src, j)
			if j < end && src[j] != ' ' && src[j] != '\t' {
				out.WriteByte(' ')
			}
			out.Write(src[j:end])
			i = end
		default:
			out.WriteByte(c)
			i++
		}
	}
	res := out.Bytes()
	if n > 0 {
		if _, err := script.ReadValues(file, res); err != nil {
			if o := err.Pos.Offset; err.Pos.IsValid() && o < len(res) && bytes.IndexByte([]byte(">]}"), res[o]) >= 0 {
				// A `;` comment was whitespace; a `#` comment annotates
				// the value after it, and a closing bracket is none.
				err.Msg += ": a '#' comment annotates the value after it, so a comment just before a closing bracket must be moved by hand"
			}
			return res, n, err
		}
	}
	return res, n, nil
}

// lineEnd is the offset of the CR or LF ending the line that holds src[i]
// (len(src) on the last line).
func lineEnd(src []byte, i int) int {
	if j := bytes.IndexAny(src[i:], "\r\n"); j >= 0 {
		return i + j
	}
	return len(src)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// skipQuoted returns the offset after the quoted string whose body starts
// at src[i], q its closing quote.
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
