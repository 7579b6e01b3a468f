package main

// PATTERN and VALUE arguments are Preserves text. In a pattern, `_` matches
// anything, `?name` (or a bare `?`) captures, and `=sym` is the literal
// symbol sym (for matching a symbol that starts with `_`, `?` or `=`);
// records, sequences and dictionaries become dataspace pattern groups, which
// match extensibly (extra fields, items or keys are allowed). A record label
// and dictionary keys must be literal; sets and embedded values are not
// patterns. This mirrors the pattern syntax of the script language (services
// spec §4.7), without its `$var` references, which have no meaning here.

import (
	"fmt"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// argError is an error in a PATTERN or VALUE argument, with the position
// (line:col within the argument) where there is one.
type argError struct {
	what string // "pattern" or "value"
	pos  preserves.Pos
	msg  string
}

func (e *argError) Error() string {
	if e.pos.IsValid() {
		return fmt.Sprintf("bad %s at %d:%d: %s", e.what, e.pos.Line, e.pos.Col, e.msg)
	}
	return fmt.Sprintf("bad %s: %s", e.what, e.msg)
}

// readArg parses one Preserves value from a command-line argument, with
// positions.
func readArg(what, text string) (preserves.Value, error) {
	v, err := preserves.ParseTextOptions([]byte(text), preserves.TextOptions{Positions: true})
	if err != nil {
		if pe, ok := err.(*preserves.Error); ok {
			return nil, &argError{what: what, pos: pe.Pos, msg: pe.Detail()}
		}
		return nil, &argError{what: what, msg: err.Error()}
	}
	return v, nil
}

// parseValue reads a VALUE argument (no embedded values).
func parseValue(text string) (preserves.Value, error) {
	v, err := readArg("value", text)
	if err != nil {
		return nil, err
	}
	if p, ok := findEmbedded(v); ok {
		return nil, &argError{what: "value", pos: p, msg: "embedded values cannot be written on the command line"}
	}
	return preserves.Strip(v), nil
}

// findEmbedded returns the position of the first embedded value in v
// (depth first).
func findEmbedded(v preserves.Value) (pos preserves.Pos, found bool) {
	var visit func(v preserves.Value) bool
	visit = func(v preserves.Value) bool {
		if _, ok := preserves.Unwrap(v).(*preserves.Embedded); ok {
			pos = preserves.PosOf(v)
			return true
		}
		return preserves.AnyPart(preserves.Unwrap(v), visit)
	}
	return pos, visit(v)
}

// patternArg reads the optional PATTERN argument of a command (nil when
// there is none).
func patternArg(args []string) (pattern.Pattern, error) {
	if len(args) == 0 {
		return nil, nil
	}
	return parsePattern(args[0])
}

// parsePattern reads a PATTERN argument.
func parsePattern(text string) (pattern.Pattern, error) {
	v, err := readArg("pattern", text)
	if err != nil {
		return nil, err
	}
	return toPattern(v)
}

func toPattern(v preserves.Value) (pattern.Pattern, error) {
	bad := func(format string, args ...any) error {
		return &argError{what: "pattern", pos: preserves.PosOf(v), msg: fmt.Sprintf(format, args...)}
	}
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "_":
			return pattern.Discard{}, nil
		case strings.HasPrefix(s, "?"):
			return pattern.Bind{Pattern: pattern.Discard{}}, nil
		case strings.HasPrefix(s, "="):
			return pattern.Lit{Value: preserves.Symbol(s[1:])}, nil
		}
		return pattern.Lit{Value: x}, nil
	case *preserves.Record:
		if isWild(x.Label) {
			return nil, &argError{what: "pattern", pos: preserves.PosOf(x.Label), msg: "a record label must be literal"}
		}
		fields, err := toPatterns(x.Fields)
		if err != nil {
			return nil, err
		}
		return pattern.Rec(preserves.Strip(x.Label), fields...), nil
	case preserves.Sequence:
		items, err := toPatterns(x)
		if err != nil {
			return nil, err
		}
		return pattern.Arr(items...), nil
	case *preserves.Dictionary:
		entries := make([]pattern.Entry, 0, x.Len())
		for _, e := range x.Entries() {
			if isWild(e.Key) {
				return nil, &argError{what: "pattern", pos: preserves.PosOf(e.Key), msg: "dictionary keys must be literal"}
			}
			p, err := toPattern(e.Value)
			if err != nil {
				return nil, err
			}
			entries = append(entries, pattern.Entry{Key: preserves.Strip(e.Key), Pattern: p})
		}
		return pattern.Dict(entries...), nil
	case *preserves.Set:
		return nil, bad("sets are not allowed in patterns")
	case *preserves.Embedded:
		return nil, bad("embedded values are not allowed in patterns")
	}
	return pattern.Lit{Value: preserves.Strip(v)}, nil
}

func toPatterns(vs []preserves.Value) ([]pattern.Pattern, error) {
	ps := make([]pattern.Pattern, len(vs))
	for i, v := range vs {
		p, err := toPattern(v)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

func isWild(v preserves.Value) bool {
	s, ok := preserves.Unwrap(v).(preserves.Symbol)
	return ok && (s == "_" || strings.HasPrefix(string(s), "?"))
}
