package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// ErrSchema is the class of every error in a schema itself (reading,
// checking, generating): test with errors.Is.
var ErrSchema = errors.New("schema error")

// Error is a mistake in a schema, with where it is.
type Error struct {
	Pos preserves.Pos
	Msg string
}

func (e *Error) Error() string {
	return e.Pos.Prefix(e.Msg)
}

func (e *Error) Unwrap() error { return ErrSchema }

func errAt(v preserves.Value, format string, args ...any) *Error {
	return &Error{Pos: preserves.PosOf(v), Msg: fmt.Sprintf(format, args...)}
}

// ReadDir reads every .prs file below dir into one bundle, each file a
// module named by its path relative to dir. Files in skip (relative
// slash-separated paths, such as "meta/schema.prs") are left out.
func ReadDir(dir string, skip ...string) (*Bundle, error) {
	b := &Bundle{}
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".prs") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if slices.Contains(skip, rel) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m, err := ReadModule(path, src, ModulePath(strings.Split(strings.TrimSuffix(rel, ".prs"), "/")))
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		b.Modules = append(b.Modules, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(b.Modules, func(i, j int) bool { return b.Modules[i].Path.String() < b.Modules[j].Path.String() })
	return b, nil
}

// ReadModule reads one schema file in the text syntax into the abstract
// form, reporting the first mistake with its position.
func ReadModule(file string, src []byte, path ModulePath) (*Module, error) {
	vals, err := preserves.ReadAllText(src, preserves.TextOptions{File: file, Annotations: true, Positions: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	m := &Module{Path: path, File: file}
	var clause []preserves.Value
	seenVersion, seenEmbedded := false, false
	for _, v := range vals {
		if !isSym(v, ".") {
			clause = append(clause, v)
			continue
		}
		items := clause
		clause = nil
		if len(items) == 0 {
			continue // a comment and a lone ".", as at the end of noise.prs
		}
		switch {
		case isSym(items[0], "version"):
			if seenVersion {
				return nil, errAt(items[0], "a second version clause")
			}
			seenVersion = true
			if len(items) != 2 || !preserves.Equal(items[1], preserves.Int(1)) {
				return nil, errAt(items[0], "the only schema version is `version 1 .`")
			}
		case isSym(items[0], "embeddedType"):
			if seenEmbedded {
				return nil, errAt(items[0], "a second embeddedType clause")
			}
			seenEmbedded = true
			if len(items) != 2 {
				return nil, errAt(items[0], "expected `embeddedType #f .` or `embeddedType Module.Name .`")
			}
			switch x := preserves.Unwrap(items[1]).(type) {
			case preserves.Bool:
				if x {
					return nil, errAt(items[1], "embeddedType is #f or a reference")
				}
			case preserves.Symbol:
				m.EmbeddedType = refOf(items[1], string(x))
			default:
				return nil, errAt(items[1], "embeddedType is #f or a reference")
			}
		case isSym(items[0], "include"):
			return nil, errAt(items[0], "include is not supported: give each file its own module")
		case len(items) >= 2 && isSym(items[1], "="):
			d, err := readDefinition(items)
			if err != nil {
				return nil, err
			}
			if m.Definition(d.Name) != nil {
				return nil, errAt(items[0], "%s is defined twice", d.Name)
			}
			m.Definitions = append(m.Definitions, d)
		default:
			return nil, errAt(items[0], "expected `version 1`, `embeddedType …` or `Name = pattern`; a clause ends with ` .` (a `.` touching a word, as in `int.`, is part of the word)")
		}
	}
	if len(clause) > 0 {
		return nil, errAt(clause[0], "clause not terminated by ` .`")
	}
	if !seenVersion {
		return nil, &Error{Pos: preserves.Pos{File: file}, Msg: "missing `version 1 .`"}
	}
	return m, nil
}

func isSym(v preserves.Value, s string) bool {
	x, ok := preserves.Unwrap(v).(preserves.Symbol)
	return ok && string(x) == s
}

// annotations of v: the binding symbols and the comment lines.
func annotations(v preserves.Value) (binds []string, doc []string) {
	a, ok := v.(*preserves.Annotated)
	if !ok {
		return nil, nil
	}
	for _, x := range a.Anns {
		switch y := preserves.Unwrap(x).(type) {
		case preserves.Symbol:
			binds = append(binds, string(y))
		case preserves.String:
			doc = append(doc, string(y))
		}
	}
	return binds, doc
}

func readDefinition(items []preserves.Value) (*Definition, error) {
	name, ok := preserves.Unwrap(items[0]).(preserves.Symbol)
	if !ok {
		return nil, errAt(items[0], "a definition's name is a symbol")
	}
	_, doc := annotations(items[0])
	d := &Definition{Name: string(name), Pos: preserves.PosOf(items[0]), Doc: doc}
	body := items[2:]
	if len(body) == 0 {
		return nil, errAt(items[0], "%s has an empty body", name)
	}
	hasOr, hasAnd := false, false
	for _, v := range body {
		hasOr = hasOr || isSym(v, "/")
		hasAnd = hasAnd || isSym(v, "&")
	}
	switch {
	case hasOr && hasAnd:
		return nil, errAt(items[0], "%s mixes / and &: give one side its own definition", name)
	case hasOr:
		pieces, err := split(body, "/")
		if err != nil {
			return nil, err
		}
		labels := map[string]bool{}
		for _, v := range pieces {
			a, err := readAlternative(v)
			if err != nil {
				return nil, err
			}
			if labels[a.Label] {
				return nil, errAt(v, "two alternatives of %s are labelled %q: add @name", name, a.Label)
			}
			labels[a.Label] = true
			d.Or = append(d.Or, a)
		}
		if len(d.Or) < 2 {
			return nil, errAt(items[0], "%s has a single alternative: drop the /", name)
		}
	case hasAnd:
		pieces, err := split(body, "&")
		if err != nil {
			return nil, err
		}
		for _, v := range pieces {
			n, err := readNamed(v)
			if err != nil {
				return nil, err
			}
			d.And = append(d.And, n)
		}
		if len(d.And) < 2 {
			return nil, errAt(items[0], "%s has a single part: drop the &", name)
		}
	default:
		if len(body) != 1 {
			return nil, errAt(body[1], "%s: a definition body is one pattern (or alternatives separated by /, or parts by &)", name)
		}
		if binds, _ := annotations(body[0]); len(binds) > 0 {
			return nil, errAt(body[0], "%s: a binding (@%s) on a whole definition has no place to go", name, binds[0])
		}
		p, err := readPattern(body[0])
		if err != nil {
			return nil, err
		}
		d.Pattern = p
	}
	return d, nil
}

// split cuts body at every sep (one leading sep allowed); every piece is
// one value.
func split(body []preserves.Value, sep string) ([]preserves.Value, error) {
	first := body[0]
	if isSym(first, sep) {
		body = body[1:]
	}
	if len(body) == 0 {
		return nil, errAt(first, "nothing after %s", sep)
	}
	var out []preserves.Value
	start := 0
	for i := 0; i <= len(body); i++ {
		if i < len(body) && !isSym(body[i], sep) {
			continue
		}
		switch n := i - start; {
		case n == 0:
			at := body[min(i, len(body)-1)]
			return nil, errAt(at, "nothing between two %s", sep)
		case n > 1:
			return nil, errAt(body[start+1], "expected %s between alternatives, each one value", sep)
		}
		out = append(out, body[start])
		start = i + 1
	}
	return out, nil
}

func readAlternative(v preserves.Value) (Alternative, error) {
	binds, doc := annotations(v)
	a := Alternative{Pos: preserves.PosOf(v), Doc: doc}
	p, err := readPattern(v)
	if err != nil {
		return a, err
	}
	a.Pattern = p
	switch len(binds) {
	case 0:
	case 1:
		a.Label = binds[0]
		return a, nil
	default:
		return a, errAt(v, "an alternative has one @name, not %d", len(binds))
	}
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Symbol:
		s := string(x)
		if strings.HasPrefix(s, "=") {
			a.Label = s[1:]
		} else if _, ok := p.(*Ref); ok {
			a.Label = s[strings.LastIndexByte(s, '.')+1:]
		}
	case preserves.Bool:
		a.Label = map[bool]string{true: "true", false: "false"}[bool(x)]
	case *preserves.Record:
		if l, ok := preserves.Unwrap(x.Label).(preserves.Symbol); ok {
			a.Label = string(l)
		}
	}
	if a.Label == "" {
		return a, errAt(v, "this alternative needs a label: write @name before it")
	}
	return a, nil
}

// readNamed reads a pattern in a NamedPattern place: a binding makes it
// <named …> and requires a simple pattern.
func readNamed(v preserves.Value) (NamedPattern, error) {
	binds, _ := annotations(v)
	n := NamedPattern{Pos: preserves.PosOf(v)}
	if len(binds) > 1 {
		return n, errAt(v, "one binding per pattern, not @%s", strings.Join(binds, " @"))
	}
	p, err := readPattern(v)
	if err != nil {
		return n, err
	}
	n.Pattern = p
	if len(binds) == 1 {
		if !isSimple(p) {
			return n, errAt(v, "@%s names a record, tuple or dictionary pattern: give it a definition of its own and refer to that", binds[0])
		}
		n.Name = binds[0]
	}
	return n, nil
}

func readSimple(v preserves.Value) (Pattern, error) {
	p, err := readPattern(v)
	if err == nil && !isSimple(p) {
		return nil, errAt(v, "expected a simple pattern here (a record, tuple or dictionary pattern needs a definition of its own)")
	}
	return p, err
}

func isSimple(p Pattern) bool {
	switch p.(type) {
	case Rec, Tuple, TuplePrefix, Dict:
		return false
	}
	return true
}

func refOf(v preserves.Value, s string) *Ref {
	parts := strings.Split(s, ".")
	return &Ref{Module: ModulePath(parts[:len(parts)-1]), Name: parts[len(parts)-1], Pos: preserves.PosOf(v)}
}

var atomKinds = map[string]AtomKind{
	"bool": Boolean, "double": Double, "int": SignedInteger,
	"string": String, "bytes": ByteString, "symbol": Symbol,
}

func readPattern(v preserves.Value) (Pattern, error) {
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "any":
			return Any{}, nil
		case atomKinds[s] != "":
			return Atom{atomKinds[s]}, nil
		case s == "float":
			return nil, errAt(v, "there is no float atom kind any more: use double")
		case strings.HasPrefix(s, "=") && len(s) > 1:
			return Lit{preserves.Symbol(s[1:])}, nil
		case s == "..." || s == "=" || s == "/" || s == "&" || s == ".":
			return nil, errAt(v, "%s is not a pattern here", s)
		}
		for _, part := range strings.Split(s, ".") {
			if part == "" {
				return nil, errAt(v, "%s is not a reference (an empty segment; a clause ends with ` .`)", s)
			}
		}
		return refOf(v, s), nil
	case *preserves.Embedded:
		pv, ok := x.Payload.(preserves.Value)
		if !ok {
			return nil, errAt(v, "unexpected embedded payload")
		}
		p, err := readSimple(pv)
		if err != nil {
			return nil, err
		}
		return Embedded{p}, nil
	case *preserves.Record:
		return readRecord(v, x)
	case preserves.Sequence:
		if n := len(x); n > 0 && isSym(x[n-1], "...") {
			if n == 1 {
				return nil, errAt(v, "`...` follows the pattern it repeats")
			}
			if binds, _ := annotations(x[0]); n == 2 && len(binds) == 0 {
				p, err := readSimple(x[0])
				if err != nil {
					return nil, err
				}
				return SeqOf{p}, nil
			}
			return readTail(x[:n-2], x[n-2])
		}
		elems, err := readNamedAll(x)
		if err != nil {
			return nil, err
		}
		return Tuple{elems}, nil
	case *preserves.Set:
		if x.Len() != 1 {
			return nil, errAt(v, "a set pattern #{p} has exactly one element")
		}
		p, err := readSimple(x.Elems()[0])
		if err != nil {
			return nil, err
		}
		return SetOf{p}, nil
	case *preserves.Dictionary:
		return readDict(v, x)
	default:
		return Lit{preserves.Strip(x)}, nil
	}
}

