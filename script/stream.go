package script

import (
	"bytes"
	"errors"
	"io"

	"github.com/syndicate-go/syndicate/preserves"
)

// Parsing a big file as it is read (issue 28: the peak while loading).
//
// ParseFile reads every value of a file before parsing it, and its tree
// holds each literal's annotated value (Lit.Src, for the compiler's
// positions): for a config file of 300,000 small facts the reader's
// annotated values alone are 300 bytes a fact, all live at once. A caller
// that takes the top-level instructions one at a time (the compiler, which
// compiles each as it comes) lets ParseFileEach read the tokens through a
// window instead, so that only the tokens of the instructions not yet
// parsed and the instructions not yet taken are live.
//
// The window changes nothing the parser sees. An instruction is parsed
// from the window; one whose tokens run to the window's end (it may go on
// past it, or be cut short there: every "missing operand" ends there) is
// parsed again once the window holds more, with what its first attempt
// recorded (errors, warnings, caveats) undone. A conditional at the top
// level takes the rest of the file as its ELSE, so it is parsed again until
// the window holds the whole rest; the window doubles each time, so that
// costs a constant factor at most. Anything the reader finds wrong (a
// syntax error) sends the whole file to ParseFile, whose errors say
// exactly what and where.

// streamWindow is the number of tokens read ahead at least (a variable for
// the tests).
var streamWindow = 256

// ParseFileEach parses src like ParseFile, handing each top-level
// instruction, in order, to each as soon as it is parsed; the returned
// File has no Body. When the returned errors are empty, each has received
// every top-level instruction ParseFile would have given, once; otherwise
// File and errors are ParseFile's, and what each received is to be
// discarded.
func ParseFileEach(file string, src []byte, each func(Instr)) (*File, ErrorList) {
	s := &tokenStream{r: preserves.NewTextReader(bytes.NewReader(src), textOptions(file)), src: src, file: file}
	p := &parser{file: file}
	f, ok := p.stream(s, each)
	if !ok {
		return ParseFile(file, src)
	}
	return f, p.errs
}

// tokenStream is the window of top-level tokens read and not yet parsed.
type tokenStream struct {
	r    *preserves.TextReader
	src  []byte
	file string
	toks []preserves.Value
	read int  // tokens read in all
	eof  bool // the reader is done
	bad  bool // the reader found src wrong
}

// fill reads until the window holds n tokens or the input ends.
func (s *tokenStream) fill(n int) {
	for len(s.toks) < n && !s.eof {
		v, err := s.r.Next()
		switch {
		case err == nil:
			s.toks = append(s.toks, v)
			s.read++
		case err == io.EOF:
			s.eof = true
		default:
			s.eof = true
			// A file ending in comments is read as ReadValues does:
			// fine if the anchor it appends makes it whole.
			s.bad = !errors.Is(err, preserves.ErrUnexpectedEOF) || !s.endsInComments()
		}
	}
}

// endsInComments reports whether src with ReadValues' anchor appended
// reads without error as the tokens read so far and the anchor.
func (s *tokenStream) endsInComments() bool {
	r := preserves.NewTextReader(io.MultiReader(bytes.NewReader(s.src), bytes.NewReader([]byte("\n[]"))), textOptions(s.file))
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n == s.read+1
		}
		if err != nil {
			return false
		}
		n++
	}
}

// drop forgets the window's first n tokens.
func (s *tokenStream) drop(n int) {
	k := copy(s.toks, s.toks[n:])
	clear(s.toks[k:])
	s.toks = s.toks[:k]
}

// stream is file1 over a window of s, handing the top-level instructions
// to each; false if the reader found src wrong.
func (p *parser) stream(s *tokenStream, each func(Instr)) (*File, bool) {
	s.fill(streamWindow)
	i := 0
	for {
		if i+1 >= len(s.toks) && !s.eof {
			s.fill(len(s.toks) + streamWindow) // a directive and its name
			continue
		}
		if i >= len(s.toks) || !isDirective(s.toks[i]) {
			break
		}
		i = p.directive(s.toks, i)
	}
	var first preserves.Value // the first instruction's token
	if i < len(s.toks) {
		first = s.toks[i]
	}
	for {
		if i >= len(s.toks) {
			if s.eof {
				break
			}
			s.drop(i)
			i = 0
			s.fill(streamWindow)
			continue
		}
		errs, warns, cavs := len(p.errs), len(p.warns), len(p.caveats)
		in, next := p.instr(s.toks, i, true)
		if next >= len(s.toks) && !s.eof {
			// It may go on past the window: parse it again with more.
			clear(p.errs[errs:])
			clear(p.warns[warns:])
			clear(p.caveats[cavs:])
			p.errs, p.warns, p.caveats = p.errs[:errs], p.warns[:warns], p.caveats[:cavs]
			s.drop(i)
			i = 0
			s.fill(2*len(s.toks) + streamWindow)
			continue
		}
		if in != nil {
			each(in)
		}
		i = next
	}
	if s.bad {
		return nil, false
	}
	f := &File{Name: p.file, Dialect: p.dialect}
	if first != nil {
		p.finishDialect(first)
	}
	p.errs.Sort()
	p.warns.Sort()
	f.Warnings = p.warns
	return f, true
}
