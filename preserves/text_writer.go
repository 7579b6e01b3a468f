package preserves

// The text writer renders values into a byte slice. Compact output puts
// everything on one line. Indented output is the one layout of Preserves
// text in the tree (the script formatter uses it for every value of a
// script, AppendIndented), a "fits or breaks" layout that knows the real
// column it starts at, counted in code points:
//
//   - a value is written on one line when that line stays within textWidth
//     columns and the value holds no comment;
//   - otherwise a record whose last field is a compound (record, sequence,
//     set, dictionary) "hangs": everything before that field stays on the
//     first line, so `<require-service <config-watcher $d {` opens a
//     dictionary whose entries follow one per line and `}>>` closes all
//     three;
//   - with WriterOptions.AtomLists, a sequence or set of plain atoms (an
//     argv list) stays on one line whatever its length;
//   - otherwise the items go one per line, one level deeper: record fields
//     after the label, sequence and set items, dictionary entries `k: v`.
//
// Comments and `#!` lines (LineAnnotation) go on lines of their own before
// the value they annotate. The compact attempt aborts soon after it passes
// the width, so the layout costs little more than a linear pass.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriterOptions configures WriteText.
type WriterOptions struct {
	// Indent, when non-empty, selects indented output with this string per
	// level; empty means compact output on one line.
	Indent string
	// Annotations writes annotations. In indented output, annotations flagged
	// as comments (Annotated.Comment) are written back as `# …` lines and
	// <interpreter "…"> annotations as `#!…` lines; in compact output they
	// are written as ordinary `@` annotations.
	Annotations bool
	// Embedded converts an embedded payload that is not itself a Value into
	// the Value written after `#:`. Without it such payloads are written as
	// the String of their fmt %v rendering (which does not read back as the
	// same payload, but keeps logs and diagnostics readable).
	Embedded func(any) (Value, error)
	// AtomLists keeps, in indented output, a sequence or set of plain
	// atoms on one line whatever its length (an argv list reads better
	// whole).
	AtomLists bool
	// SourceOrder writes a dictionary's entries in the order their keys
	// were written, when every key carries its place (an *Annotated with
	// a valid Pos, as the reader's Positions mode gives them): a
	// formatter then keeps the author's grouping of keys. Otherwise, and
	// without it, entries are written in the canonical order.
	SourceOrder bool
}

// textWidth is the line width the indented layout aims for.
const textWidth = 80

// FormatText renders v compactly on one line, annotations included.
func FormatText(v Value) string { return string(AppendText(nil, v)) }

// FormatTextLimit renders v compactly like FormatText, cut to at most
// about n bytes and then ending in "…", for error messages and logs about
// values from outside. Its cost is bounded by n whatever v holds: compounds
// stop at the first item past the limit, long strings are cut before being
// quoted, and an integer whose decimal form would not fit is written as
// <integer of N bits> (converting a huge integer to decimal costs seconds).
func FormatTextLimit(v Value, n int) string {
	w := textWriter{opts: WriterOptions{Annotations: true}, limit: n, short: true}
	if w.compact(v) && len(w.buf) <= n {
		return string(w.buf)
	}
	b := w.buf[:min(len(w.buf), n)]
	for len(b) > 0 && !utf8.Valid(b[max(0, len(b)-utf8.UTFMax):]) {
		b = b[:len(b)-1] // do not cut a character in half
	}
	return string(b) + "…"
}

// ShowLimit is the most bytes of value text Show and ShowString keep (a
// cut is marked by a final "…"): enough to recognise a value in a log line,
// small enough that a hostile one cannot flood the log.
const ShowLimit = 512

// Show renders v for a log field, an error message, an <error …> answer or
// a warning: FormatTextLimit(v, ShowLimit), at a cost bounded by ShowLimit.
// Use it for every value that may come from a script, a peer or a daemon;
// keep FormatText for text that must read back as v (keys, names that
// round-trip, output asked for in full).
func Show(v Value) string { return FormatTextLimit(v, ShowLimit) }

// ShowString cuts s, text already built that may quote a value from
// outside (an error's message, say), to ShowLimit bytes the way Show does.
func ShowString(s string) string {
	if len(s) <= ShowLimit {
		return s
	}
	cut := ShowLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // do not cut a character in half
	}
	return s[:cut] + "…"
}

// FormatTextIndent renders v indented with indent per level, annotations
// (and comments) included.
func FormatTextIndent(v Value, indent string) string {
	w := textWriter{opts: WriterOptions{Indent: indent, Annotations: true}, limit: math.MaxInt}
	w.write(v)
	return string(w.buf)
}

