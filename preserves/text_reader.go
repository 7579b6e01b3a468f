package preserves

// The text reader is a hand-written recursive-descent parser over a byte
// buffer. Design points, and why:
//
//   - It scans bytes, not runes: every syntactically significant character of
//     Preserves text is ASCII, so only bare tokens and the bodies of strings
//     ever need UTF-8 decoding, and those are validated in bulk.
//   - The buffer is refilled from the io.Reader on demand and is compacted only
//     between top-level values. Indices into it therefore stay valid for the
//     whole of one value, so scanners can remember start offsets and slice the
//     token out at the end without copying byte by byte.
//   - Line and column are not tracked while scanning. A position is computed
//     only when it is needed (an error, or Positions mode), by counting
//     newlines from the last computed position with bytes.Count. The plain
//     fast path therefore pays nothing for positions.
//   - Errors unwind with panic(*Error) and are recovered at the API boundary
//     (Next), which keeps the many small scanning functions free of error
//     plumbing. Only *Error and read errors are recovered; any other panic is a
//     bug and propagates.
//   - Children of a compound are collected on one shared scratch stack and
//     copied once into an exactly-sized slice; small records are allocated
//     together with their fields; short symbols are interned as ready-boxed
//     Values. A parse therefore allocates about once or twice per value and
//     never per byte.
//   - Positions mode (used for whole source files such as scripts) wraps every
//     value, so it carves its wrappers, records, dictionaries and item slices
//     from per-reader chunks (textSlab) rather than allocating each: one
//     object per chunk for the allocator and the garbage collector instead of
//     one per value.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// TextOptions configures the text reader. The zero value reads plain values:
// annotations and comments are checked for syntax and then dropped.
type TextOptions struct {
	// File names the input in positions and error messages.
	File string
	// Annotations keeps `@` annotations, `#` comments (as String annotations
	// flagged in Annotated.Comment) and `#!` lines (as <interpreter "…">).
	Annotations bool
	// Positions wraps every value, at every depth, in *Annotated with Pos set
	// to where the value itself (after its annotations) starts. Annotations
	// synthesized from `#` and `#!` lines are left unwrapped. The wrappers,
	// records and item slices of this mode are carved from shared blocks of
	// at most about 100 KB, so a value kept from a long stream keeps its
	// block alive.
	Positions bool
	// Embedded converts the payload of `#:v` into a domain object. When nil,
	// the payload is kept as the Value v (with annotations and positions as
	// requested above).
	Embedded func(Value) (any, error)
	// MaxDepth limits nesting (compounds, annotations, embedded values); 0
	// means DefaultTextMaxDepth. Exceeding it is an ErrLimit error.
	MaxDepth int
}

// DefaultTextMaxDepth is the nesting limit used when TextOptions.MaxDepth is
// 0. It bounds the reader's recursion, and so its stack use, on hostile input.
const DefaultTextMaxDepth = 10000

// TextReader reads consecutive top-level values from Preserves text, such as
// a .pr file.
type TextReader struct {
	src     io.Reader // nil when the whole input is already in buf
	srcDone bool      // src reported io.EOF
	rerr    error     // sticky read error from src
	err     error     // sticky error returned by Next

	buf  []byte
	pos  int // index of the next unread byte in buf
	base int // absolute offset of buf[0]

	opts     TextOptions
	maxDepth int
	depth    int

	stack   []Value    // children of the compounds being read
	opens   []textOpen // the compounds being read, outermost first
	offs    []int      // source offsets of set elements / dictionary keys
	scratch []byte     // decoded bodies of escaped strings and byte strings
	syms    []textSym  // direct-mapped symbol cache; see symbol

	// Positions mode carves its objects from chunks (see textSlab).
	annSlab  textSlab[Annotated]
	valSlab  textSlab[Value]
	recSlab  textSlab[Record]
	entSlab  textSlab[DictEntry]
	dictSlab textSlab[Dictionary]

	trk textPosTrack // last computed position
	chk textPosTrack // position of buf[0]: restart point for earlier offsets
}

// textOpen is a compound being read: the buffer index of its opening
// delimiter, and what it is. A premature end of input, or an item that
// cannot start a value, is reported with the innermost one, so that an
// unclosed `<` is found where it was written, not only where the reader
// noticed.
type textOpen struct {
	at   int
	what string
}

// textPosTrack is a computed (offset → line, column) correspondence.
type textPosTrack struct{ off, line, col int }

// textReadError carries an error from the underlying io.Reader through the
// panic-based unwinding.
type textReadError struct{ err error }

// NewTextReader returns a reader of the values in r. It buffers r internally;
// r need not be buffered.
func NewTextReader(r io.Reader, opts TextOptions) *TextReader {
	tr := newTextReader(nil, opts)
	tr.src = r
	return tr
}

func newTextReader(src []byte, opts TextOptions) *TextReader {
	tr := &TextReader{buf: src, opts: opts, maxDepth: opts.MaxDepth}
	if tr.maxDepth <= 0 {
		tr.maxDepth = DefaultTextMaxDepth
	}
	tr.trk = textPosTrack{0, 1, 1}
	tr.chk = tr.trk
	return tr
}

// ParseText parses src, which must hold exactly one value, without
// annotations or positions.
func ParseText(src string) (Value, error) {
	return ParseTextOptions([]byte(src), TextOptions{})
}

