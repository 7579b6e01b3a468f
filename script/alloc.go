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

// slab hands out elements of T carved from chunks. Chunks start small (a
// small script stays small) and double up to slabMax elements.
type slab[T any] struct {
	free  []T
	chunk int
}

const slabMin, slabMax = 16, 1024

// new returns a pointer to a zeroed T.
func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.grow(1)
	}
	x := &s.free[0]
	s.free = s.free[1:]
	return x
}

// slice returns n zeroed elements, nil for n == 0. Its capacity is n, so
// appending to it copies rather than overwriting a neighbour.
func (s *slab[T]) slice(n int) []T {
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

func (s *slab[T]) grow(n int) {
	s.chunk = min(max(2*s.chunk, slabMin), slabMax)
	s.free = make([]T, max(s.chunk, n))
}

// arena holds the parser's slabs, one per frequent node type.
type arena struct {
	lits     slab[Lit]
	vars     slab[Var]
	binds    slab[Bind]
	discards slab[Discard]
	recs     slab[RecordExpr]
	seqs     slab[SeqExpr]
	dicts    slab[DictExpr]
	exprs    slab[Expr]
	entries  slab[DictEntry]

	asserts   slab[Assert]
	sends     slab[Send]
	blocks    slab[Block]
	retargets slab[Retarget]
	durings   slab[During]
	onMsgs    slab[OnMessage]
	lets      slab[Let]
	conds     slab[Cond]
	instrs    slab[Instr]
	stack     []Instr // instructions of the blocks being parsed

	// Stripped copies of literal compounds (Lit.Value).
	values  slab[preserves.Value]
	records slab[preserves.Record]
}

// presize sizes the instruction stack for a file of n top-level tokens (an
// instruction takes one to three of them), so that it does not grow by
// copying through thousands of instructions.
func (a *arena) presize(n int) { a.stack = make([]Instr, 0, n/2+8) }

// popInstrs returns a copy of stack[mark:] carved from the slab and
// truncates the stack.
func (a *arena) popInstrs(mark int) []Instr {
	out := a.instrs.slice(len(a.stack) - mark)
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
		r := a.records.new()
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
	out := a.values.slice(len(vs))
	for i, v := range vs {
		out[i] = a.strip(v)
	}
	return out
}
