package script

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// Built-ins: the convenience expressions of `let PATTERN = EXPRESSION`.
//
// Each one is a single entry of Builtins, which every phase reads: the
// parser takes its name and operands from it and runs its Check, the
// compiler turns a use into one generic call node (compile.Call), the VM
// evaluates the operands and calls Eval, the disassembler prints `NAME
// OPERAND…` and the formatter groups it by the parser's reading. A new convenience expression is therefore one entry here
// plus its line in docs/language.md.

// Builtin is one convenience expression.
type Builtin struct {
	// Name is the symbol that starts it.
	Name string
	// Operands names its operands, in order, for error messages ("a
	// separator"); their number is the built-in's arity. Each operand is
	// itself a convenience expression or a value.
	Operands []string
	// Doc is its one-line meaning (docs/language.md's table).
	Doc string
	// Capability is set when its value is always a capability.
	Capability bool
	// Check, when set, reports what is wrong with the operands before the
	// script runs (the parser calls it; errors are compile errors).
	Check func(args []Expr, errorf func(at preserves.Pos, format string, a ...any))
	// Eval computes its value from the operands' values. An error wraps
	// one of the classes below; its text names the built-in.
	Eval func(c BuiltinContext, args []preserves.Value) (preserves.Value, error)
}

// Arity is the number of operands.
func (b *Builtin) Arity() int { return len(b.Operands) }

// BuiltinContext is what a built-in may use of the running script (the VM
// implements it).
type BuiltinContext interface {
	// Now is the current time (the VM's clock, fixed in tests).
	Now() time.Time
	// ScriptDir is the directory holding the script.
	ScriptDir() string
	// NewDataspace creates a dataspace and returns its capability.
	NewDataspace() preserves.Value
	// FacetHandle returns a capability that stops the current facet when
	// sent `stop`.
	FacetHandle() preserves.Value
}

// ErrStringify is the class of the run-time error of rendering a
// capability as text (stringify, join).
var ErrStringify = errors.New("vm: cannot render a capability as text")

// ErrNotNumber is the class of the run-time error of a number operand
// (deadline) that is not one.
var ErrNotNumber = errors.New("vm: not a number")

// Builtins is the table of convenience expressions, in documentation order.
var Builtins = []*Builtin{
	{
		Name: "dataspace", Doc: "a fresh dataspace", Capability: true,
		Eval: func(c BuiltinContext, _ []preserves.Value) (preserves.Value, error) {
			return c.NewDataspace(), nil
		},
	},
	{
		Name: "timestamp", Doc: "the current UTC time, RFC 3339",
		Eval: func(c BuiltinContext, _ []preserves.Value) (preserves.Value, error) {
			return preserves.String(Timestamp(c.Now())), nil
		},
	},
	{
		Name: "deadline", Operands: []string{"a number of seconds"},
		Doc:   "the Unix time N seconds from now, a double: `? <later-than $t>`",
		Check: numberOperand,
		Eval: func(c BuiltinContext, args []preserves.Value) (preserves.Value, error) {
			var secs float64
			switch n := preserves.Unwrap(args[0]).(type) {
			case preserves.Double:
				secs = n.Float64()
			case preserves.Int:
				secs = float64(n)
			default:
				return nil, fmt.Errorf("deadline: %s is not a number of seconds%w", preserves.Show(args[0]), quiet{ErrNotNumber})
			}
			now := c.Now()
			return preserves.NewDouble(float64(now.Unix()) + float64(now.Nanosecond())/1e9 + secs), nil
		},
	},
	{
		Name: "facet", Doc: "a handle to the current facet: `$f ! stop` stops it", Capability: true,
		Eval: func(c BuiltinContext, _ []preserves.Value) (preserves.Value, error) {
			return c.FacetHandle(), nil
		},
	},
	{
		Name: "scriptdir", Doc: "the directory holding this script",
		Eval: func(c BuiltinContext, _ []preserves.Value) (preserves.Value, error) {
			return preserves.String(c.ScriptDir()), nil
		},
	},
	{
		Name: "stringify", Operands: []string{"an expression"}, Doc: "the Preserves text of E's value",
		Check: textOperands,
		Eval: func(_ BuiltinContext, args []preserves.Value) (preserves.Value, error) {
			if preserves.HasEmbedded(args[0]) {
				return nil, fmt.Errorf("stringify: value contains a capability%w", quiet{ErrStringify})
			}
			return preserves.String(preserves.FormatText(args[0])), nil
		},
	},
	{
		Name: "join", Operands: []string{"a separator", "pieces"},
		Doc:   "the pieces (a sequence, or one value) as text, joined with SEP",
		Check: textOperands,
		Eval: func(_ BuiltinContext, args []preserves.Value) (preserves.Value, error) {
			pieces, ok := args[1].(preserves.Sequence)
			if !ok {
				pieces = preserves.Sequence{args[1]}
			}
			sep, ok := textOf(args[0])
			if !ok {
				return nil, fmt.Errorf("join: separator contains a capability%w", quiet{ErrStringify})
			}
			strs := make([]string, len(pieces))
			for i, p := range pieces {
				if strs[i], ok = textOf(p); !ok {
					return nil, fmt.Errorf("join: piece %d contains a capability%w", i, quiet{ErrStringify})
				}
			}
			return preserves.String(strings.Join(strs, sep)), nil
		},
	},
}

