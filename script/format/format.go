// Package format lays out `.pr` script files canonically, keeping their
// comments: a gofmt for configuration scripts (`syndicate fmt`).
//
// # Layout
//
// A script is a stream of Preserves values that the script parser groups into
// instructions (`? PATTERN BODY`, `let ?x = EXPR`, `$target INSTR`, ...).
// Formatting must not change that grouping, so the formatter takes it from
// the parser itself (script.Group: one grammar, services spec §4.3) and
// writes:
//
//   - one instruction per line, its tokens separated by single spaces;
//   - a `[...]` block in instruction position (a body, or a block on its own)
//     as `[`, its instructions one per line indented by two spaces, `]`;
//     an empty block as `[]`;
//   - every other token (records, dictionaries, patterns, values) with the
//     Preserves text writer's indented layout (lines of about 80 columns,
//     records ending in a compound "hanging" as in `<daemon x {` … `}>`);
//   - `#` comments on lines of their own directly before the token they
//     annotate (in Preserves a comment belongs to the value after it),
//     except a comment that follows an instruction on its line, which
//     stays there (`<a 1>  # about a`); a blank line after a comment stays;
//     the comments at the very end of a file stay at the end;
//   - one blank line between two instructions wherever the source had at
//     least one, and none elsewhere; a final newline.
//
// Everything else is normalised by the writer: dictionary entries and set
// elements in Preserves order, numbers, strings and symbols in their
// canonical spelling. None of this changes the values, so a formatted script
// means exactly what the original meant; and since the output depends only
// on the values, their comments and where blank lines were, formatting
// formatted text changes nothing (Source is idempotent).
package format