// ParseTextOptions parses src, which must hold exactly one value. It fails
// with ErrEmpty when src is empty, ErrUnexpectedEOF when src ends before a
// complete value (whitespace only included), and ErrSyntax when anything but
// whitespace follows the value.
func ParseTextOptions(src []byte, opts TextOptions) (v Value, err error) {
	r := newTextReader(src, opts)
	defer r.recoverErr(&err)
	if len(src) == 0 {
		return nil, r.newError(0, ErrEmpty, "no value in empty input")
	}
	v = r.readValue()
	r.skipWS()
	if r.pos < len(r.buf) {
		r.fail(r.pos, "unexpected %s after the value", textQuoteByte(r.buf[r.pos]))
	}
	return v, nil
}

// ReadAllText reads every top-level value of src. On error it returns the
// values read before the error, and the error.
func ReadAllText(src []byte, opts TextOptions) ([]Value, error) {
	r := newTextReader(src, opts)
	// Values are gathered in chunks and copied once into an exactly-sized
	// result: append's growth (by 1.25 for long slices) would allocate
	// several times the result on a file of thousands of values.
	var full [][]Value
	cur := make([]Value, 0, 32)
	n := 0
	collect := func() []Value {
		if len(full) == 0 {
			if len(cur) == 0 {
				return nil
			}
			return cur
		}
		out := make([]Value, 0, n)
		for _, c := range full {
			out = append(out, c...)
		}
		return append(out, cur...)
	}
	for {
		v, err := r.Next()
		if err == io.EOF {
			return collect(), nil
		}
		if err != nil {
			return collect(), err
		}
		if len(cur) == cap(cur) {
			full = append(full, cur)
			cur = make([]Value, 0, min(2*cap(cur), 4096))
		}
		cur = append(cur, v)
		n++
	}
}

// Next returns the next top-level value, or io.EOF when only whitespace
// remains. Errors are sticky: after one, Next keeps returning it. Syntax
// errors are *Error; errors from the underlying reader are returned as they
// are.
func (r *TextReader) Next() (v Value, err error) {
	if r.err != nil {
		return nil, r.err
	}
	defer func() {
		if err != nil {
			r.err = err
		}
	}()
	defer r.recoverErr(&err)
	r.compact()
	if r.trk.off <= r.base+r.pos {
		// Earlier positions in this value can be recomputed from here.
		r.chk = r.trk
	}
	r.skipWS()
	if !r.more() {
		return nil, io.EOF
	}
	r.depth = 0
	r.opens = r.opens[:0]
	return r.readValue(), nil
}

func (r *TextReader) recoverErr(err *error) {
	if x := recover(); x != nil {
		switch e := x.(type) {
		case *Error:
			*err = e
		case textReadError:
			*err = e.err
		default:
			panic(x)
		}
	}
}

// compact drops consumed input between top-level values so a long stream
// does not accumulate in memory.
func (r *TextReader) compact() {
	if r.src == nil || r.pos == 0 || (r.pos < 32<<10 && r.pos <= len(r.buf)/2) {
		return
	}
	end := r.base + r.pos
	r.advance(&r.trk, end)
	r.chk = r.trk
	n := copy(r.buf, r.buf[r.pos:])
	r.buf = r.buf[:n]
	r.base = end
	r.pos = 0
}

// fill reads more input into buf, keeping everything already there. It
// reports whether any bytes were added.
func (r *TextReader) fill() bool {
	if r.src == nil || r.srcDone {
		return false
	}
	if r.rerr != nil {
		panic(textReadError{r.rerr})
	}
	if len(r.buf) == cap(r.buf) {
		nb := make([]byte, len(r.buf), max(2*cap(r.buf), 16<<10))
		copy(nb, r.buf)
		r.buf = nb
	}
	for range 100 {
		n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if err == io.EOF {
			r.srcDone = true
		} else if err != nil {
			r.rerr = err
			if n == 0 {
				panic(textReadError{err})
			}
		}
		if n > 0 {
			return true
		}
		if r.srcDone {
			return false
		}
	}
	r.rerr = io.ErrNoProgress
	panic(textReadError{r.rerr})
}

// more reports whether an unread byte is available, reading if needed.
func (r *TextReader) more() bool {
	return r.pos < len(r.buf) || r.fill()
}

// byteAt returns buf[i], reading more input if needed; ok is false at the
// end of input.
func (r *TextReader) byteAt(i int) (byte, bool) {
	for i >= len(r.buf) {
		if !r.fill() {
			return 0, false
		}
	}
	return r.buf[i], true
}

// need returns buf[i] or fails with premature EOF, naming what was being read.
func (r *TextReader) need(i int, what string) byte {
	c, ok := r.byteAt(i)
	if !ok {
		r.failEOF(i, "unexpected end of input in %s", what)
	}
	return c
}

// needIn is need between the items of a compound: premature EOF also
// names where the innermost compound was opened.
func (r *TextReader) needIn(i int, what string) byte {
	c, ok := r.byteAt(i)
	if !ok {
		r.failEOFInside(i, "unexpected end of input in %s", what)
	}
	return c
}

// --- positions and errors ---

