package script

import "github.com/syndicate-go/syndicate/preserves"

// Node is any AST node. Every node records the source position of the token
// it was built from (the zero Pos for hand-made values without positions).
type Node interface {
	Pos() preserves.Pos
}

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
	At   preserves.Pos
	Body []Instr
}

// Retarget is `$Var INSTR`: Body is compiled with Var as the active target
// and the previous target as the outer target (services spec §4.3).
type Retarget struct {
	At   preserves.Pos
	Var  string
	Body Instr
}

// Assert is a record or dictionary in instruction position, or `+= V`.
type Assert struct {
	At    preserves.Pos
	Value Expr
}

// Send is `! V`.
type Send struct {
	At    preserves.Pos
	Value Expr
}

// During is `? PAT INSTR`; OnMessage is `?? PAT INSTR`.
type During struct {
	At   preserves.Pos
	Pat  Expr
	Body Instr
}

// OnMessage is `?? PAT INSTR`.
type OnMessage struct {
	At   preserves.Pos
	Pat  Expr
	Body Instr
}

// OnStop is `?- INSTR`.
type OnStop struct {
	At   preserves.Pos
	Body Instr
}

// Let is `let PAT = EXPR`.
type Let struct {
	At   preserves.Pos
	Pat  Expr
	Expr Expr
	// PatSrc is the pattern as written, for run-time errors.
	PatSrc string
}

// Cond is `=~ PAT THEN ELSE...`. The variable tested is the active target at
// this point (normally set by a preceding `$x`); Else holds every remaining
// instruction of the enclosing block or file.
type Cond struct {
	At   preserves.Pos
	Pat  Expr
	Then Instr
	Else []Instr
}

func (n *Block) Pos() preserves.Pos     { return n.At }
func (n *Retarget) Pos() preserves.Pos  { return n.At }
func (n *Assert) Pos() preserves.Pos    { return n.At }
func (n *Send) Pos() preserves.Pos      { return n.At }
func (n *During) Pos() preserves.Pos    { return n.At }
func (n *OnMessage) Pos() preserves.Pos { return n.At }
func (n *OnStop) Pos() preserves.Pos    { return n.At }
func (n *Let) Pos() preserves.Pos       { return n.At }
func (n *Cond) Pos() preserves.Pos      { return n.At }

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
	At    preserves.Pos
	Value preserves.Value
	Src   preserves.Value
}

// Var is `$name`; `$.` has Name ".".
type Var struct {
	At   preserves.Pos
	Name string
}

// Capture is `$name` inside a caveat rewrite template where name is a binder
// of the rewrite's pattern; Index is its position in pre-order capture order.
type Capture struct {
	At    preserves.Pos
	Name  string
	Index int
}

// Discard is `_` (patterns only).
type Discard struct{ At preserves.Pos }

// Bind is `?name` (Pat is a Discard) or `<?name PAT>` (patterns only).
type Bind struct {
	At   preserves.Pos
	Name string
	Pat  Expr
}

// RecordExpr is `<LABEL FIELD ...>`.
type RecordExpr struct {
	At     preserves.Pos
	Label  Expr
	Fields []Expr
}

// SeqExpr is `[ELEM ...]`.
type SeqExpr struct {
	At    preserves.Pos
	Elems []Expr
}

// SetExpr is `#{ELEM ...}` (values only).
type SetExpr struct {
	At    preserves.Pos
	Elems []Expr
}

// DictExpr is `{KEY: VALUE ...}`. In patterns and templates every key is a
// *Lit, in Preserves order of the keys.
type DictExpr struct {
	At      preserves.Pos
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
	At      preserves.Pos
	Target  Expr
	Caveats []Caveat
}

// SturdyPat is a caveat pattern read structurally (`dialect
// sturdy-caveats`): Value is a value expression that evaluates to the
// pattern's sturdy.prs form, with `$x` as `<lit $x>` and the fork's
// shorthands already normalised. Binders lists its captures in pre-order,
// "" for an anonymous `<bind P>`.
type SturdyPat struct {
	At      preserves.Pos
	Value   Expr
	Binders []string
}

// Convenience expressions (right-hand side of let).

// CallExpr is a use of a built-in convenience expression (the right-hand
// side of let): `NAME OPERAND…`, Args holding Builtin.Arity() operands.
type CallExpr struct {
	At      preserves.Pos
	Builtin *Builtin
	Args    []Expr
}

func (n *Lit) Pos() preserves.Pos        { return n.At }
func (n *Var) Pos() preserves.Pos        { return n.At }
func (n *Capture) Pos() preserves.Pos    { return n.At }
func (n *Discard) Pos() preserves.Pos    { return n.At }
func (n *Bind) Pos() preserves.Pos       { return n.At }
func (n *RecordExpr) Pos() preserves.Pos { return n.At }
func (n *SeqExpr) Pos() preserves.Pos    { return n.At }
func (n *SetExpr) Pos() preserves.Pos    { return n.At }
func (n *DictExpr) Pos() preserves.Pos   { return n.At }
func (n *Attenuate) Pos() preserves.Pos  { return n.At }
func (n *SturdyPat) Pos() preserves.Pos  { return n.At }
func (n *CallExpr) Pos() preserves.Pos   { return n.At }

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
	At       preserves.Pos
	Accept   bool
	Pat      Expr
	Template Expr
	Binders  []string
}

// Reject is `<reject PAT>`.
type Reject struct {
	At  preserves.Pos
	Pat Expr
}

// Or is `<or [REWRITE ...]>`.
type Or struct {
	At   preserves.Pos
	Alts []*Rewrite
}

func (n *Rewrite) Pos() preserves.Pos { return n.At }
func (n *Reject) Pos() preserves.Pos  { return n.At }
func (n *Or) Pos() preserves.Pos      { return n.At }

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
