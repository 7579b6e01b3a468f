package main

// PATTERN and VALUE arguments are Preserves text. A PATTERN is a pattern of
// the script language, read by the script front end and compiled by its
// compiler (script.ParsePattern, compile.Pattern): `_` matches anything,
// `?name` (or a bare `?`) and `<?name P>` capture, `=sym` is the literal
// symbol sym, and records, sequences and dictionaries match extensibly
// (extra fields, items or keys are allowed). A record label and dictionary
// keys are literal; sets, embedded values and `$var` references (there is
// no environment here) are refused.

import (
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
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

// readArg parses one Preserves value from a command-line argument. It
// returns it twice: positioned (every value wrapped in *Annotated), for
// the checks whose errors name line:col, and plain, as the command sends
// or shows it. This is where the command strips annotations: values from
// the server arrive plain, since the relay's decoders drop them.
func readArg(what, text string) (positioned, plain preserves.Value, err error) {
	v, err := preserves.ParseTextOptions([]byte(text), preserves.TextOptions{Positions: true})
	if err != nil {
		if pe, ok := err.(*preserves.Error); ok {
			return nil, nil, &argError{what: what, pos: pe.Pos, msg: pe.Msg}
		}
		return nil, nil, &argError{what: what, msg: err.Error()}
	}
	return v, preserves.Strip(v), nil
}

// readValue reads a VALUE argument (no embedded values), positioned and
// plain (readArg).
func readValue(text string) (positioned, plain preserves.Value, err error) {
	v, plain, err := readArg("value", text)
	if err != nil {
		return nil, nil, err
	}
	if p, ok := findEmbedded(v); ok {
		return nil, nil, &argError{what: "value", pos: p, msg: "embedded values cannot be written on the command line"}
	}
	return v, plain, nil
}

// parseValue reads a VALUE argument (no embedded values).
func parseValue(text string) (preserves.Value, error) {
	_, v, err := readValue(text)
	return v, err
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
	v, _, err := readArg("pattern", text)
	if err != nil {
		return nil, err
	}
	return toPattern(v)
}

// toPattern compiles the parsed PATTERN argument v.
func toPattern(v preserves.Value) (pattern.Pattern, error) {
	if p, ok := findEmbedded(v); ok {
		return nil, &argError{what: "pattern", pos: p, msg: "embedded values are not allowed in patterns"}
	}
	e, errs := script.ParsePattern("", v)
	if len(errs) > 0 {
		return nil, &argError{what: "pattern", pos: errs[0].Pos, msg: errs[0].Msg}
	}
	p, err := compile.Pattern(e)
	if se, ok := err.(*script.Error); ok {
		return nil, &argError{what: "pattern", pos: se.Pos, msg: se.Msg}
	}
	return p, err
}
