package script

import "github.com/syndicate-go/syndicate/preserves"

// Node is any AST node. Every node records the source position of the token
// it was built from (the zero Pos for hand-made values without positions).
type Node interface {
	Pos() preserves.Pos
}

// At is the position every node of this package and of script/compile
// embeds: the field is named At, and preserves.Pos's Pos method is the
// node's, so no node type spells out its own.
type At = preserves.Pos

// File is a parsed script: its instructions in source order.
type File struct {
	Name string
	Body []Instr
	// Dialect is the file's `dialect NAME` directive ("" for none).
	Dialect string
	// Warnings are the problems that do not stop the file from running
	// (Error.Warning set), sorted.
	Warnings ErrorList
}

// ---------------------------------------------------------------------------
// Instructions

// Instr is an instruction. The set is closed: the compiler switches on the
// concrete types below.
type Instr interface {
	Node
	instr()
}

// Block is `[ INSTR ... ]`. It is not a scope (services spec §4.9).
type Block struct {
	At
	Body []Instr
}

// Retarget is `$Var INSTR`: Body is compiled with Var as the active target
// and the previous target as the outer target (services spec §4.3).
type Retarget struct {
	At
	Var  string
	Body Instr
}

// Assert is a record or dictionary in instruction position, or `+= V`.
type Assert struct {
	At
	Value Expr
}

// Send is `! V`.
type Send struct {
	At
	Value Expr
}

// During is `? PAT INSTR`; OnMessage is `?? PAT INSTR`.
type During struct {
	At
	Pat  Expr
	Body Instr
}

// OnMessage is `?? PAT INSTR`.
type OnMessage struct {
	At
	Pat  Expr
	Body Instr
}

// OnStop is `?- INSTR`.
type OnStop struct {
	At
	Body Instr
}

// Let is `let PAT = EXPR`.
type Let struct {
	At
	Pat  Expr
	Expr Expr
	// PatSrc is the pattern as written, for run-time errors.
	PatSrc string
}

// Cond is `=~ PAT THEN ELSE...`. The variable tested is the active target at
// this point (normally set by a preceding `$x`); Else holds every remaining
// instruction of the enclosing block or file.
type Cond struct {
	At
	Pat  Expr
	Then Instr
	Else []Instr
}

func (*Block) instr()     {}
func (*Retarget) instr()  {}
func (*Assert) instr()    {}
func (*Send) instr()      {}
func (*During) instr()    {}
func (*OnMessage) instr() {}
func (*OnStop) instr()    {}
func (*Let) instr()       {}
func (*Cond) instr()      {}

// ---------------------------------------------------------------------------
// Expressions
//
// Value, pattern and template expressions share one set of node types; the
// parser's mode decides which of them may appear where (Discard and Bind only
// in patterns, Capture only in caveat templates, SetExpr only in values), so
// a well-formed AST never holds a node its context forbids.

// Expr is an expression node.
type Expr interface {
	Node
	expr()
}

// Lit is a literal value: a non-symbol atom, a bare symbol, `=sym`, or (in
// pattern and template dictionaries) a literal key. Value is annotation-free;
// Src, when set, is the value as read, with the reader's positions at every
// depth (compile.Options.Positions keeps them in asserted values).
type Lit struct {
	At
	Value preserves.Value
	Src   preserves.Value
}

// Var is `$name`; `$.` has Name ".".
type Var struct {
	At
	Name string
}

// Capture is `$name` inside a caveat rewrite template where name is a binder
// of the rewrite's pattern; Index is its position in pre-order capture order.
type Capture struct {
	At
	Name  string
	Index int
}

// Discard is `_` (patterns only).
type Discard struct{ At }

// Bind is `?name` (Pat is a Discard) or `<?name PAT>` (patterns only).
type Bind struct {
	At
	Name string
	Pat  Expr
}

// RecordExpr is `<LABEL FIELD ...>`.
type RecordExpr struct {
	At
	Label  Expr
	Fields []Expr
}

// SeqExpr is `[ELEM ...]`.
type SeqExpr struct {
	At
	Elems []Expr
}

// SetExpr is `#{ELEM ...}` (values only).
type SetExpr struct {
	At
	Elems []Expr
}