// WriteText writes the text of v to out.
func WriteText(out io.Writer, v Value, opts WriterOptions) error {
	w := textWriter{opts: opts, limit: math.MaxInt}
	w.write(v)
	if w.err != nil {
		return w.err
	}
	_, err := out.Write(w.buf)
	return err
}

// AppendIndented appends v in the indented layout to dst, starting at
// indentation depth: dst's last line is the line v starts on, so the layout
// knows its column. opts.Indent must be set.
func AppendIndented(dst []byte, v Value, depth int, opts WriterOptions) []byte {
	w := textWriter{buf: dst, opts: opts, limit: math.MaxInt}
	w.pretty(v, depth)
	return w.buf
}

// AppendText appends the compact text of v (annotations included) to dst.
func AppendText(dst []byte, v Value) []byte {
	w := textWriter{buf: dst, opts: WriterOptions{Annotations: true}, limit: math.MaxInt}
	w.compact(v)
	return w.buf
}

type textWriter struct {
	buf   []byte
	opts  WriterOptions
	err   error // first error from the Embedded hook
	limit int   // compact output must end by this buffer length
	short bool  // FormatTextLimit: atoms are cut to the limit too
	keep  int   // newline trims no byte before this: a comment's own spaces
}

func (w *textWriter) write(v Value) {
	if w.opts.Indent == "" {
		w.compact(v)
		return
	}
	w.pretty(v, 0)
}

func (w *textWriter) indented() bool { return w.opts.Indent != "" }

// --- indented layout ---

// newline starts a new line indented to depth, trimming the current
// line's trailing spaces, but not those of a comment's text, which are
// part of its value.
func (w *textWriter) newline(depth int) {
	end := len(w.buf)
	for end > w.keep && w.buf[end-1] == ' ' {
		end--
	}
	w.buf = append(w.buf[:end], '\n')
	for range depth {
		w.buf = append(w.buf, w.opts.Indent...)
	}
}

// column returns the column (in code points) at which the next character
// would go.
func (w *textWriter) column() int {
	return utf8.RuneCount(w.buf[bytes.LastIndexByte(w.buf, '\n')+1:])
}

// atLineStart reports whether only indentation is on the current line.
func (w *textWriter) atLineStart() bool {
	return len(bytes.TrimLeft(w.buf[bytes.LastIndexByte(w.buf, '\n')+1:], " \t")) == 0
}

// fits writes v compactly if it fits in what is left of the line, and
// reports whether it did (writing nothing when it does not).
func (w *textWriter) fits(v Value) bool {
	return w.compactWithin(max(textWidth-w.column(), 0), v)
}

// compactWithin writes vs compactly, separated by spaces, if that takes
// at most room code points, and reports whether it did (writing nothing
// when it does not). The byte limit lets the attempt stop early; the
// count in code points decides.
func (w *textWriter) compactWithin(room int, vs ...Value) bool {
	mark := len(w.buf)
	w.limit = mark + room*utf8.UTFMax
	ok := true
	for i, v := range vs {
		if i > 0 {
			w.buf = append(w.buf, ' ')
		}
		if ok = w.compact(v); !ok {
			break
		}
	}
	w.limit = math.MaxInt
	if !ok || utf8.RuneCount(w.buf[mark:]) > room {
		w.buf = w.buf[:mark]
		return false
	}
	return true
}

