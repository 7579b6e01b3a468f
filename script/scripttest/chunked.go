// Package scripttest reads the chunked test files that hold the script
// language tests as data (script/testdata, script/vm/testdata). It is
// imported by tests only.
//
// # Format
//
// A file holds many small scripts separated by lines consisting of exactly
// "---". Within a chunk:
//
//   - A trailing "### COL: REGEXP" on a line expects an error at that line
//     and column whose message matches REGEXP. "### run COL: REGEXP" expects a
//     run-time error instead of a compile error. A line that consists only of
//     such a marker adds an expectation for the closest preceding code line,
//     so one line can expect several errors.
//   - A line starting "#= VERB REST" is a directive (for example
//     "#= want <a 1>"); its meaning is up to the test.
//
// Markers and directives are blanked out of the source handed to the
// compiler, and each chunk's source is padded with newlines so that line
// numbers are those of the whole file; error positions in test failures
// therefore point into the test file.
package scripttest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Expectation is one expected error.
type Expectation struct {
	Line, Col int
	Runtime   bool
	Rx        *regexp.Regexp
}

// Directive is a "#= VERB REST" line.
type Directive struct {
	Line int
	Verb string
	Arg  string
}

// Chunk is one script of a chunked file.
type Chunk struct {
	File       string
	Line       int    // first line of the chunk (1-based)
	Src        string // markers blanked, padded so lines match the file
	Expect     []Expectation
	Directives []Directive
}

// Name identifies the chunk in test output.
func (c *Chunk) Name() string { return fmt.Sprintf("line%d", c.Line) }

// Directive returns the arguments of every directive with the given verb.
func (c *Chunk) Args(verb string) []string {
	var out []string
	for _, d := range c.Directives {
		if d.Verb == verb {
			out = append(out, d.Arg)
		}
	}
	return out
}

var markerRx = regexp.MustCompile(`###\s*(run\s+)?(\d+):\s*(.*?)\s*$`)

// Read splits the file at path into chunks.
func Read(path string) ([]*Chunk, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(data))
}

// Parse splits text (named file) into chunks.
func Parse(file, text string) ([]*Chunk, error) {
	lines := strings.Split(text, "\n")
	var chunks []*Chunk
	var cur *Chunk
	var src []string
	lastCode := 0
	flush := func() {
		if cur != nil {
			cur.Src = strings.Repeat("\n", cur.Line-1) + strings.Join(src, "\n") + "\n"
			chunks = append(chunks, cur)
		}
	}
	for i, l := range lines {
		n := i + 1
		if strings.TrimSpace(l) == "---" {
			flush()
			cur = &Chunk{File: file, Line: n + 1}
			src = nil
			continue
		}
		if cur == nil {
			continue // preamble before the first separator
		}
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#=") {
			verb, arg, _ := strings.Cut(strings.TrimSpace(t[2:]), " ")
			cur.Directives = append(cur.Directives, Directive{Line: n, Verb: verb, Arg: strings.TrimSpace(arg)})
			src = append(src, "")
			continue
		}
		if k := strings.Index(l, "###"); k >= 0 {
			m := markerRx.FindStringSubmatch(l[k:])
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed ### marker", file, n)
			}
			line := n
			if strings.TrimSpace(l[:k]) == "" {
				if lastCode == 0 {
					return nil, fmt.Errorf("%s:%d: marker without a preceding code line", file, n)
				}
				line = lastCode
			} else {
				lastCode = n
			}
			col, _ := strconv.Atoi(m[2])
			rx, err := regexp.Compile(m[3])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", file, n, err)
			}
			cur.Expect = append(cur.Expect, Expectation{Line: line, Col: col, Runtime: m[1] != "", Rx: rx})
			src = append(src, l[:k])
			continue
		}
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lastCode = n
		}
		src = append(src, l)
	}
	flush()
	return chunks, nil
}

// Match checks got (each "file:line:col: message") against the chunk's
// expectations of the given kind and returns one complaint per mismatch.
func (c *Chunk) Match(runtime bool, got []string) []string {
	var problems []string
	used := make([]bool, len(got))
	for _, e := range c.Expect {
		if e.Runtime != runtime {
			continue
		}
		prefix := fmt.Sprintf("%s:%d:%d: ", c.File, e.Line, e.Col)
		found := false
		for i, g := range got {
			if !used[i] && strings.HasPrefix(g, prefix) && e.Rx.MatchString(g[len(prefix):]) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("missing error %s%s", prefix, e.Rx))
		}
	}
	for i, g := range got {
		if !used[i] {
			problems = append(problems, "unexpected error "+g)
		}
	}
	return problems
}
