package preserves

// Value boundaries in a stream. A byte stream of concatenated values (the
// Syndicate relay's packets, one per value, binary or text chosen per value
// by its first byte) must be cut into values before any of them is decoded:
// a value may arrive in any number of pieces, and a limit should bite as
// soon as it is passed rather than once the whole value is buffered. A
// Scanner finds where each value ends without building it. It is
// resumable: its state is a few integers, so bytes arriving in any
// chunking cost linear time in total. It only needs to find the end of a
// well-formed value; anything malformed it lets through is for the decoder
// (DecodeBinary, ParseTextOptions) to reject, which then runs exactly once
// over the value's exact bytes.

// Scanner finds where one value ends in binary or text syntax. Set the
// limits, call Begin at the value's first byte, then Scan as bytes arrive;
// after the value is done (or at any time) Begin starts the next one.
type Scanner struct {
	// MaxDepth bounds nesting (compounds); zero means DefaultMaxDepth.
	MaxDepth int
	// MaxLength bounds the declared length of one binary atom; zero means
	// DefaultMaxLength.
	MaxLength int
	// MaxValues bounds the values (atoms and compounds, at every depth) in
	// the value scanned; zero means no bound. Checked once per Scan call,
	// so a call may pass it by what that call's bytes hold.
	MaxValues int

	binary bool
	open   int // open compounds
	need   int // complete top-level values still needed (annotations add one)
	values int // values begun
	skip   int // binary: bytes of an atom body still to skip
	mode   scanMode
	quote  byte // text: the closer of the string being skipped
	esc    bool // text: the previous byte was a backslash
}

type scanMode uint8

const (
	smNormal  scanMode = iota
	smString           // inside "…", |…|, #"…", #x"…" (quote holds the closer)
	smBase64           // inside #[…]
	smComment          // to end of line
	smToken            // bare token (number, symbol, #t, …)
)

// IsBinaryStart reports whether a value whose first byte is c is in binary
// syntax (a binary tag) rather than text.
func IsBinaryStart(c byte) bool { return c >= 0x80 }

// Begin starts scanning a new value whose first byte is first; its syntax
// follows from that byte (IsBinaryStart).
func (s *Scanner) Begin(first byte) {
	s.binary = IsBinaryStart(first)
	s.open, s.need, s.values, s.skip = 0, 1, 0, 0
	s.mode, s.esc = smNormal, false
}

// Binary reports whether the value being scanned is in binary syntax.
func (s *Scanner) Binary() bool { return s.binary }

// Values returns how many values (at every depth) the scan has begun.
func (s *Scanner) Values() int { return s.values }