// DictExpr is `{KEY: VALUE ...}`. In patterns and templates every key is a
// *Lit, in Preserves order of the keys.
type DictExpr struct {
	At
	Entries []DictEntry
}

// DictEntry is one entry of a DictExpr.
type DictEntry struct {
	Key   Expr
	Value Expr
}

// Attenuate is `<* $var [CAVEAT ...]>`. Target is a *Var, or a *Capture when
// it appears in a rewrite template and names a capture of that rewrite.
type Attenuate struct {
	At
	Target  Expr
	Caveats []Caveat
}

// SturdyPat is a caveat pattern read structurally (`dialect
// sturdy-caveats`): Value is a value expression that evaluates to the
// pattern's sturdy.prs form, with `$x` as `<lit $x>` and the fork's
// shorthands already normalised. Binders lists its captures in pre-order,
// "" for an anonymous `<bind P>`.
type SturdyPat struct {
	At
	Value   Expr
	Binders []string
}

// Convenience expressions (right-hand side of let).

// CallExpr is a use of a built-in convenience expression (the right-hand
// side of let): `NAME OPERAND…`, Args holding Builtin.Arity() operands.
type CallExpr struct {
	At
	Builtin *Builtin
	Args    []Expr
}

func (*Lit) expr()        {}
func (*Var) expr()        {}
func (*Capture) expr()    {}
func (*Discard) expr()    {}
func (*Bind) expr()       {}
func (*RecordExpr) expr() {}
func (*SeqExpr) expr()    {}
func (*SetExpr) expr()    {}
func (*DictExpr) expr()   {}
func (*Attenuate) expr()  {}
func (*SturdyPat) expr()  {}
func (*CallExpr) expr()   {}

// ---------------------------------------------------------------------------
// Caveats

// Caveat is one element of an attenuation's caveat list.
type Caveat interface {
	Node
	caveat()
}

// Rewrite is `<rewrite PAT TEMPLATE>`, or `<accept PAT>` (Accept set and
// Template nil). Binders lists PAT's capture names in pre-order.
type Rewrite struct {
	At
	Accept   bool
	Pat      Expr
	Template Expr
	Binders  []string
}

// Reject is `<reject PAT>`.
type Reject struct {
	At
	Pat Expr
}

// Or is `<or [REWRITE ...]>`.
type Or struct {
	At
	Alts []*Rewrite
}

func (*Rewrite) caveat() {}
func (*Reject) caveat()  {}
func (*Or) caveat()      {}

// Binders returns the capture names of pattern p in pre-order (an enclosing
// `<?r ...>` before the captures inside it), which is the order the dataspace
// delivers captured values in (services spec §4.7, quirk Q6).
func Binders(p Expr) []string { return AppendBinders(nil, p) }

// AppendBinders appends the capture names of pattern p, in the order of
// Binders, to dst and returns the extended slice (so a caller can gather
// them in a reused buffer).
func AppendBinders(dst []string, p Expr) []string {
	switch x := p.(type) {
	case *Bind:
		dst = append(dst, x.Name)
		dst = AppendBinders(dst, x.Pat)
	case *RecordExpr:
		for _, f := range x.Fields {
			dst = AppendBinders(dst, f)
		}
	case *SeqExpr:
		for _, f := range x.Elems {
			dst = AppendBinders(dst, f)
		}
	case *DictExpr:
		for _, en := range x.Entries {
			dst = AppendBinders(dst, en.Value)
		}
	case *SturdyPat:
		dst = append(dst, x.Binders...)
	}
	return dst
}

// EachSubInstr calls fn on each instruction nested directly in in (the
// body of a block, of `?`, `??`, `?-` and `$x`; the branches of `=~`), so
// that scans of a script need not each know which nodes nest (the
// exhaustiveness test in script/vm covers this switch).
func EachSubInstr(in Instr, fn func(Instr)) {
	switch x := in.(type) {
	case *Assert, *Send, *Let:
	case *Block:
		for _, b := range x.Body {
			fn(b)
		}
	case *During:
		fn(x.Body)
	case *OnMessage:
		fn(x.Body)
	case *OnStop:
		fn(x.Body)
	case *Retarget:
		fn(x.Body)
	case *Cond:
		fn(x.Then)
		for _, b := range x.Else {
			fn(b)
		}
	}
}
