package script

import "github.com/syndicate-go/syndicate/preserves"

// Allocation strategy of the parser.
//
// A script's AST is built in one go and then lives, whole, as long as
// whoever holds the File. Allocating its nodes one by one made the
// allocator and the garbage collector, which pay per object, a large part of
// the cost of compiling a big script. The parser therefore carves nodes, and
// the slices that hold them, from chunks (slab); this changes nothing a
// caller can observe except that the nodes of one File share memory blocks.
//
// Nodes taken from a slab are already zero, so their fields are assigned one
// by one rather than by storing a whole composite literal: a large struct
// stored through a pointer is copied with a bulk write barrier while the
// garbage collector is marking, which costs more than the fields' own.

// Slab hands out elements of T carved from chunks. Chunks start small (a
// small script stays small) and double up to slabMax elements. The compiler
// uses it too. The zero Slab is ready to use; it is not safe for concurrent
// use.
type Slab[T any] struct {
	free  []T
	chunk int
}

const slabMin, slabMax = 16, 1024

// New returns a pointer to a zeroed T.
func (s *Slab[T]) New() *T {
	if len(s.free) == 0 {
		s.grow(1)
	}
	x := &s.free[0]
	s.free = s.free[1:]
	return x
}

// Slice returns n zeroed elements, nil for n == 0. Its capacity is n, so
// appending to it copies rather than overwriting a neighbour.
func (s *Slab[T]) Slice(n int) []T {
	if n == 0 {
		return nil
	}
	if n > slabMax/4 {
		return make([]T, n) // big: its own allocation, wasting no chunk
	}
	if n > len(s.free) {
		s.grow(n)
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

func (s *Slab[T]) grow(n int) {
	s.chunk = min(max(2*s.chunk, slabMin), slabMax)
	s.free = make([]T, max(s.chunk, n))
}

// arena holds the parser's slabs, one per frequent node type.
type arena struct {
	lits     Slab[Lit]
	vars     Slab[Var]
	binds    Slab[Bind]
	discards Slab[Discard]
	recs     Slab[RecordExpr]
	seqs     Slab[SeqExpr]
	dicts    Slab[DictExpr]
	exprs    Slab[Expr]
	entries  Slab[DictEntry]

	asserts   Slab[Assert]
	sends     Slab[Send]
	blocks    Slab[Block]
	retargets Slab[Retarget]
	durings   Slab[During]
	onMsgs    Slab[OnMessage]
	lets      Slab[Let]
	conds     Slab[Cond]
	instrs    Slab[Instr]
	stack     []Instr // instructions of the blocks being parsed

	// Stripped copies of literal compounds (Lit.Value).
	values  Slab[preserves.Value]
	records Slab[preserves.Record]
}

// presize sizes the instruction stack for a file of n top-level tokens (an
// instruction takes one to three of them), so that it does not grow by
// copying through thousands of instructions.
func (a *arena) presize(n int) { a.stack = make([]Instr, 0, n/2+8) }

// popInstrs returns a copy of stack[mark:] carved from the slab and
// truncates the stack.
func (a *arena) popInstrs(mark int) []Instr {
	out := a.instrs.Slice(len(a.stack) - mark)
	copy(out, a.stack[mark:])
	clear(a.stack[mark:])
	a.stack = a.stack[:mark]
	return out
}

// strip returns v without annotations, like preserves.Strip, building the
// copies of records and sequences (the bulk of a script's literal data) in
// the arena.
func (a *arena) strip(v preserves.Value) preserves.Value {
	an, ok := v.(*preserves.Annotated)
	if !ok {
		return preserves.Strip(v)
	}
	switch x := an.Item.(type) {
	case *preserves.Record:
		r := a.records.New()
		r.Label = a.strip(x.Label)
		r.Fields = a.stripSlice(x.Fields)
		return r
	case preserves.Sequence:
		if len(x) == 0 {
			return x
		}
		return preserves.Sequence(a.stripSlice(x))
	}
	return preserves.Strip(an.Item)
}

func (a *arena) stripSlice(vs []preserves.Value) []preserves.Value {
	out := a.values.Slice(len(vs))
	for i, v := range vs {
		out[i] = a.strip(v)
	}
	return out
}