// advance moves t forward to absolute offset off.
func (r *TextReader) advance(t *textPosTrack, off int) {
	if off <= t.off {
		return
	}
	seg := r.buf[t.off-r.base : off-r.base]
	if len(seg) <= 64 && textShortASCIIAdvance(t, seg) {
		t.off = off
		return
	}
	if n := bytes.Count(seg, []byte{'\n'}); n > 0 {
		t.line += n
		t.col = 1 + utf8.RuneCount(seg[bytes.LastIndexByte(seg, '\n')+1:])
	} else {
		t.col += utf8.RuneCount(seg)
	}
	t.off = off
}

// textShortASCIIAdvance moves t over seg if seg is all ASCII, reporting
// whether it did. Positions mode asks for a position at every value, a few
// bytes after the previous one: one pass over such a segment costs less than
// the general path's calls.
func textShortASCIIAdvance(t *textPosTrack, seg []byte) bool {
	line, col := t.line, t.col
	for _, c := range seg {
		if c >= utf8.RuneSelf {
			return false
		}
		col++
		if c == '\n' {
			line, col = line+1, 1
		}
	}
	t.line, t.col = line, col
	return true
}

// posAt returns the position of buffer index i.
func (r *TextReader) posAt(i int) Pos {
	off := r.base + min(i, len(r.buf))
	if off < r.trk.off {
		r.trk = r.chk
	}
	r.advance(&r.trk, off)
	return Pos{File: r.opts.File, Offset: off, Line: r.trk.line, Col: r.trk.col}
}

func (r *TextReader) newError(i int, class error, format string, args ...any) *Error {
	return &Error{Pos: r.posAt(i), Msg: fmt.Sprintf(format, args...), Class: class}
}

// fail reports a syntax error at buffer index i.
func (r *TextReader) fail(i int, format string, args ...any) {
	panic(r.newError(i, ErrSyntax, format, args...))
}

// failEOF reports premature end of input at buffer index i, inside an
// atom (whose start the message names).
func (r *TextReader) failEOF(i int, format string, args ...any) {
	panic(r.newError(i, ErrUnexpectedEOF, format, args...))
}

// failEOFInside reports premature end of input at buffer index i between
// values, and where the innermost compound still open was opened.
func (r *TextReader) failEOFInside(i int, format string, args ...any) {
	panic(r.withOpen(r.newError(i, ErrUnexpectedEOF, format, args...)))
}

// failInside reports a syntax error at buffer index i, and where the
// innermost compound still open was opened: an item that cannot start a
// value is most often the sign of a compound left unclosed above it.
func (r *TextReader) failInside(i int, format string, args ...any) {
	panic(r.withOpen(r.newError(i, ErrSyntax, format, args...)))
}

func (r *TextReader) withOpen(e *Error) *Error {
	if n := len(r.opens); n > 0 {
		o := r.opens[n-1]
		e.Open, e.OpenWhat = r.posAt(o.at), o.what
	}
	return e
}

// open notes that the compound `what` opens at buffer index i; close
// drops the innermost.
func (r *TextReader) open(i int, what string) { r.opens = append(r.opens, textOpen{i, what}) }
func (r *TextReader) close()                  { r.opens = r.opens[:len(r.opens)-1] }

func textQuoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// --- character classes ---

// textBareASCII marks the ASCII characters of bare tokens (symbols, numbers).
// textDelimASCII marks the characters allowed right after a bare token or
// #t/#f.
var textBareASCII, textDelimASCII [256]bool

