package dataspace

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Fields and dataflow (runtime spec §7.12).
//
// The dependency graph is bipartite: each field knows the blocks that read
// it during their latest run (fieldCore.deps), and each block knows the
// fields it read (block.reads), so that re-running or dropping a block can
// erase its old edges. All of it is actor state guarded by the turn lock;
// the per-actor part (damaged list, running block) is allocated on first
// use, so actors without fields carry one nil pointer.

var (
	// ErrDataflowLoop is wrapped by the error of a turn whose dataflow
	// repair did not settle within MaxRepairPasses passes: some block keeps
	// damaging a field it (or a block it feeds) depends on.
	ErrDataflowLoop = errors.New("dataspace: dataflow repair does not settle")
	// ErrForeignField is wrapped by the panic value (and so by the actor's
	// exit error, through PanicError) when a field is used in a turn of an
	// actor other than the one that created it.
	ErrForeignField = errors.New("dataspace: field used outside its actor")
)

// MaxRepairPasses bounds the passes of one dataflow repair. A pass re-runs
// every block depending on a field damaged since the previous pass; a
// repair that still finds damage after this many passes fails the turn with
// ErrDataflowLoop instead of spinning forever.
const MaxRepairPasses = 1000

// dataflow is an actor's dataflow state.
type dataflow struct {
	damaged []*fieldCore // fields damaged since the last repair pass
	spare   []*fieldCore // the other damaged buffer, swapped in per pass
	run     []*block     // scratch: the blocks of the current pass
	current *block       // the block now running (recording reads), or nil
	nextID  uint64       // block ids give each pass a deterministic order
}

func (a *Actor) dataflow() *dataflow {
	if a.df == nil {
		a.df = &dataflow{}
	}
	return a.df
}

// fieldCore is the untyped part of a Field.
type fieldCore struct {
	owner   *Actor
	deps    map[*block]struct{} // blocks that read the field in their latest run
	damaged bool                // queued in owner.df.damaged
}

// block is one dataflow block registered with a facet.
type block struct {
	id     uint64
	fn     func(t *Turn) error
	f      *facet
	reads  []*fieldCore // fields read in the latest run; each has us in deps
	dead   bool         // the facet stopped; never run again
	queued bool         // collected for the current pass (dedup)
}

// forget erases the block's dependency edges.
func (b *block) forget() {
	for i, c := range b.reads {
		delete(c.deps, b)
		b.reads[i] = nil
	}
	b.reads = b.reads[:0]
}

// dropBlocks discards the facet's dataflow blocks (the facet is stopping or
// its actor terminating): fields stop pointing at them, so a long-lived
// field does not keep the closures of dead facets reachable.
func (f *facet) dropBlocks() {
	for _, b := range f.blocks {
		b.dead = true
		b.fn = nil
		b.forget()
	}
	f.blocks = nil
}

// Field is an actor-local variable taking part in dataflow (runtime spec
// §7.12). Reading it with Get inside a dataflow block (see
// [Turn.Dataflow]) makes the block depend on it; writing it with Set or
// Update marks it damaged, even when the new value equals the old, so that
// every dependent block re-runs when the turn commits.
//
// A field belongs to the actor whose turn created it and may only be used
// in that actor's turns: fields are not synchronised, and the actor's turn
// lock is what keeps them consistent. Using one in a turn of another actor
// is a programming error and panics with an error wrapping
// ErrForeignField, which crashes that other actor (runtime spec §5.3), not
// the owner. Field values are not transactional: a failing turn crashes
// the actor, so there is nothing to roll them back for.
type Field[T any] struct {
	core fieldCore
	v    T
}

// NewField creates a field of t's actor holding initial (runtime spec
// §7.12 t.Field). Creating a field damages nothing.
func NewField[T any](t *Turn, initial T) *Field[T] {
	return &Field[T]{core: fieldCore{owner: t.a}, v: initial}
}

// Get returns the field's value. Inside a dataflow block it also records
// that the block depends on the field.
func (f *Field[T]) Get(t *Turn) T {
	f.core.observe(t)
	return f.v
}

// Set stores v and marks the field damaged (even if v equals the old
// value).
func (f *Field[T]) Set(t *Turn, v T) {
	f.core.check(t)
	f.v = v
	f.core.damage(t)
}

// Update lets fn change the value in place (for slices, maps, structs) and
// marks the field damaged, whatever fn did. It does not record a
// dependency, even inside a dataflow block.
func (f *Field[T]) Update(t *Turn, fn func(v *T)) {
	f.core.check(t)
	fn(&f.v)
	f.core.damage(t)
}