import (
	"bytes"
	"errors"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

// indentUnit is one level of indentation.
const indentUnit = "  "

// Source returns the canonical layout of the script src (named file in error
// positions). A Preserves syntax error is returned as a *script.Error with
// its position; script errors (bad instructions) do not stop formatting:
// tokens that do not form an instruction are laid out one per line.
func Source(file string, src []byte) ([]byte, error) {
	opts := preserves.TextOptions{File: file, Annotations: true, Positions: true}
	vals, err := preserves.ReadAllText(src, opts)
	trailing := false
	if err != nil && errors.Is(err, preserves.ErrUnexpectedEOF) {
		// A file may end in comments, which need a value to attach to:
		// anchor them to an empty block, as the script reader does, and
		// write them back without it.
		anchored := append([]byte(nil), src...)
		if !bytes.HasSuffix(anchored, []byte("\n")) {
			anchored = append(anchored, '\n') // no blank line seen where there is none
		}
		anchored = append(anchored, "[]"...)
		more, err2 := preserves.ReadAllText(anchored, opts)
		if err2 == nil && len(more) == len(vals)+1 {
			vals, err, trailing, src = more, nil, true, anchored
		}
	}
	if err != nil {
		return nil, script.SyntaxError(file, src, err)
	}
	f := &formatter{src: src}
	body := vals
	var anchor preserves.Value
	if trailing && onlyLineAnnotations(vals[len(vals)-1]) {
		body, anchor = vals[:len(vals)-1], vals[len(vals)-1]
	}
	f.block(body, 0, 0)
	if anchor != nil {
		if len(body) > 0 {
			f.nl(0)
			if f.blankBefore(body[len(body)-1], anchor) {
				f.nl(0)
			}
		}
		a := anchor.(*preserves.Annotated)
		for i := range a.Anns {
			line, _ := preserves.LineAnnotation(a, i)
			if i > 0 {
				f.nl(0)
			}
			f.buf = append(f.buf, line...)
		}
	}
	if len(f.buf) > 0 {
		f.buf = append(f.buf, '\n')
	}
	return f.buf, nil
}

type formatter struct {
	src []byte
	buf []byte
}

// nl starts a new line indented to depth, trimming the current line's
// trailing spaces.
func (f *formatter) nl(depth int) {
	f.buf = append(bytes.TrimRight(f.buf, " "), '\n')
	f.buf = append(f.buf, strings.Repeat(indentUnit, depth)...)
}

// atLineStart reports whether only indentation has been written on the
// current line.
func (f *formatter) atLineStart() bool {
	line := f.buf[bytes.LastIndexByte(f.buf, '\n')+1:]
	return len(bytes.TrimLeft(line, " ")) == 0
}

// block writes the instructions of toks one per line at depth (the caller
// has positioned the first line); from is the source offset where the
// block's content starts.
func (f *formatter) block(toks []preserves.Value, depth int, from int) {
	for i := 0; i < len(toks); {
		end, blocks := script.Group(toks, i)
		first := toks[i]
		if i > 0 {
			from = -1
			if ps := preserves.PosOf(toks[i-1]); ps.IsValid() && ps.Offset < len(f.src) {
				from = valueEnd(f.src, ps.Offset)
			}
			// A comment on the same line as the end of the previous
			// instruction stays there (in Preserves it annotates the
			// next value, which is where the reader puts it).
			if rest, ok := f.trailingComment(first, from); ok {
				line, _ := preserves.LineAnnotation(first.(*preserves.Annotated), 0)
				f.buf = append(f.buf, "  "+line...)
				first = rest
				from += bytes.IndexByte(f.src[from:], '\n') + 1
			}
			f.nl(depth)
			if f.blankBefore(toks[i-1], toks[i]) {
				f.nl(depth)
			}
		}
		for j := i; j < end; j++ {
			if j > i && !f.atLineStart() {
				f.buf = append(f.buf, ' ')
			}
			tok := toks[j]
			if j == i {
				tok = first
				if blanks, after := f.commentBlanks(tok, from); blanks != nil {
					a := tok.(*preserves.Annotated)
					f.annotations(a, depth, blanks)
					if after {
						f.nl(depth) // a blank line after a header comment stays
					}
					tok = &preserves.Annotated{Pos: a.Pos, Item: a.Item}
				}
			}
			f.token(tok, depth, blocks[j-i])
		}
		i = end
	}
}

// trailingComment reports whether v's first annotation is a comment that
// starts on the line where the source offset from (the end of the
// previous value) is, and returns v without it.
func (f *formatter) trailingComment(v preserves.Value, from int) (preserves.Value, bool) {
	a, ok := v.(*preserves.Annotated)
	if !ok || len(a.Anns) == 0 || from < 0 || !a.Pos.IsValid() || a.Pos.Offset > len(f.src) || from > a.Pos.Offset {
		return v, false
	}
	if _, ok := preserves.LineAnnotation(a, 0); !ok || len(a.Comment) == 0 || !a.Comment[0] {
		return v, false
	}
	gap := f.src[from:a.Pos.Offset]
	nl := bytes.IndexByte(gap, '\n')
	if nl < 0 {
		return v, false
	}
	if t := bytes.TrimSpace(gap[:nl]); len(t) == 0 || t[0] != '#' {
		return v, false
	}
	rest := &preserves.Annotated{Pos: a.Pos, Item: a.Item, Anns: a.Anns[1:], Comment: a.Comment[1:]}
	if len(rest.Anns) == 0 {
		return a.Item, true
	}
	return rest, true
}

// token writes one token: a block, or a value (with its annotations).
func (f *formatter) token(v preserves.Value, depth int, isBlock bool) {
	seq, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok || !isBlock {
		f.data(v, depth)
		return
	}
	if a, ok := v.(*preserves.Annotated); ok {
		f.annotations(a, depth, nil)
	}
	if len(seq) == 0 {
		f.buf = append(f.buf, "[]"...)
		return
	}
	f.buf = append(f.buf, '[')
	f.nl(depth + 1)
	f.block(seq, depth+1, preserves.PosOf(v).Offset+1)
	f.nl(depth)
	f.buf = append(f.buf, ']')
}

// annotations writes a's annotations: comments on lines of their own
// (preceded by a blank line where blanks says so), others as `@ann `.
func (f *formatter) annotations(a *preserves.Annotated, depth int, blanks []bool) {
	for i, ann := range a.Anns {
		if line, ok := preserves.LineAnnotation(a, i); ok {
			if !f.atLineStart() {
				f.nl(depth)
			}
			if i < len(blanks) && blanks[i] {
				f.nl(depth)
			}
			f.buf = append(f.buf, line...)
			f.nl(depth)
			continue
		}
		f.buf = append(f.buf, '@')
		f.data(ann, depth)
		f.buf = append(f.buf, ' ')
	}
}

// commentBlanks says, for each comment of v (all of whose annotations must
// be comments), whether a blank line precedes it in the source between
// offset from and v's item, and whether one follows the last comment (a
// header comment set apart from what follows). It returns nil when the
// source does not line up (the first comment's blank line is the
// instruction's, see blankBefore).
func (f *formatter) commentBlanks(v preserves.Value, from int) (blanks []bool, after bool) {
	a, ok := v.(*preserves.Annotated)
	if !ok || len(a.Anns) < 1 || !onlyLineAnnotations(v) {
		return nil, false
	}
	to := a.Pos.Offset
	if !a.Pos.IsValid() || from < 0 || from > to || to > len(f.src) {
		return nil, false
	}
	blanks = make([]bool, 0, len(a.Anns))
	pending := false
	lines := bytes.Split(f.src[from:to], []byte("\n"))
	// The last segment is the start of the item's own line.
	for _, line := range lines[:len(lines)-1] {
		t := bytes.TrimSpace(line)
		switch {
		case len(t) == 0:
			pending = true
		case t[0] == '#':
			blanks = append(blanks, pending && len(blanks) > 0)
			pending = false
		default:
			pending = false
		}
	}
	if len(blanks) != len(a.Anns) {
		return nil, false
	}
	return blanks, pending
}

// blankBefore reports whether the source has a blank line between the end
// of token prev and the start of token next (its comments included).
func (f *formatter) blankBefore(prev, next preserves.Value) bool {
	ps, ns := preserves.PosOf(prev), preserves.PosOf(next)
	if !ps.IsValid() || !ns.IsValid() || ns.Offset > len(f.src) || ps.Offset >= ns.Offset {
		return false
	}
	end := valueEnd(f.src, ps.Offset)
	if end >= ns.Offset {
		return false
	}
	// Only the blank lines before next's first comment count: one after
	// a comment is written with the comment (commentBlanks).
	// The first segment ends the previous value's line; the last one
	// starts next's line; whole lines lie between.
	lines := bytes.Split(f.src[end:ns.Offset], []byte("\n"))
	if len(lines) < 3 {
		return false
	}
	for _, line := range lines[1 : len(lines)-1] {
		t := bytes.TrimSpace(line)
		switch {
		case len(t) == 0:
			return true
		case t[0] == '#':
			return false
		}
	}
	return false
}

// onlyLineAnnotations reports whether every annotation of v is a comment or
// interpreter line. Only then can the anchor of trailing comments be left
// out: an `@` annotation needs the value after it.
func onlyLineAnnotations(v preserves.Value) bool {
	a, ok := v.(*preserves.Annotated)
	if !ok {
		return false
	}
	for i := range a.Anns {
		if _, ok := preserves.LineAnnotation(a, i); !ok {
			return false
		}
	}
	return true
}

// data writes v at the current position in the Preserves writer's indented
// layout, the one layout of values (preserves.AppendIndented), with argv
// lists kept whole; depth is the indentation level of the line it starts on.
func (f *formatter) data(v preserves.Value, depth int) {
	f.buf = preserves.AppendIndented(f.buf, v, depth, preserves.WriterOptions{Indent: indentUnit, Annotations: true, AtomLists: true, SourceOrder: true})
}

// valueEnd returns the offset just past the value that starts at src[i],
// to find the gap between two values for blank-line detection: the reader
// records where each value starts, not where it ends. On a read error it
// returns i.
func valueEnd(src []byte, i int) int {
	r := preserves.NewTextReader(bytes.NewReader(src[i:]), preserves.TextOptions{Annotations: true})
	if _, err := r.Next(); err != nil {
		return i
	}
	return i + r.Offset()
}