func (w *textWriter) pretty(v Value, depth int) {
	if w.fits(v) {
		return
	}
	item := v
	if a, isAnn := v.(*Annotated); isAnn {
		item = a.Item
		if w.opts.Annotations {
			for i, ann := range a.Anns {
				if text, ok := LineAnnotation(a, i); ok {
					if !w.atLineStart() {
						w.newline(depth)
					}
					w.buf = append(w.buf, text...)
					w.keep = len(w.buf)
					w.newline(depth)
					continue
				}
				// The item does not fit on this line: give each annotation
				// a line of its own too.
				w.buf = append(w.buf, '@')
				w.pretty(ann, depth)
				w.newline(depth)
			}
		}
		// With the annotations on lines of their own the item may fit.
		if w.fits(item) {
			return
		}
	}
	if w.opts.AtomLists && atomsOnly(item) {
		w.compact(item)
		return
	}
	switch x := item.(type) {
	case *Record:
		w.buf = append(w.buf, '<')
		if w.prettyHanging(x, depth) {
			return
		}
		w.pretty(x.Label, depth+1)
		for _, f := range x.Fields {
			w.newline(depth + 1)
			w.pretty(f, depth+1)
		}
		w.buf = append(w.buf, '>')
	case Sequence:
		w.prettyItems("[", x, "]", depth)
	case *Set:
		w.prettyItems("#{", x.elems, "}", depth)
	case *Dictionary:
		if len(x.entries) == 0 {
			w.buf = append(w.buf, "{}"...)
			return
		}
		w.buf = append(w.buf, '{')
		for _, e := range w.entries(x) {
			w.newline(depth + 1)
			w.pretty(e.Key, depth+1)
			w.buf = append(w.buf, ": "...)
			w.pretty(e.Value, depth+1)
		}
		w.newline(depth)
		w.buf = append(w.buf, '}')
	case *Embedded:
		w.buf = append(w.buf, "#:"...)
		if pv := w.payload(x); pv != nil {
			w.pretty(pv, depth)
		}
	default:
		w.compact(item)
	}
}

// prettyHanging writes a record whose last field is a compound in the
// "hanging" style usual for configuration, when everything before that
// field fits on the first line with room for the field's opening bracket:
//
//	<daemon name {
//	  argv: […]
//	}>
//
// It reports false, having written nothing, when the style does not apply.
func (w *textWriter) prettyHanging(x *Record, depth int) bool {
	if len(x.Fields) == 0 {
		return false
	}
	last := x.Fields[len(x.Fields)-1]
	if a, ok := last.(*Annotated); ok && w.opts.Annotations && len(a.Anns) > 0 {
		return false
	}
	switch Unwrap(last).(type) {
	case *Record, Sequence, *Set, *Dictionary:
	default:
		return false
	}
	head := append([]Value{x.Label}, x.Fields[:len(x.Fields)-1]...)
	if !w.compactWithin(textWidth-w.column()-2, head...) {
		return false
	}
	w.buf = append(w.buf, ' ')
	w.pretty(last, depth)
	w.buf = append(w.buf, '>')
	return true
}

func (w *textWriter) prettyItems(open string, items []Value, close string, depth int) {
	w.buf = append(w.buf, open...)
	if len(items) > 0 {
		for _, it := range items {
			w.newline(depth + 1)
			w.pretty(it, depth+1)
		}
		w.newline(depth)
	}
	w.buf = append(w.buf, close...)
}

// atomsOnly reports whether v is a sequence or set whose items are all
// atoms without annotations.
func atomsOnly(v Value) bool {
	var items []Value
	switch x := v.(type) {
	case Sequence:
		items = x
	case *Set:
		items = x.elems
	default:
		return false
	}
	for _, it := range items {
		if a, ok := it.(*Annotated); ok {
			if len(a.Anns) > 0 {
				return false
			}
			it = a.Item
		}
		switch it.(type) {
		case *Record, Sequence, *Set, *Dictionary, *Embedded:
			return false
		}
	}
	return true
}

// LineAnnotation returns the line form ("# text" or "#!text") of
// annotation i of a when it is written as a line of its own: a comment,
// or an interpreter annotation, whose text holds no line break. It is the
// one rendering of comments, for the text writer and the script formatter.
func LineAnnotation(a *Annotated, i int) (string, bool) {
	ann := a.Anns[i]
	if i < len(a.Comment) && a.Comment[i] {
		s, ok := ann.(String)
		if !ok || strings.ContainsAny(string(s), "\r\n") {
			return "", false
		}
		if s == "" {
			return "#", true
		}
		return "# " + string(s), true
	}
	if r, ok := ann.(*Record); ok && len(r.Fields) == 1 && r.Label == Symbol("interpreter") {
		s, ok := r.Fields[0].(String)
		if ok && !strings.ContainsAny(string(s), "\r\n") {
			return "#!" + string(s), true
		}
	}
	return "", false
}

// --- compact layout ---