func init() {
	for c := '0'; c <= '9'; c++ {
		textBareASCII[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		textBareASCII[c] = true
		textBareASCII[c-'a'+'A'] = true
	}
	for _, c := range []byte("~!$%^&*?_=+-/.") {
		textBareASCII[c] = true
	}
	for _, c := range []byte(" \t\r\n<>[]{}#:\"|@;,") {
		textDelimASCII[c] = true
	}
}

// textBareRune reports whether a non-ASCII scalar may appear in a bare token:
// letters, marks, numbers, symbols, private use, and connector, dash and
// "other" punctuation (but not opening, closing or quote punctuation,
// separators, controls or format characters).
func textBareRune(c rune) bool {
	return unicode.In(c, unicode.L, unicode.M, unicode.N, unicode.S,
		unicode.Pc, unicode.Pd, unicode.Po, unicode.Co)
}

func textIsWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// textEscapes maps the letter of a one-letter escape to the byte it
// stands for, in strings, symbols and byte strings alike;
// textEscapeLetters is the inverse, for the writer.
var (
	textEscapes       = [256]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	textEscapeLetters = func() (l [256]byte) {
		for c, b := range textEscapes {
			if b != 0 {
				l[b] = byte(c)
			}
		}
		return l
	}()
)

func textHexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func (r *TextReader) skipWS() {
	for {
		for r.pos < len(r.buf) {
			if !textIsWS(r.buf[r.pos]) {
				return
			}
			r.pos++
		}
		if !r.fill() {
			return
		}
	}
}

// skipWSCommas skips whitespace and commas: the separators allowed between
// the items of sequences, sets and dictionaries.
func (r *TextReader) skipWSCommas() {
	for {
		for r.pos < len(r.buf) {
			if c := r.buf[r.pos]; !textIsWS(c) && c != ',' {
				return
			}
			r.pos++
		}
		if !r.fill() {
			return
		}
	}
}

func (r *TextReader) enter() {
	r.depth++
	if r.depth > r.maxDepth {
		panic(r.newError(r.pos, ErrLimit, "nesting deeper than %d", r.maxDepth))
	}
}

// --- values ---

// readValue reads whitespace, any annotations and comments, and one value.
func (r *TextReader) readValue() Value {
	var anns []Value
	var comments []bool // allocated once a comment annotation is kept
	for {
		r.skipWS()
		if !r.more() {
			r.failEOFInside(r.pos, "unexpected end of input: expected a value")
		}
		c := r.buf[r.pos]
		if c == '@' {
			r.pos++
			r.enter()
			a := r.readValue()
			r.depth--
			if r.opts.Annotations {
				anns = append(anns, a)
				if comments != nil {
					comments = append(comments, false)
				}
			}
			continue
		}
		if c == '#' {
			if c2, ok := r.byteAt(r.pos + 1); !ok || textIsWS(c2) || c2 == '!' {
				a := r.readComment()
				if r.opts.Annotations {
					if _, isComment := a.(String); isComment && comments == nil {
						comments = make([]bool, len(anns), len(anns)+1)
					}
					anns = append(anns, a)
					if comments != nil {
						_, isComment := a.(String)
						comments = append(comments, isComment)
					}
				}
				continue
			}
		}
		if r.opts.Positions {
			// Computed before the children's positions, so that position
			// requests stay in source order and each costs only the bytes
			// since the previous one.
			a := r.newAnnotated()
			if anns != nil {
				a.Anns, a.Comment = anns, comments
			}
			a.Pos = r.posAt(r.pos)
			a.Item = r.readItem(c)
			return a
		}
		v := r.readItem(c)
		if len(anns) > 0 {
			return &Annotated{Anns: anns, Comment: comments, Item: v}
		}
		return v
	}
}

// textSlab hands out elements of T carved from chunks, for Positions mode.
// That mode wraps every value in an *Annotated and is used to read whole
// source files whose values all live as long as each other (a script's AST
// keeps them); allocating wrappers, records and item slices one by one made
// the allocator and the garbage collector, which pay per object, the larger
// part of its cost. Chunks start at a size guessed from the input (so a small
// parse stays small) and double up to a limit, so a value kept from a
// long stream pins at most one chunk of its neighbours.
type textSlab[T any] struct {
	free  []T
	chunk int // size of the next chunk; 0 before the first
}

// take returns n zeroed elements (len and cap n, so appending to them
// copies). hint estimates how many elements the rest of the input needs.
func (s *textSlab[T]) take(n, hint, limit int) []T {
	if n > len(s.free) {
		if n > limit/4 {
			return make([]T, n) // big: its own allocation, wasting no chunk
		}
		c := s.chunk
		if c == 0 {
			c = min(max(hint, 8), limit)
		}
		s.free = make([]T, max(c, n))
		s.chunk = min(2*c, limit)
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

// slabHint guesses how many objects of one kind the unread input needs, at
// one per div bytes (a script averages about one value per 4 to 8 bytes).
func (r *TextReader) slabHint(div int) int { return (len(r.buf) - r.pos) / div }

func (r *TextReader) newAnnotated() *Annotated {
	return &r.annSlab.take(1, r.slabHint(8), 1024)[0]
}

// readComment reads a `#` comment line or a `#!` interpreter line, up to and
// including its CR or LF, and returns its annotation (nil when annotations
// are not kept).
func (r *TextReader) readComment() Value {
	start := r.pos
	c2 := r.need(r.pos+1, "comment")
	interp := c2 == '!'
	textStart := r.pos + 2
	if c2 == '\r' || c2 == '\n' {
		textStart = r.pos + 1 // `#` then EOL: empty comment
	}
	i := textStart
	for {
		if i >= len(r.buf) && !r.fill() {
			r.failEOFInside(i, "unexpected end of input in comment: a comment must be followed by a value")
		}
		j := bytes.IndexAny(r.buf[i:], "\r\n")
		if j >= 0 {
			i += j
			break
		}
		i = len(r.buf)
	}
	text := r.buf[textStart:i]
	r.pos = i + 1
	if !utf8.Valid(text) {
		r.fail(start, "invalid UTF-8 in comment")
	}
	if !r.opts.Annotations {
		return nil
	}
	if interp {
		return &Record{Label: Symbol("interpreter"), Fields: []Value{String(text)}}
	}
	return String(text)
}

// readItem reads the value proper starting with c at r.pos.
func (r *TextReader) readItem(c byte) Value {
	switch c {
	case '<':
		return r.readRecord()
	case '[':
		r.pos++
		return Sequence(r.readItems(r.pos-1, ']', "sequence"))
	case '{':
		return r.readDict()
	case '"':
		start := r.pos
		r.pos++
		return String(r.readQuoted('"', start, "string"))
	case '|':
		start := r.pos
		r.pos++
		return r.symbol(r.readQuoted('|', start, "quoted symbol"))
	case '#':
		return r.readHash()
	}
	if textBareASCII[c] || c >= utf8.RuneSelf {
		return r.readBare()
	}
	r.failInside(r.pos, "unexpected %s", textQuoteByte(c))
	return nil
}

// readHash reads the `#`-prefixed forms other than comments.
func (r *TextReader) readHash() Value {
	start := r.pos
	c := r.need(start+1, "#-syntax")
	switch c {
	case 't', 'f':
		r.pos += 2
		r.checkDelimiter()
		return Bool(c == 't')
	case '{':
		r.pos += 2
		return r.readSet(start)
	case '"':
		r.pos += 2
		return ByteString(r.readByteString(start))
	case 'x':
		switch r.need(start+2, "#x-syntax") {
		case '"':
			r.pos += 3
			return ByteString(r.readHex(start, -1))
		case 'd':
			if q := r.need(start+3, "#xd-syntax"); q != '"' {
				r.fail(start+3, "expected '\"' after #xd, found %s", textQuoteByte(q))
			}
			r.pos += 4
			b := r.readHex(start, 8)
			var bits uint64
			for _, x := range b {
				bits = bits<<8 | uint64(x)
			}
			return DoubleFromBits(bits)
		default:
			r.fail(start+2, "expected '\"' or 'd\"' after #x, found %s", textQuoteByte(r.buf[start+2]))
		}
	case '[':
		r.pos += 2
		return ByteString(r.readBase64(start))
	case ':':
		r.pos += 2
		r.enter()
		payload := r.readValue()
		r.depth--
		if r.opts.Embedded == nil {
			return &Embedded{Payload: payload}
		}
		p, err := r.opts.Embedded(payload)
		if err != nil {
			r.fail(start, "embedded value: %v", err)
		}
		return &Embedded{Payload: p}
	}
	r.fail(start+1, "unexpected %s after '#'", textQuoteByte(c))
	return nil
}

// checkDelimiter enforces that a bare token or #t/#f ends at end of input or
// at a delimiter.
func (r *TextReader) checkDelimiter() {
	if c, ok := r.byteAt(r.pos); ok && !textDelimASCII[c] {
		r.fail(r.pos, "unexpected %s after token (expected whitespace or a delimiter)", textQuoteByte(c))
	}
}

// readItems reads the items of a sequence or set up to closer; the opener,
// at buffer index start, is already consumed. The result is a fresh slice
// (nil when empty).
func (r *TextReader) readItems(start int, closer byte, what string) []Value {
	r.enter()
	r.open(start, what)
	mark := len(r.stack)
	for {
		r.skipWSCommas()
		c := r.needIn(r.pos, what)
		if c == closer {
			r.pos++
			break
		}
		if closer == '}' {
			r.offs = append(r.offs, r.pos)
		}
		v := r.readValue()
		r.stack = append(r.stack, v)
	}
	r.depth--
	r.close()
	return r.popItems(mark)
}

// popItems returns a copy of stack[mark:] and truncates the stack.
func (r *TextReader) popItems(mark int) []Value {
	n := len(r.stack) - mark
	if n == 0 {
		return nil
	}
	var out []Value
	if r.opts.Positions {
		out = r.valSlab.take(n, r.slabHint(4), 1024)
	} else {
		out = make([]Value, n)
	}
	copy(out, r.stack[mark:])
	clear(r.stack[mark:])
	r.stack = r.stack[:mark]
	return out
}

func (r *TextReader) readRecord() Value {
	start := r.pos
	r.pos++
	r.enter()
	r.open(start, "record")
	r.skipWS()
	if r.needIn(r.pos, "record") == '>' {
		r.fail(start, "record has no label")
	}
	label := r.readValue()
	mark := len(r.stack)
	for {
		r.skipWS()
		if r.needIn(r.pos, "record") == '>' {
			r.pos++
			break
		}
		v := r.readValue()
		r.stack = append(r.stack, v)
	}
	r.depth--
	r.close()
	var rec *Record
	if r.opts.Positions {
		rec = &r.recSlab.take(1, r.slabHint(32), 256)[0]
		rec.Label = label
		if n := len(r.stack) - mark; n > 0 {
			rec.Fields = r.valSlab.take(n, r.slabHint(4), 1024)
			copy(rec.Fields, r.stack[mark:])
		}
	} else {
		rec = textNewRecord(label, r.stack[mark:])
	}
	clear(r.stack[mark:])
	r.stack = r.stack[:mark]
	return rec
}

// textNewRecord builds a record with a copy of fields. Records with few
// fields (the common case) are allocated together with their field array:
// one allocation instead of two.
func textNewRecord(label Value, fields []Value) *Record {
	switch len(fields) {
	case 0:
		return &Record{Label: label}
	case 1:
		return recordWithArray(label, fields, func(a *[1]Value) []Value { return a[:] })
	case 2:
		return recordWithArray(label, fields, func(a *[2]Value) []Value { return a[:] })
	case 3:
		return recordWithArray(label, fields, func(a *[3]Value) []Value { return a[:] })
	}
	return &Record{Label: label, Fields: slices.Clone(fields)}
}

// recordWithArray allocates a record and its field array A (a [N]Value,
// which slice views) in one object, with a copy of fields.
func recordWithArray[A any](label Value, fields []Value, slice func(*A) []Value) *Record {
	x := &struct {
		r Record
		f A
	}{}
	fs := slice(&x.f)
	copy(fs, fields)
	x.r = Record{label, fs}
	return &x.r
}

func (r *TextReader) readSet(start int) Value {
	omark := len(r.offs)
	elems := r.readItems(start, '}', "set")
	offs := r.offs[omark:]
	r.offs = r.offs[:omark]
	if !textSortedStrictly(len(elems), func(i int) Value { return elems[i] }) {
		orig := slices.Clone(elems) // source order, for the error position
		slices.SortStableFunc(elems, Compare)
		for i := 1; i < len(elems); i++ {
			if Compare(elems[i-1], elems[i]) == 0 {
				r.fail(textSecondOccurrence(offs, len(orig), func(j int) Value { return orig[j] }, elems[i]),
					"duplicate set element %s", Show(Strip(elems[i])))
			}
		}
	}
	return &Set{elems: elems}
}

// textSecondOccurrence returns the source offset of the second of the n
// values (in source order, with offsets offs) equal to dup.
func textSecondOccurrence(offs []int, n int, at func(int) Value, dup Value) int {
	seen := false
	for j := 0; j < n; j++ {
		if Compare(at(j), dup) == 0 {
			if seen {
				return offs[j]
			}
			seen = true
		}
	}
	return offs[0]
}

func (r *TextReader) readDict() Value {
	r.open(r.pos, "dictionary")
	r.pos++
	r.enter()
	mark, omark := len(r.stack), len(r.offs)
	for {
		r.skipWSCommas()
		if r.needIn(r.pos, "dictionary") == '}' {
			r.pos++
			break
		}
		r.offs = append(r.offs, r.pos)
		k := r.readValue()
		r.stack = append(r.stack, k)
		r.skipWS()
		if c := r.needIn(r.pos, "dictionary"); c != ':' {
			r.fail(r.pos, "expected ':' after dictionary key, found %s", textQuoteByte(c))
		}
		r.pos++
		v := r.readValue()
		r.stack = append(r.stack, v)
	}
	r.depth--
	r.close()
	kv := r.stack[mark:]
	n := len(kv) / 2
	var entries []DictEntry
	if n > 0 {
		if r.opts.Positions {
			entries = r.entSlab.take(n, r.slabHint(64), 256)
		} else {
			entries = make([]DictEntry, n)
		}
		for i := range entries {
			entries[i] = DictEntry{kv[2*i], kv[2*i+1]}
		}
	}
	if !textSortedStrictly(n, func(i int) Value { return entries[i].Key }) {
		slices.SortStableFunc(entries, func(a, b DictEntry) int { return Compare(a.Key, b.Key) })
		for i := 1; i < n; i++ {
			if Compare(entries[i-1].Key, entries[i].Key) == 0 {
				at := textSecondOccurrence(r.offs[omark:], n, func(j int) Value { return kv[2*j] }, entries[i].Key)
				r.fail(at, "duplicate dictionary key %s", Show(Strip(entries[i].Key)))
			}
		}
	}
	clear(kv)
	r.stack = r.stack[:mark]
	r.offs = r.offs[:omark]
	if r.opts.Positions {
		d := &r.dictSlab.take(1, r.slabHint(256), 64)[0]
		d.entries = entries
		return d
	}
	return &Dictionary{entries: entries}
}

// textSortedStrictly reports whether the n values returned by at are in
// strictly ascending order, the common case for written-out data, which then
// needs neither sorting nor a duplicate check.
func textSortedStrictly(n int, at func(int) Value) bool {
	for i := 1; i < n; i++ {
		if Compare(at(i-1), at(i)) >= 0 {
			return false
		}
	}
	return true
}

// textSym is one slot of the symbol cache: a name and its boxed Value.
type textSym struct {
	name string
	v    Value
}

// symbol returns the Symbol s as a Value, interning short names so that
// repeated labels cost no allocation. The cache is direct-mapped by a hash of
// the name: a lookup is a hash and one string comparison, and a name missing
// from the cache simply takes its slot. (A map grown to thousands of names,
// per reader, cost about a fifth of reading a large script full of distinct
// names.) Its size is chosen once, from the input at hand: small inputs get
// a small table.
func (r *TextReader) symbol(s []byte) Value {
	if len(s) > 32 {
		return Symbol(s)
	}
	if r.syms == nil {
		n := 256 // a stream: its size is unknown
		if r.src == nil {
			n = 16
			for n < 1024 && n*64 < len(r.buf) {
				n *= 2
			}
		}
		r.syms = make([]textSym, n)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range s {
		h = (h ^ uint32(c)) * 16777619
	}
	e := &r.syms[h&uint32(len(r.syms)-1)]
	if e.v != nil && e.name == string(s) {
		return e.v
	}
	name := string(s)
	var v Value = Symbol(name)
	*e = textSym{name, v}
	return v
}

// readBare reads a bare token and classifies it as an integer, a double or a
// symbol by matching the whole token against the number patterns.
func (r *TextReader) readBare() Value {
	start := r.pos
	i := start
	for {
		if i >= len(r.buf) && !r.fill() {
			break
		}
		c := r.buf[i]
		if c < utf8.RuneSelf {
			if !textBareASCII[c] {
				break
			}
			i++
			continue
		}
		for i+utf8.UTFMax > len(r.buf) && r.fill() {
		}
		ru, n := utf8.DecodeRune(r.buf[i:])
		if ru == utf8.RuneError && n <= 1 {
			r.fail(i, "invalid UTF-8")
		}
		if !textBareRune(ru) {
			if i == start {
				r.fail(i, "unexpected %q", ru)
			}
			r.fail(i, "unexpected %q after token (expected whitespace or a delimiter)", ru)
		}
		i += n
	}
	r.pos = i
	r.checkDelimiter()
	tok := r.buf[start:i]
	switch textNumberKind(tok) {
	case textInt:
		return textParseInt(tok)
	case textDouble:
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
				r.fail(start, "bad number %q: %v", tok, err)
			}
			// Out of range: keep the ±Inf or ±0 that ParseFloat rounds to.
		}
		return NewDouble(f)
	}
	return r.symbol(tok)
}

const (
	textSymbol = iota
	textInt
	textDouble
)

// textNumberKind matches tok against
//
//	int = [+-]? digit+
//	flt = int ( "." digit+ [exp] | exp )      exp = ("e"|"E") [+-]? digit+
func textNumberKind[T string | []byte](tok T) int {
	i, n := 0, len(tok)
	digits := func() bool {
		j := i
		for i < n && '0' <= tok[i] && tok[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < n && (tok[i] == '+' || tok[i] == '-') {
		i++
	}
	if !digits() {
		return textSymbol
	}
	if i == n {
		return textInt
	}
	if tok[i] == '.' {
		i++
		if !digits() {
			return textSymbol
		}
		if i == n {
			return textDouble
		}
	}
	if tok[i] != 'e' && tok[i] != 'E' {
		return textSymbol
	}
	i++
	if i < n && (tok[i] == '+' || tok[i] == '-') {
		i++
	}
	if !digits() || i != n {
		return textSymbol
	}
	return textDouble
}

// textParseInt converts a token matching the int pattern.
func textParseInt(tok []byte) Value {
	neg := tok[0] == '-'
	ds := tok
	if tok[0] == '-' || tok[0] == '+' {
		ds = tok[1:]
	}
	if len(ds) <= 18 { // at most 10^18-1: fits in int64 without overflow checks
		var n int64
		for _, d := range ds {
			n = n*10 + int64(d-'0')
		}
		if neg {
			n = -n
		}
		return Int(n)
	}
	b := parseDecimal(ds, nil)
	if neg {
		b.Neg(b)
	}
	return NewBigInt(b)
}

// decimalChunk is the length up to which parseDecimal leaves the work to
// math/big, whose conversion from decimal is quadratic.
const decimalChunk = 1000

// parseDecimal converts a string of decimal digits in sub-quadratic time:
// math/big's SetString takes time quadratic in the length (28 s for 4 MB
// of digits), so long numbers are split in halves, converted recursively
// and joined by one multiplication by a power of ten (Karatsuba in
// math/big), powers cached by exponent. 4 MB of digits then take about
// 2.5 s.
func parseDecimal(ds []byte, pows map[int]*big.Int) *big.Int {
	if len(ds) <= decimalChunk {
		b, ok := new(big.Int).SetString(string(ds), 10)
		if !ok {
			panic("preserves: integer token rejected by math/big: " + string(ds))
		}
		return b
	}
	if pows == nil {
		pows = make(map[int]*big.Int)
	}
	lo := len(ds) / 2
	hi := parseDecimal(ds[:len(ds)-lo], pows)
	p, ok := pows[lo]
	if !ok {
		p = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(lo)), nil)
		pows[lo] = p
	}
	hi.Mul(hi, p)
	return hi.Add(hi, parseDecimal(ds[len(ds)-lo:], pows))
}

// readQuoted reads the body of a string ("…") or quoted symbol (|…|) after
// the opening quote and returns the decoded bytes. The result aliases either
// the input buffer or the scratch buffer: convert it before reading on.
func (r *TextReader) readQuoted(quote byte, start int, what string) []byte {
	i := r.pos
	// Fast path: no escapes. Find the closing quote and check for a backslash
	// before it, both with the vectorised byte search.
	for {
		j := bytes.IndexByte(r.buf[i:], quote)
		if j < 0 {
			if bytes.IndexByte(r.buf[i:], '\\') >= 0 {
				break
			}
			i = len(r.buf)
			if !r.fill() {
				r.failEOF(i, "unexpected end of input in %s", what)
			}
			continue
		}
		if k := bytes.IndexByte(r.buf[i:i+j], '\\'); k >= 0 {
			break
		}
		body := r.buf[r.pos : i+j]
		if !utf8.Valid(body) {
			r.fail(start, "invalid UTF-8 in %s", what)
		}
		r.pos = i + j + 1
		return body
	}
	// Slow path: decode escapes into scratch.
	out := append(r.scratch[:0], r.buf[r.pos:i]...)
	for {
		c := r.need(i, what)
		switch {
		case c == quote:
			r.pos = i + 1
			r.scratch = out
			if !utf8.Valid(out) {
				r.fail(start, "invalid UTF-8 in %s", what)
			}
			return out
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		e := r.need(i+1, what)
		switch e {
		case '\\', '/':
			out = append(out, e)
		case 'b', 'f', 'n', 'r', 't':
			out = append(out, textEscapes[e])
		case 'u':
			var ru rune
			ru, i = r.readUnicodeEscape(i, what)
			out = utf8.AppendRune(out, ru)
			continue
		default:
			if e != quote {
				r.fail(i, "invalid escape \\%c in %s", e, what)
			}
			out = append(out, e)
		}
		i += 2
	}
}

// readUnicodeEscape decodes \uXXXX at buf[i] (and its low-surrogate partner
// when XXXX is a high surrogate), returning the scalar and the index after it.
func (r *TextReader) readUnicodeEscape(i int, what string) (rune, int) {
	hex4 := func(at int) rune {
		var v rune
		for k := 0; k < 4; k++ {
			c := r.need(at+k, what)
			h := textHexVal(c)
			if h < 0 {
				r.fail(at+k, "invalid hex digit %s in \\u escape", textQuoteByte(c))
			}
			v = v<<4 | rune(h)
		}
		return v
	}
	hi := hex4(i + 2)
	switch {
	case 0xDC00 <= hi && hi <= 0xDFFF:
		r.fail(i, "unpaired low surrogate \\u%04X in %s", hi, what)
	case 0xD800 <= hi && hi <= 0xDBFF:
		j := i + 6
		if r.need(j, what) != '\\' || r.need(j+1, what) != 'u' {
			r.fail(i, "high surrogate \\u%04X not followed by a low surrogate escape", hi)
		}
		lo := hex4(j + 2)
		if lo < 0xDC00 || lo > 0xDFFF {
			r.fail(j, "high surrogate \\u%04X followed by \\u%04X, not a low surrogate", hi, lo)
		}
		return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), j + 6
	}
	return hi, i + 6
}

// readByteString reads the body of #"…" after the opening quote.
func (r *TextReader) readByteString(start int) []byte {
	out := r.scratch[:0]
	i := r.pos
	for {
		c := r.need(i, "byte string")
		if c == '"' {
			r.pos = i + 1
			r.scratch = out
			return out
		}
		if c != '\\' {
			if c < 0x20 || c > 0x7e {
				r.fail(i, "byte string may only contain printable ASCII, found %s", textQuoteByte(c))
			}
			out = append(out, c)
			i++
			continue
		}
		e := r.need(i+1, "byte string")
		switch e {
		case '\\', '/', '"':
			out = append(out, e)
		case 'b', 'f', 'n', 'r', 't':
			out = append(out, textEscapes[e])
		case 'x':
			var b byte
			for k := 2; k < 4; k++ {
				h := r.need(i+k, "byte string")
				v := textHexVal(h)
				if v < 0 {
					r.fail(i+k, "invalid hex digit %s in \\x escape", textQuoteByte(h))
				}
				b = b<<4 | byte(v)
			}
			out = append(out, b)
			i += 4
			continue
		default:
			r.fail(i, "invalid escape \\%s in byte string", string(rune(e)))
		}
		i += 2
	}
}

// readHex reads hex digit pairs up to the closing quote, whitespace being
// allowed only between pairs. want >= 0 demands exactly that many bytes.
func (r *TextReader) readHex(start, want int) []byte {
	what := "hex byte string"
	if want >= 0 {
		what = "hex double"
	}
	out := r.scratch[:0]
	i := r.pos
	for {
		// Fast path: whole pairs already in the buffer.
		for i+1 < len(r.buf) {
			hi, lo := textHexVal(r.buf[i]), textHexVal(r.buf[i+1])
			if hi < 0 || lo < 0 || (want >= 0 && len(out) == want) {
				break
			}
			out = append(out, byte(hi<<4|lo))
			i += 2
		}
		c := r.need(i, what)
		if textIsWS(c) {
			i++
			continue
		}
		if c == '"' {
			if want >= 0 && len(out) != want {
				r.fail(start, "#xd\"…\" needs exactly %d bytes, found %d", want, len(out))
			}
			r.pos = i + 1
			r.scratch = out
			return out
		}
		hi := textHexVal(c)
		if hi < 0 {
			r.fail(i, "invalid hex digit %s in %s", textQuoteByte(c), what)
		}
		c2 := r.need(i+1, what)
		lo := textHexVal(c2)
		if lo < 0 {
			r.fail(i+1, "incomplete hex pair: %s where a hex digit was expected", textQuoteByte(c2))
		}
		if want >= 0 && len(out) == want {
			r.fail(i, "#xd\"…\" needs exactly %d bytes", want)
		}
		out = append(out, byte(hi<<4|lo))
		i += 2
	}
}

// readBase64 reads the body of #[…]: standard or URL-safe alphabet, optional
// padding, whitespace anywhere.
func (r *TextReader) readBase64(start int) []byte {
	enc := r.scratch[:0]
	i := r.pos
	padded := false
	for {
		c := r.need(i, "base64 byte string")
		i++
		switch {
		case textIsWS(c):
			continue
		case c == ']':
		case c == '=':
			padded = true
			continue
		case padded:
			r.fail(i-1, "base64 data after '=' padding")
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/':
			enc = append(enc, c)
			continue
		case c == '-':
			enc = append(enc, '+')
			continue
		case c == '_':
			enc = append(enc, '/')
			continue
		default:
			r.fail(i-1, "invalid base64 character %s", textQuoteByte(c))
		}
		break
	}
	r.pos = i
	if len(enc)%4 == 1 {
		r.fail(start, "truncated base64 data")
	}
	n := base64.RawStdEncoding.DecodedLen(len(enc))
	buf := slices.Grow(enc, n)[:len(enc)+n]
	m, err := base64.RawStdEncoding.Decode(buf[len(enc):], enc)
	if err != nil {
		r.fail(start, "invalid base64 data: %v", err)
	}
	r.scratch = buf
	return buf[len(enc) : len(enc)+m]
}

// Offset is the byte offset in the input just after the last value Next
// returned (or the error it met): with a value read from src[i:], i +
// Offset() is where that value ends, so a tool can replace it in place.
func (r *TextReader) Offset() int { return r.base + r.pos }
