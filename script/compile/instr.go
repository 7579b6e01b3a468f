package compile

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

// Version identifies the shape of the instruction tree. It changes whenever
// an instruction or expression node changes meaning, so cached or serialised
// programs from another version are never mistaken for current ones.
const Version = 3

// Program is a compiled script file.
type Program struct {
	// File is the script's path as given to the compiler ("" if none).
	File string
	// Version is the compiler Version that produced the program.
	Version int
	// Body holds the top-level instructions, in order.
	Body *Seq
	// Instrs counts the instructions in the whole tree.
	Instrs int
	// Positions is Options.Positions: the VM then also remembers the
	// compounds it builds, with their parts' positions (preserves.Remember).
	Positions bool
	// Warnings are the front end's warnings about the file (a caveat
	// pattern in another dialect's notation, …): it runs, but whoever
	// loads it should show them (the config watcher logs them).
	Warnings script.ErrorList
	// Consts, with Positions, owns the positions of the program's
	// constant values (preserves.Owned, whose table also holds the
	// values). It is what a facet running the program must keep alive
	// for those positions to stay known; the instructions it ran once
	// (the top level's) it may let go (issue 28: they were a quarter of a
	// big config file's memory).
	Consts *Constants
}

// Constants owns the positions of a program's constants (Program.Consts).
type Constants struct{ owned *preserves.Owned }

// Instr is one instruction. Every instruction carries the source position of
// the token it was compiled from, so run-time errors read file:line:col. The
// set is closed; the VM switches on the concrete types.
type Instr interface {
	Pos() preserves.Pos
	isInstr()
}

// Seq runs its instructions in order, in the same facet and environment.
type Seq struct {
	script.At
	Body []Instr
}

// Assert asserts Value at the capability bound to Target.
type Assert struct {
	script.At
	Target string
	Value  Expr
}

// Send sends Value as a message to the capability bound to Target.
type Send struct {
	script.At
	Target string
	Value  Expr
}

// Handler subscribes to Pat at Target and runs Body in a fresh facet for
// each match: `?` (During) for each distinct capture tuple asserted, the
// facet stopping when the tuple is retracted; `??` (OnMessage) for each
// message. Binders names the captures in order. The two differ only in the
// subscription the VM makes, so they are one instruction.
type Handler struct {
	script.At
	Kind    HandlerKind
	Target  string
	Pat     Pat
	Binders []string
	Body    Instr
}

// HandlerKind is what a Handler reacts to.
type HandlerKind uint8

const (
	During    HandlerKind = iota // assertions: `? PAT INSTR`
	OnMessage                    // messages: `?? PAT INSTR`
)

// String is the kind's name in the disassembly.
func (k HandlerKind) String() string {
	if k == OnMessage {
		return "on-message"
	}
	return "during"
}

// OnStop runs Body, in the parent facet, when the current facet stops.
type OnStop struct {
	script.At
	Body Instr
}

// Let evaluates Expr, matches it against Pat and binds the captures.
type Let struct {
	script.At
	Pat     Pat
	Binders []string
	Expr    Expr
	PatSrc  string // the pattern as written (error messages)
}

// Cond matches the value of Var against Pat: on success the captures are
// bound and Then runs, otherwise Else runs.
type Cond struct {
	script.At
	Var     string
	Pat     Pat
	Binders []string
	Then    Instr
	Else    *Seq
}

func (*Seq) isInstr()     {}
func (*Assert) isInstr()  {}
func (*Send) isInstr()    {}
func (*Handler) isInstr() {}
func (*OnStop) isInstr()  {}
func (*Let) isInstr()     {}
func (*Cond) isInstr()    {}

// ---------------------------------------------------------------------------
// Value expressions

// Expr computes a value from the environment. Constant sub-trees are folded
// into Const at compile time, so evaluating them costs nothing.
type Expr interface {
	Pos() preserves.Pos
	isExpr()
}

// Const is a constant value.
type Const struct {
	script.At
	Value preserves.Value
}

