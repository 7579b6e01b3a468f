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

// arena holds the compiler's slabs, one per frequent node type.
type arena struct {
	seqs     script.Slab[Seq]
	asserts  script.Slab[Assert]
	sends    script.Slab[Send]
	handlers script.Slab[Handler]
	lets     script.Slab[Let]
	conds    script.Slab[Cond]
	instrs   script.Slab[Instr]

	konsts  script.Slab[Const]
	refs    script.Slab[Ref]
	mkRecs  script.Slab[MkRecord]
	mkSeqs  script.Slab[MkSeq]
	mkDicts script.Slab[MkDict]
	exprs   script.Slab[Expr]

	pconsts script.Slab[PConst]
	pbinds  script.Slab[PBind]
	precs   script.Slab[PRec]
	parrs   script.Slab[PArr]
	pdicts  script.Slab[PDict]
	plifts  script.Slab[PLift]
	pats    script.Slab[Pat]

	vals     script.Slab[preserves.Value]
	records  script.Slab[preserves.Record]
	entries  script.Slab[pattern.Entry]
	patterns script.Slab[pattern.Pattern]
	strs     script.Slab[string]
	binders  []string // scratch for script.AppendBinders
}

func (c *compiler) konst(at preserves.Pos, v preserves.Value) *Const {
	k := c.konsts.New()
	k.At, k.Value = at, v
	return k
}

func (c *compiler) ref(at preserves.Pos, name string) *Ref {
	r := c.refs.New()
	r.At, r.Name = at, name
	return r
}

func (c *compiler) pconst(at preserves.Pos, p pattern.Pattern) *PConst {
	k := c.pconsts.New()
	k.At, k.Pattern = at, p
	return k
}

// bindersOf returns script.Binders(p), carved from the arena.
func (c *compiler) bindersOf(p script.Expr) []string {
	c.binders = script.AppendBinders(c.binders[:0], p)
	out := c.strs.Slice(len(c.binders))
	copy(out, c.binders)
	clear(c.binders)
	return out
}