// Scan advances over b from pos, which must be where the previous call
// stopped (or the value's first byte), and returns where it stopped. done
// reports that the value ends at next. When b runs out first, call again
// with more bytes appended (b may be reallocated; positions are indexes).
// A top-level bare text atom ends only at the delimiter after it, which is
// why text values in a stream are followed by whitespace. Errors are
// *Error of class ErrSyntax (at the offending byte) or ErrLimit; after one
// the scanner's state is undefined until Begin.
func (s *Scanner) Scan(b []byte, pos int) (next int, done bool, err error) {
	if s.binary {
		next, done, err = s.scanBinary(b, pos)
	} else {
		next, done, err = s.scanText(b, pos)
	}
	if err == nil && s.MaxValues > 0 && s.values > s.MaxValues {
		err = &Error{Pos: Pos{Offset: next}, Msg: "holds more than " + itoa(s.MaxValues) + " values", Class: ErrLimit}
	}
	return next, done, err
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func (s *Scanner) maxDepth() int {
	if s.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return s.MaxDepth
}

func (s *Scanner) maxLength() int {
	if s.MaxLength <= 0 {
		return DefaultMaxLength
	}
	return s.MaxLength
}

func (s *Scanner) depthErr(p int) error {
	return &Error{Pos: Pos{Offset: p}, Msg: "nested deeper than " + itoa(s.maxDepth()), Class: ErrLimit}
}

func scanSyntaxErr(p int, msg string) error {
	return &Error{Pos: Pos{Offset: p}, Msg: msg, Class: ErrSyntax}
}

// valueEnd ends one value; at top level that may complete the scan.
func (s *Scanner) valueEnd() bool {
	if s.open == 0 {
		s.need--
		return s.need == 0
	}
	return false
}

// leaveAtom returns to normal mode at the end of a string, a base64
// byte string or a bare token, reporting whether that ended a value.
func (s *Scanner) leaveAtom() bool {
	s.mode = smNormal
	return s.valueEnd()
}

// scanBinary advances over binary syntax (spec §4).
func (s *Scanner) scanBinary(b []byte, p int) (int, bool, error) {
	maxDepth := s.maxDepth()
	for p < len(b) {
		if s.skip > 0 {
			n := min(s.skip, len(b)-p)
			p += n
			s.skip -= n
			if s.skip > 0 {
				return p, false, nil
			}
			if s.valueEnd() {
				return p, true, nil
			}
			continue
		}
		if s.open > 0 {
			if p = s.scanInside(b, p, maxDepth); p >= len(b) {
				break
			}
		}
		switch tag := b[p]; {
		case tag == TagFalse || tag == TagTrue:
			p++
			s.values++
			if s.valueEnd() {
				return p, true, nil
			}
		case tag == TagEnd:
			if s.open == 0 {
				return p, false, scanSyntaxErr(p, "unexpected end marker")
			}
			p++
			s.open--
			if s.valueEnd() {
				return p, true, nil
			}
		case tag == TagAnnotation:
			p++
			if s.open == 0 {
				s.need++
			}
		case tag == TagEmbedded:
			p++
		case tag == TagDouble || (tag >= TagInteger && tag <= TagSymbol):
			n, w, ok := scanVarint(b[p+1:])
			if !ok {
				return p, false, scanSyntaxErr(p+1, "bad length")
			}
			if w == 0 {
				return p, false, nil // the length has not fully arrived
			}
			if n > s.maxLength() {
				return p, false, &Error{Pos: Pos{Offset: p}, Msg: "holds an atom longer than " + itoa(s.maxLength()) + " bytes", Class: ErrLimit}
			}
			p += 1 + w
			s.values++
			if n == 0 {
				if s.valueEnd() {
					return p, true, nil
				}
				continue
			}
			s.skip = n
		case tag >= TagRecord && tag <= TagDictionary:
			p++
			s.values++
			s.open++
			if s.open > maxDepth {
				return p, false, s.depthErr(p - 1)
			}
		default:
			return p, false, scanSyntaxErr(p, "invalid binary tag")
		}
	}
	return p, false, nil
}

// scanInside is scanBinary's fast path, in locals, for the bulk of a
// value: inside a compound (so no top-level value can end), it steps over
// atoms with one-byte lengths whose bodies are buffered, simple atoms,
// opens within the depth limit and closes that leave a compound open. It
// stops at anything else, which the general loop then handles, limits and
// errors included.
func (s *Scanner) scanInside(b []byte, p, maxDepth int) int {
	open, values, maxLen := s.open, s.values, s.maxLength()
	for p+1 < len(b) {
		tag := b[p]
		switch {
		case tag >= TagInteger && tag <= TagSymbol:
			n := int(b[p+1])
			if n >= 0x80 || n > maxLen || p+2+n > len(b) {
				s.open, s.values = open, values
				return p
			}
			p += 2 + n
			values++
		case tag >= TagRecord && tag <= TagDictionary && open < maxDepth:
			open++
			p++
			values++
		case tag == TagEnd && open > 1:
			open--
			p++
		case tag == TagFalse || tag == TagTrue:
			p++
			values++
		case tag == TagEmbedded:
			p++
		default:
			s.open, s.values = open, values
			return p
		}
	}
	s.open, s.values = open, values
	return p
}

// isTextDelim reports whether c ends a bare text token.
func isTextDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '[', ']', '<', '>', '{', '}', '"', ';', '@', '|':
		return true
	}
	return c == '\f' || c == '\v'
}