// compact appends v on one line. It returns false, leaving partial output,
// when the output passes w.limit, or in indented mode when v holds an
// annotation that must go on a line of its own.
func (w *textWriter) compact(v Value) bool {
	if len(w.buf) > w.limit {
		return false // checked on entry too, so deep nesting aborts early
	}
	switch x := v.(type) {
	case *Annotated:
		if w.opts.Annotations {
			for i, ann := range x.Anns {
				if w.indented() {
					if _, line := LineAnnotation(x, i); line {
						return false
					}
				}
				w.buf = append(w.buf, '@')
				if !w.compact(ann) {
					return false
				}
				w.buf = append(w.buf, ' ')
			}
		}
		return w.compact(x.Item)
	case *Record:
		w.buf = append(w.buf, '<')
		if !w.compact(x.Label) {
			return false
		}
		for _, f := range x.Fields {
			w.buf = append(w.buf, ' ')
			if !w.compact(f) {
				return false
			}
		}
		w.buf = append(w.buf, '>')
	case Sequence:
		return w.compactItems("[", x, "]")
	case *Set:
		return w.compactItems("#{", x.elems, "}")
	case *Dictionary:
		w.buf = append(w.buf, '{')
		for i, e := range w.entries(x) {
			if i > 0 {
				w.buf = append(w.buf, ", "...)
			}
			if !w.compact(e.Key) {
				return false
			}
			w.buf = append(w.buf, ": "...)
			if !w.compact(e.Value) {
				return false
			}
		}
		w.buf = append(w.buf, '}')
	case *Embedded:
		w.buf = append(w.buf, "#:"...)
		if pv := w.payload(x); pv != nil {
			return w.compact(pv)
		}
	default:
		if w.short {
			w.shortAtom(v)
		} else {
			w.buf = textAppendAtom(w.buf, v)
		}
	}
	return len(w.buf) <= w.limit
}

// shortAtom writes an atom for FormatTextLimit, doing no more work than the
// room left before the limit calls for.
func (w *textWriter) shortAtom(v Value) {
	room := max(w.limit-len(w.buf), 0) + 1 // one byte past: the caller then cuts
	switch x := v.(type) {
	case *BigInt:
		if x.v.BitLen()*3/10 > room { // 3/10 < log10(2): fewer digits than it has
			w.buf = fmt.Appendf(w.buf, "<integer of %d bits>", x.v.BitLen())
			return
		}
	case String:
		if len(x) > room {
			v = x[:room]
		}
	case Symbol:
		if len(x) > room {
			v = x[:room]
		}
	case ByteString:
		if len(x) > room {
			v = x[:room]
		}
	}
	w.buf = textAppendAtom(w.buf, v)
}

func (w *textWriter) compactItems(open string, items []Value, close string) bool {
	w.buf = append(w.buf, open...)
	for i, it := range items {
		if i > 0 {
			w.buf = append(w.buf, ' ')
		}
		if !w.compact(it) {
			return false
		}
	}
	w.buf = append(w.buf, close...)
	return len(w.buf) <= w.limit
}

// payload returns the Value to write after `#:`, or nil after recording a
// hook error.
func (w *textWriter) payload(e *Embedded) Value {
	if pv, ok := e.Payload.(Value); ok {
		return pv
	}
	if w.opts.Embedded != nil {
		pv, err := w.opts.Embedded(e.Payload)
		if err != nil {
			if w.err == nil {
				w.err = fmt.Errorf("preserves: writing embedded %T: %w", e.Payload, err)
			}
			w.buf = append(w.buf, "#f"...) // placeholder; WriteText returns the error
			return nil
		}
		return pv
	}
	return String(fmt.Sprint(e.Payload))
}

// textAppendAtom appends an atom (any value without children).
func textAppendAtom(buf []byte, v Value) []byte {
	switch x := v.(type) {
	case Bool:
		if x {
			return append(buf, "#t"...)
		}
		return append(buf, "#f"...)
	case Double:
		return textAppendDouble(buf, x)
	case Int:
		return strconv.AppendInt(buf, int64(x), 10)
	case *BigInt:
		return x.v.Append(buf, 10)
	case String:
		return textAppendQuoted(buf, string(x), '"')
	case Symbol:
		if textBareSymbol(string(x)) {
			return append(buf, x...)
		}
		return textAppendQuoted(buf, string(x), '|')
	case ByteString:
		return textAppendBytes(buf, string(x))
	case nil:
		panic("preserves: writing a nil Value")
	}
	panic(fmt.Sprintf("preserves: writing unexpected value type %T", v))
}

// textAppendDouble writes the shortest decimal that reads back bit-exactly,
// with ".0" added when it would otherwise read as an integer; non-finite
// values use the #xd"…" bit-pattern form.
func textAppendDouble(buf []byte, d Double) []byte {
	f := d.Float64()
	if math.IsInf(f, 0) || math.IsNaN(f) {
		buf = append(buf, `#xd"`...)
		for s := 60; s >= 0; s -= 4 {
			buf = append(buf, "0123456789abcdef"[(d.bits>>uint(s))&15])
		}
		return append(buf, '"')
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, 'g', -1, 64)
	if bytes.IndexAny(buf[start:], ".eE") < 0 {
		buf = append(buf, ".0"...)
	}
	return buf
}