// textOperands rejects an operand that is always a capability (`stringify
// dataspace`), which has no text: at run time it could only fail.
func textOperands(args []Expr, errorf func(at preserves.Pos, format string, a ...any)) {
	for _, a := range args {
		if c, ok := a.(*CallExpr); ok && c.Builtin.Capability {
			errorf(c.At, "%s yields a capability, which has no text", c.Builtin.Name)
		}
	}
}

// numberOperand rejects a literal operand that is not a number.
func numberOperand(args []Expr, errorf func(at preserves.Pos, format string, a ...any)) {
	for _, a := range args {
		if x, ok := a.(*Lit); ok {
			switch x.Value.(type) {
			case preserves.Double, preserves.Int:
			default:
				errorf(x.At, "deadline needs a number of seconds, not %s", preserves.Show(x.Value))
			}
		}
	}
}

// quiet wraps an error class without adding to the message: the built-in's
// message says it all.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// builtinByName indexes Builtins.
var builtinByName = func() map[string]*Builtin {
	m := make(map[string]*Builtin, len(Builtins))
	for _, b := range Builtins {
		m[b.Name] = b
	}
	return m
}()

// LookupBuiltin returns the built-in called name.
func LookupBuiltin(name string) (*Builtin, bool) {
	b, ok := builtinByName[name]
	return b, ok
}

// textOf is join's "converted to a string": a string's contents, any other
// value's Preserves text; false if v holds a capability.
func textOf(v preserves.Value) (string, bool) {
	if s, ok := v.(preserves.String); ok {
		return string(s), true
	}
	if preserves.HasEmbedded(v) {
		return "", false
	}
	return preserves.FormatText(v), true
}

// Timestamp formats tm in UTC as RFC 3339 with a `+00:00` offset and 0, 3, 6
// or 9 fractional digits, as few as represent it exactly (services spec
// §4.5).
func Timestamp(tm time.Time) string {
	tm = tm.UTC()
	ns := tm.Nanosecond()
	var frac string
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		frac = fmt.Sprintf(".%03d", ns/1_000_000)
	case ns%1_000 == 0:
		frac = fmt.Sprintf(".%06d", ns/1_000)
	default:
		frac = fmt.Sprintf(".%09d", ns)
	}
	return tm.Format("2006-01-02T15:04:05") + frac + "+00:00"
}

// the: "a separator" → "the separator", for "needs X after the Y".
func the(operand string) string {
	for _, a := range []string{"a ", "an "} {
		if strings.HasPrefix(operand, a) {
			return "the " + operand[len(a):]
		}
	}
	return operand
}