func readNamedAll(vs []preserves.Value) ([]NamedPattern, error) {
	out := make([]NamedPattern, len(vs))
	for i, v := range vs {
		n, err := readNamed(v)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// readTail reads `fixed… t ...`: the tail binding names the whole list.
func readTail(fixed []preserves.Value, tail preserves.Value) (Pattern, error) {
	fs, err := readNamedAll(fixed)
	if err != nil {
		return nil, err
	}
	if fs == nil {
		fs = []NamedPattern{}
	}
	binds, _ := annotations(tail)
	if len(binds) > 1 {
		return nil, errAt(tail, "one binding per pattern")
	}
	p, err := readSimple(tail)
	if err != nil {
		return nil, err
	}
	n := NamedPattern{Pattern: SeqOf{p}, Pos: preserves.PosOf(tail)}
	if len(binds) == 1 {
		n.Name = binds[0]
	}
	return TuplePrefix{Fixed: fs, Variable: n}, nil
}

func readRecord(v preserves.Value, r *preserves.Record) (Pattern, error) {
	if l, ok := preserves.Unwrap(r.Label).(*preserves.Record); ok && len(l.Fields) == 0 {
		switch {
		case isSym(l.Label, "rec"):
			if len(r.Fields) != 2 {
				return nil, errAt(v, "<<rec> label fields> takes two patterns")
			}
			lab, err := readNamed(r.Fields[0])
			if err != nil {
				return nil, err
			}
			fs, err := readNamed(r.Fields[1])
			if err != nil {
				return nil, err
			}
			return Rec{lab, fs}, nil
		case isSym(l.Label, "lit"):
			if len(r.Fields) != 1 {
				return nil, errAt(v, "<<lit> value> takes one value")
			}
			return Lit{preserves.Strip(r.Fields[0])}, nil
		}
	}
	label := NamedPattern{Pattern: Lit{preserves.Strip(r.Label)}, Pos: preserves.PosOf(r.Label)}
	var fields Pattern
	if n := len(r.Fields); n > 0 && isSym(r.Fields[n-1], "...") {
		if n == 1 {
			return nil, errAt(v, "`...` follows the pattern it repeats")
		}
		p, err := readTail(r.Fields[:n-2], r.Fields[n-2])
		if err != nil {
			return nil, err
		}
		fields = p
	} else {
		elems, err := readNamedAll(r.Fields)
		if err != nil {
			return nil, err
		}
		if elems == nil {
			elems = []NamedPattern{}
		}
		fields = Tuple{elems}
	}
	return Rec{Label: label, Fields: NamedPattern{Pattern: fields, Pos: preserves.PosOf(v)}}, nil
}

func readDict(v preserves.Value, d *preserves.Dictionary) (Pattern, error) {
	es := d.Entries()
	for _, e := range es {
		if isSym(e.Key, "...") {
			if len(es) != 2 || !isSym(e.Value, "...") {
				return nil, errAt(v, "a dictionary-of pattern is exactly {key: value ...:...}")
			}
			other := es[0]
			if isSym(other.Key, "...") {
				other = es[1]
			}
			k, err := readSimple(other.Key)
			if err != nil {
				return nil, err
			}
			val, err := readSimple(other.Value)
			if err != nil {
				return nil, err
			}
			return DictOf{k, val}, nil
		}
	}
	out := Dict{Entries: []DictEntry{}}
	for _, e := range es {
		binds, _ := annotations(e.Value)
		n, err := readNamed(e.Value)
		if err != nil {
			return nil, err
		}
		if !isSimple(n.Pattern) {
			return nil, errAt(e.Value, "a dictionary entry's pattern is simple: give it a definition of its own")
		}
		key := preserves.Strip(e.Key)
		if s, ok := key.(preserves.Symbol); ok && len(binds) == 0 {
			n.Name = string(s)
		}
		out.Entries = append(out.Entries, DictEntry{Key: key, Pattern: n})
	}
	return out, nil
}