// textBareSymbol reports whether s can be written without |…|: non-empty,
// only ASCII bare-token characters (non-ASCII is quoted for the benefit of
// other readers), and not reading back as a number.
func textBareSymbol(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !textBareASCII[s[i]] {
			return false
		}
	}
	return textNumberKind(s) == textSymbol
}

// textAppendQuoted writes s between quote characters with the escapes of the
// text syntax. Invalid UTF-8 (which a well-formed String or Symbol never
// holds) is written as U+FFFD.
func textAppendQuoted(buf []byte, s string, quote byte) []byte {
	buf = append(buf, quote)
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				buf = append(buf, `\uFFFD`...)
			case terminalEscaped(r): // terminal.go
				const hex = "0123456789abcdef"
				buf = append(buf, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
			default:
				buf = append(buf, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
		switch c {
		case quote, '\\':
			buf = append(buf, '\\', c)
		case '\b', '\f', '\n', '\r', '\t':
			buf = append(buf, '\\', textEscapeLetters[c])
		default:
			if c < 0x20 || c == 0x7f {
				buf = append(buf, `\u00`...)
				buf = append(buf, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, quote)
}

// textAppendBytes picks the byte-string form: #"…" for mostly printable
// ASCII, #x"…" for short binary data and #[…] (base64) for long.
func textAppendBytes(buf []byte, b string) []byte {
	printable := 0
	for i := 0; i < len(b); i++ {
		if b[i] >= 0x20 && b[i] < 0x7f {
			printable++
		}
	}
	const hex = "0123456789abcdef"
	switch {
	case printable*4 >= len(b)*3:
		buf = append(buf, `#"`...)
		for i := 0; i < len(b); i++ {
			c := b[i]
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, `\n`...)
			case c == '\r':
				buf = append(buf, `\r`...)
			case c == '\t':
				buf = append(buf, `\t`...)
			case c < 0x20 || c >= 0x7f:
				buf = append(buf, '\\', 'x', hex[c>>4], hex[c&15])
			default:
				buf = append(buf, c)
			}
		}
		return append(buf, '"')
	case len(b) <= 32:
		buf = append(buf, `#x"`...)
		for i := 0; i < len(b); i++ {
			buf = append(buf, hex[b[i]>>4], hex[b[i]&15])
		}
		return append(buf, '"')
	}
	buf = append(buf, "#["...)
	buf = base64.StdEncoding.AppendEncode(buf, []byte(b))
	return append(buf, ']')
}

// String methods: every value renders as its compact text.

func (b Bool) String() string        { return FormatText(b) }
func (d Double) String() string      { return FormatText(d) }
func (i Int) String() string         { return FormatText(i) }
func (b *BigInt) String() string     { return FormatText(b) }
func (s String) String() string      { return FormatText(s) }
func (b ByteString) String() string  { return FormatText(b) }
func (s Symbol) String() string      { return FormatText(s) }
func (r *Record) String() string     { return FormatText(r) }
func (s Sequence) String() string    { return FormatText(s) }
func (s *Set) String() string        { return FormatText(s) }
func (d *Dictionary) String() string { return FormatText(d) }
func (e *Embedded) String() string   { return FormatText(e) }
func (a *Annotated) String() string  { return FormatText(a) }

// entries are d's entries in the order to write them (SourceOrder).
func (w *textWriter) entries(d *Dictionary) []DictEntry {
	if !w.opts.SourceOrder || len(d.entries) < 2 {
		return d.entries
	}
	offset := func(e DictEntry) (int, bool) {
		a, ok := e.Key.(*Annotated)
		if !ok || !a.Pos.IsValid() {
			return 0, false
		}
		return a.Pos.Offset, true
	}
	prev := -1
	inOrder := true
	for _, e := range d.entries {
		off, ok := offset(e)
		if !ok {
			return d.entries
		}
		inOrder = inOrder && off > prev
		prev = off
	}
	if inOrder {
		return d.entries
	}
	out := slices.Clone(d.entries)
	slices.SortStableFunc(out, func(a, b DictEntry) int {
		oa, _ := offset(a)
		ob, _ := offset(b)
		return oa - ob
	})
	return out
}