// scanText advances over text syntax (the text spec): strings, quoted
// symbols, byte strings in every form, comments and bare tokens are
// stepped over; brackets are counted.
func (s *Scanner) scanText(b []byte, p int) (int, bool, error) {
	for p < len(b) {
		c := b[p]
		switch s.mode {
		case smString:
			p++
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == s.quote:
				if s.leaveAtom() {
					return p, true, nil
				}
			}
			continue
		case smBase64:
			p++
			if c == ']' {
				if s.leaveAtom() {
					return p, true, nil
				}
			}
			continue
		case smComment:
			p++
			if c == '\n' || c == '\r' {
				s.mode = smNormal
			}
			continue
		case smToken:
			if isTextDelim(c) {
				if s.leaveAtom() {
					return p, true, nil
				}
				continue // re-examine c in normal mode
			}
			p++
			continue
		}
		var more bool
		var err error
		if p, more, err = s.textNormal(b, p); err != nil || more {
			return p, false, err
		}
		if s.need == 0 {
			return p, true, nil
		}
	}
	return p, false, nil
}

// textNormal takes one step of scanText outside strings, comments and
// tokens. more reports that b ends before the step can be decided; a
// completed value shows as s.need == 0.
func (s *Scanner) textNormal(b []byte, p int) (next int, more bool, err error) {
	switch c := b[p]; c {
	case ' ', '\t', '\n', '\r', ',', '\f', '\v':
		p++
	case ';':
		p++
		s.mode = smComment
	case '"', '|':
		p++
		s.values++
		s.mode, s.quote = smString, c
	case '[', '<', '{':
		p++
		s.values++
		if s.open++; s.open > s.maxDepth() {
			return p, false, s.depthErr(p - 1)
		}
	case ']', '>', '}':
		if s.open == 0 {
			return p, false, scanSyntaxErr(p, "unbalanced closing bracket")
		}
		p++
		s.open--
		s.valueEnd()
	case '@':
		p++
		if s.open == 0 {
			s.need++
		}
	case '#':
		return s.textHash(b, p)
	default:
		p++
		s.values++
		s.mode = smToken
	}
	return p, false, nil
}

// textHash is textNormal at a '#': a comment, an embedded value's prefix,
// a byte string (#"…", #x"…", #[…]), a set, a double in hex (#xd"…") or a
// token (#t, #f).
func (s *Scanner) textHash(b []byte, p int) (int, bool, error) {
	if p+1 >= len(b) {
		return p, true, nil
	}
	switch d := b[p+1]; d {
	case ':':
		p += 2
	case '"':
		p += 2
		s.values++
		s.mode, s.quote = smString, '"'
	case '[':
		p += 2
		s.values++
		s.mode = smBase64
	case '{':
		p += 2
		s.values++
		if s.open++; s.open > s.maxDepth() {
			return p, false, s.depthErr(p - 2)
		}
	case ' ', '\t', '\n', '\r', '!':
		p += 2
		s.mode = smComment
		if d == '\n' || d == '\r' {
			s.mode = smNormal
		}
	case 'x':
		// #x"hex" and #xd"hex-double" are strings; anything else a token.
		if p+2 >= len(b) || (b[p+2] == 'd' && p+3 >= len(b)) {
			return p, true, nil
		}
		s.values++
		switch {
		case b[p+2] == '"':
			p += 3
			s.mode, s.quote = smString, '"'
		case b[p+2] == 'd' && b[p+3] == '"':
			p += 4
			s.mode, s.quote = smString, '"'
		default:
			p += 2
			s.mode = smToken
		}
	default:
		p++
		s.values++
		s.mode = smToken
	}
	return p, false, nil
}
