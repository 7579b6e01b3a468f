package compile

import (
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

// Allocation strategy of the compiler.
//
// A program's instruction tree, with its folded constants and patterns, is
// built in one pass and then lives, whole, as long as the Program. The
// compiler therefore carves nodes, and the slices that hold them, from
// chunks (slab) instead of allocating them one by one: the allocator and the
// garbage collector pay per object, and a big script has tens of thousands
// of nodes. Nothing observable changes except that the nodes of one program
// share memory blocks.
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

// arena holds the compiler's slabs, one per frequent node type.
type arena struct {
	seqs    slab[Seq]
	asserts slab[Assert]
	sends   slab[Send]
	durings slab[During]
	onMsgs  slab[OnMessage]
	lets    slab[Let]
	conds   slab[Cond]
	instrs  slab[Instr]

	konsts  slab[Const]
	refs    slab[Ref]
	mkRecs  slab[MkRecord]
	mkSeqs  slab[MkSeq]
	mkDicts slab[MkDict]
	exprs   slab[Expr]

	pconsts slab[PConst]
	pbinds  slab[PBind]
	precs   slab[PRec]
	parrs   slab[PArr]
	pdicts  slab[PDict]
	plifts  slab[PLift]
	pats    slab[Pat]

	vals     slab[preserves.Value]
	records  slab[preserves.Record]
	entries  slab[pattern.Entry]
	patterns slab[pattern.Pattern]
	strs     slab[string]
	binders  []string // scratch for script.AppendBinders
}

func (c *compiler) konst(at preserves.Pos, v preserves.Value) *Const {
	k := c.konsts.new()
	k.At, k.Value = at, v
	return k
}

func (c *compiler) ref(at preserves.Pos, name string) *Ref {
	r := c.refs.new()
	r.At, r.Name = at, name
	return r
}

func (c *compiler) pconst(at preserves.Pos, p pattern.Pattern) *PConst {
	k := c.pconsts.new()
	k.At, k.Pattern = at, p
	return k
}

// bindersOf returns script.Binders(p), carved from the arena.
func (c *compiler) bindersOf(p script.Expr) []string {
	c.binders = script.AppendBinders(c.binders[:0], p)
	out := c.strs.slice(len(c.binders))
	copy(out, c.binders)
	clear(c.binders)
	return out
}