// Ref is the value of a variable; Name "." is the whole environment as a
// dictionary.
type Ref struct {
	script.At
	Name string
}

// MkRecord builds a record.
type MkRecord struct {
	script.At
	Label  Expr
	Fields []Expr
}

// MkSeq builds a sequence.
type MkSeq struct {
	script.At
	Elems []Expr
}

// MkSet builds a set.
type MkSet struct {
	script.At
	Elems []Expr
}

// MkDict builds a dictionary.
type MkDict struct {
	script.At
	Keys []Expr
	Vals []Expr
}

// MkAttenuate attenuates the capability bound to Var with Caveats, an
// expression yielding a sequence of caveats in sturdy.prs syntax (so caveats
// are built by the same machinery as any other value, and variables inside
// them are substituted when the attenuation is evaluated).
type MkAttenuate struct {
	script.At
	Var     string
	Caveats Expr
}

// Call is a built-in convenience expression (script.Builtins): the VM
// evaluates Args, in order, and hands their values to Builtin.Eval.
type Call struct {
	script.At
	Builtin *script.Builtin
	Args    []Expr
}

func (*Const) isExpr()       {}
func (*Ref) isExpr()         {}
func (*MkRecord) isExpr()    {}
func (*MkSeq) isExpr()       {}
func (*MkSet) isExpr()       {}
func (*MkDict) isExpr()      {}
func (*MkAttenuate) isExpr() {}
func (*Call) isExpr()        {}

// EachSubExpr calls fn on each expression e is built from, in evaluation
// order, so that analyses walking expression trees need not each know the
// node types (the exhaustiveness test in script/vm covers this switch).
func EachSubExpr(e Expr, fn func(Expr)) {
	switch x := e.(type) {
	case *Const, *Ref:
	case *MkRecord:
		fn(x.Label)
		for _, f := range x.Fields {
			fn(f)
		}
	case *MkSeq:
		for _, f := range x.Elems {
			fn(f)
		}
	case *MkSet:
		for _, f := range x.Elems {
			fn(f)
		}
	case *MkDict:
		for i := range x.Keys {
			fn(x.Keys[i])
			fn(x.Vals[i])
		}
	case *MkAttenuate:
		fn(x.Caveats)
	case *Call:
		for _, f := range x.Args {
			fn(f)
		}
	}
}

// EachSubInstr calls fn on each instruction nested directly in in (the
// bodies of handlers and conditionals, the members of a sequence), so that
// analyses walking the instruction tree need not each know its shape.
func EachSubInstr(in Instr, fn func(Instr)) {
	switch x := in.(type) {
	case *Seq:
		for _, i := range x.Body {
			fn(i)
		}
	case *Handler:
		fn(x.Body)
	case *OnStop:
		fn(x.Body)
	case *Cond:
		fn(x.Then)
		if x.Else != nil {
			fn(x.Else)
		}
	}
}

// ---------------------------------------------------------------------------
// Pattern expressions

// Pat computes a dataspace pattern from the environment. Patterns that
// mention no variable are folded into PConst at compile time.
type Pat interface {
	Pos() preserves.Pos
	isPat()
}

// PConst is a constant dataspace pattern.
type PConst struct {
	script.At
	Pattern pattern.Pattern
}

// PLift matches values equal to Value's result (pattern.Lift of it).
type PLift struct {
	script.At
	Value Expr
}

// PBind captures the value at its position and matches it against Sub.
type PBind struct {
	script.At
	Sub Pat
}

// PRec matches records labelled by Label's value whose first fields match.
type PRec struct {
	script.At
	Label  Expr
	Fields []Pat
}

// PArr matches sequences whose first items match.
type PArr struct {
	script.At
	Items []Pat
}

// PDict matches dictionaries holding each key with a matching value.
type PDict struct {
	script.At
	Keys []preserves.Value
	Vals []Pat
}

func (*PConst) isPat() {}
func (*PLift) isPat()  {}
func (*PBind) isPat()  {}
func (*PRec) isPat()   {}
func (*PArr) isPat()   {}
func (*PDict) isPat()  {}