func (c *fieldCore) check(t *Turn) {
	if t.a != c.owner {
		panic(fmt.Errorf("%w: field of actor %q (id %d) used in a turn of actor %q (id %d)",
			ErrForeignField, c.owner.name, c.owner.id, t.a.name, t.a.id))
	}
}

// observe records a read by the running block, if any.
func (c *fieldCore) observe(t *Turn) {
	c.check(t)
	df := t.a.df
	if df == nil || df.current == nil {
		return
	}
	b := df.current
	if _, ok := c.deps[b]; ok {
		return
	}
	if c.deps == nil {
		c.deps = make(map[*block]struct{})
	}
	c.deps[b] = struct{}{}
	b.reads = append(b.reads, c)
}

// damage queues the field for repair and makes sure this turn repairs:
// the first damage of a turn inserts one repair action into the
// pre-commit queue, ahead of the actions not yet run, so inert checks and
// other pre-commit actions see the repaired state (runtime spec §5.2 step
// 1). Turns that damage nothing never queue it.
func (c *fieldCore) damage(t *Turn) {
	df := t.a.dataflow()
	if !c.damaged {
		c.damaged = true
		df.damaged = append(df.damaged, c)
	}
	if !t.repairQueued {
		t.repairQueued = true
		t.pre = slices.Insert(t.pre, t.preNext, preAction{fn: (*Turn).repair, f: t.active})
	}
}

// Dataflow registers fn as a block of the active facet and runs it at once,
// recording the fields it reads (runtime spec §7.12). Whenever one of
// those fields is damaged, the block re-runs when the turn commits, before
// delivery, with its facet active; each run records its dependencies
// afresh, so a field the block no longer reads no longer triggers it.
// Blocks re-run in registration order within a repair pass; a block
// damaging a field that another block reads makes that block re-run in the
// next pass of the same commit, so every effect of the repair leaves with
// the turn.
//
// An error from the block (now or in any re-run) fails the turn. A block
// does not keep its facet from being inert (runtime spec §4.3) and is
// discarded when the facet stops. On a dead facet Dataflow does nothing.
// A block that itself calls Dataflow registers a new block on each run;
// to replace rather than accumulate them, run such inner blocks in a child
// facet that the outer block stops and recreates.
func (t *Turn) Dataflow(fn func(t *Turn) error) {
	f := t.active
	if !f.alive {
		return
	}
	df := t.a.dataflow()
	df.nextID++
	b := &block{id: df.nextID, fn: fn, f: f}
	f.blocks = append(f.blocks, b)
	t.must(t.runBlock(b))
}

// runBlock runs b with its facet active, recording its reads.
func (t *Turn) runBlock(b *block) error {
	df := t.a.df
	prev, saved := df.current, t.active
	df.current, t.active = b, b.f
	defer func() {
		df.current, t.active = prev, saved
		if b.dead {
			// The block stopped its own facet: reads after the stop must
			// not leave edges behind.
			b.forget()
		}
	}()
	return b.fn(t)
}

// repair is the pre-commit action queued by the first damage of a turn: it
// re-runs dependent blocks, pass after pass, until no field is damaged.
func (t *Turn) repair() error {
	df := t.a.df
	for pass := 0; len(df.damaged) > 0; pass++ {
		if pass == MaxRepairPasses {
			return df.loopError()
		}
		fields := df.damaged
		df.damaged = df.spare[:0]
		run := df.run[:0]
		for i, c := range fields {
			c.damaged = false
			for b := range c.deps {
				if !b.queued {
					b.queued = true
					run = append(run, b)
				}
			}
			fields[i] = nil
		}
		df.spare = fields[:0]
		for _, b := range run {
			b.forget()
		}
		slices.SortFunc(run, func(x, y *block) int { return cmp.Compare(x.id, y.id) })
		for _, b := range run {
			b.queued = false
		}
		for i, b := range run {
			run[i] = nil
			// An earlier block of this pass may have stopped b's facet.
			if b.dead || !b.f.alive {
				continue
			}
			if err := t.runBlock(b); err != nil {
				return err
			}
		}
		df.run = run[:0]
	}
	t.repairQueued = false
	return nil
}

// loopError names the facets whose blocks still wait for repair.
func (df *dataflow) loopError() error {
	var facets []FacetID
	for _, c := range df.damaged {
		for b := range c.deps {
			if !slices.Contains(facets, b.f.id) {
				facets = append(facets, b.f.id)
			}
		}
	}
	slices.Sort(facets)
	return fmt.Errorf("%w: fields still damaged after %d repair passes; blocks of facets %v keep damaging fields they depend on",
		ErrDataflowLoop, MaxRepairPasses, facets)
}
