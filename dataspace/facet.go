package dataspace

import (
	"cmp"
	"context"
	"sync/atomic"
)

var facetIDs atomic.Uint64

// facet is a node of an actor's facet tree. All fields but preventers are
// guarded by the actor's turn lock.
type facet struct {
	id     FacetID
	actor  *Actor
	parent *facet
	// children are the live children in creation (= ascending id)
	// order, with nil holes where one stopped: detaching is O(1) (slot is
	// a child's index here), so a parent of 10,000 during-facets does not
	// pay a quadratic walk as they go. nChildren counts the live ones;
	// the slice is compacted when mostly holes.
	children  []*facet
	nChildren int
	slot      int
	alive     bool

	// handles lists the outbound handles asserted while this facet was
	// active, in ascending order (handles are allocated monotonically).
	// Retracted handles are pruned lazily; nHandles counts the live ones.
	handles  []Handle
	nHandles int

	stops  []func(t *Turn) error
	blocks []*block // dataflow blocks registered here (dataflow.go)
	nTasks int      // running linked tasks (timers included)

	// ctx is created on first use (first linked task) and cancelled when
	// the facet stops.
	ctx    context.Context
	cancel context.CancelFunc

	// preventers is the inert-check preventer counter; disarm functions
	// may run on any goroutine, hence atomic.
	preventers atomic.Int32
}

// newFacet creates a live facet under parent (nil for the root). Caller
// holds the actor's turn lock (or owns the actor exclusively).
func (a *Actor) newFacet(parent *facet) *facet {
	f := &facet{id: FacetID(facetIDs.Add(1)), actor: a, parent: parent, alive: true}
	a.facets[f.id] = f
	if parent != nil {
		f.slot = len(parent.children)
		parent.children = append(parent.children, f)
		parent.nChildren++
	}
	return f
}

// detach removes the live child c from f's children.
func (f *facet) detach(c *facet) {
	if c.slot >= len(f.children) || f.children[c.slot] != c {
		return // f's list was already taken (f is stopping)
	}
	f.children[c.slot] = nil
	f.nChildren--
	if f.nChildren == 0 {
		clear(f.children)
		f.children = f.children[:0]
		return
	}
	if len(f.children) > 32 && len(f.children) > 2*f.nChildren {
		live := f.children[:0]
		for _, x := range f.children {
			if x != nil {
				x.slot = len(live)
				live = append(live, x)
			}
		}
		clear(f.children[len(live):])
		f.children = live
	}
}

func (f *facet) context() context.Context {
	if f.ctx == nil {
		f.ctx, f.cancel = context.WithCancel(f.actor.ctx)
	}
	return f.ctx
}

func (f *facet) addHandle(h Handle) {
	f.handles = append(f.handles, h)
	f.nHandles++
}

// dropHandle records that one of f's handles is gone; the slice is
// compacted when mostly stale, so churn in a long-lived facet stays
// bounded.
func (f *facet) dropHandle(out map[Handle]outRec) {
	f.nHandles--
	if len(f.handles) > 32 && len(f.handles) > 4*f.nHandles {
		live := f.handles[:0]
		for _, h := range f.handles {
			if r, ok := out[h]; ok && r.f == f {
				live = append(live, h)
			}
		}
		clear(f.handles[len(live):])
		f.handles = live
	}
}

// inert implements runtime spec §4.3.
func (f *facet) inert() bool {
	if f.parent != nil && !f.parent.alive {
		return true
	}
	return f.nChildren == 0 &&
		(f.parent == nil || f.nHandles == 0) &&
		f.nTasks == 0 &&
		f.preventers.Load() == 0
}

// stopFacet implements terminate(F, direction) of runtime spec §4.6.
// atOrAbove is true for an explicitly stopped facet (or one stopped by an
// inert check) and false for its descendants.
func (t *Turn) stopFacet(f *facet, atOrAbove bool) error {
	a := t.a
	if !f.alive {
		return nil
	}
	if a.tr != nil {
		a.tr.facetStop(f, atOrAbove)
	}
	// 2. Dead from now on.
	f.alive = false
	delete(a.facets, f.id)
	if f.blocks != nil {
		f.dropBlocks() // dead facets' blocks never run again
	}
	// 3. Children first, depth-first, in creation order. The list is
	// detached first: a child's stop action may stop a sibling explicitly,
	// and detaching that sibling must not shift the list being walked.
	children := f.children
	f.children, f.nChildren = nil, 0
	for _, c := range children {
		if c == nil {
			continue
		}
		if err := t.stopFacet(c, false); err != nil {
			return err
		}
	}
	// 4. Detach from the parent.
	p := f.parent
	if atOrAbove && p != nil {
		p.detach(f)
	}
	// 5. Stop actions, in registration order, with the parent active (the
	// root's own, now dead, facet for the root). A descendant's parent is
	// already dead here, so assertions made by its stop actions vanish
	// (runtime spec §4.8; §19 quirk 8, copied).
	if len(f.stops) > 0 {
		saved := t.active
		t.active = cmp.Or(p, f)
		stops := f.stops
		f.stops = nil
		for _, s := range stops {
			if err := s(t); err != nil {
				t.active = saved
				return err
			}
		}
		t.active = saved
	}
	// 6. Retract the facet's outbound assertions, oldest first. The facet
	// gives up its handle list before the walk, so nothing the walk does
	// (dropHandle compacts the list in place) can move a handle behind it.
	hs := f.handles
	f.handles, f.nHandles = nil, 0
	for _, h := range hs {
		if r, ok := a.outbound[h]; ok && r.f == f {
			t.withdraw(h, r)
		}
	}
	// 7. Cancel its linked tasks.
	if f.cancel != nil {
		f.cancel()
	}
	f.nTasks = 0
	// 8. Cascade upwards.
	if atOrAbove && p != nil && p.alive && p.inert() {
		if a.tr != nil {
			a.tr.inert = true
		}
		return t.stopFacet(p, true)
	}
	return nil
}

// FacetRef names a facet so that code outside the actor (linked tasks, I/O
// goroutines, timers) can run turns in it. It is a small value, safe to copy
// and to use from any goroutine.
type FacetRef struct {
	a *Actor
	f *facet
}

// ID returns the facet's id (0 for the zero FacetRef).
func (r FacetRef) ID() FacetID {
	if r.f == nil {
		return 0
	}
	return r.f.id
}

// Actor returns the owning actor.
func (r FacetRef) Actor() *Actor { return r.a }

// Activate runs fn as a turn with the facet active, on the calling
// goroutine, under the actor's turn lock, and commits it (or, if fn fails,
// crashes the actor). It returns whether the actor is alive afterwards:
// false without running fn if the actor has terminated. If the facet has
// stopped but the actor lives, fn is skipped and Activate returns true
// (runtime spec §5.5 / §19 quirk 9: Go skips dead facets).
//
// Activate is paced (runtime spec §9): the turn is charged to the actor's
// account for activations from outside (Actor.OutsideAccount), which is
// repaid as the batches it sends are handled and the bytes relays queue
// because of it are written. While that account's debt is past
// ActivateHighWater, Activate first waits, so a goroutine feeding a flood
// into the actor world is slowed to the pace of its slowest consumer
// instead of queueing without bound. ActivateContext is the variant that
// gives up when its context ends. Activations that must never wait use
// ActivateNow (see the package doc's list).
//
// Activate blocks while the actor runs another turn. After its turn it
// runs the turns of the idle actors that turn sent to (hand-off, at most
// handoffBudget batches; see the package doc), so it returns once they
// have run. It must not be called from inside a turn of any actor (the
// turn lock is not reentrant, a turn that waits for debt may be the one
// that would repay it, and the hand-offs would run under the caller's
// lock): use t.Later, t.Message, or ActivateNow for another actor.
func (r FacetRef) Activate(fn func(t *Turn) error) bool {
	alive, _ := r.ActivateContext(context.Background(), fn)
	return alive
}

// ActivateHighWater is the debt (one unit per event, plus one per KiB a
// relay queues) of an actor's outside account past which Activate waits:
// a few MiB in flight per producing actor.
const ActivateHighWater = 4096

// ActivateContext is Activate that returns ctx's error, without running fn,
// if ctx ends while it waits for the actor's outside account; it also
// stops waiting, returning false, if the actor terminates meanwhile.
func (r FacetRef) ActivateContext(ctx context.Context, fn func(t *Turn) error) (bool, error) {
	a := r.a
	if a == nil || a.dead.Load() {
		return false, nil
	}
	if checkTurns {
		checkNotInTurn("Activate", a, true)
	}
	if a.ext.Debt() > ActivateHighWater {
		// The slow path: also stop waiting when the actor ends.
		wctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(a.ctx, cancel)
		err := a.ext.Wait(wctx, ActivateHighWater)
		stop()
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return !a.dead.Load(), ctx.Err()
			}
			return false, nil // the actor ended
		}
	}
	return r.ActivateAccount(&a.ext, fn), nil
}

// ActivateNow is Activate without the wait: the turn is still charged to
// the actor's outside account, but runs at once. It is for activations
// that must never wait because waiting could deadlock or lose a report:
// stopping and closing, exit and crash reports, timers, calls from inside
// a turn of another actor. See the package doc for the list. Since it may
// run inside another turn, the idle actors its turn sends to get
// goroutines of their own: it never runs their turns itself.
func (r FacetRef) ActivateNow(fn func(t *Turn) error) bool {
	if r.a == nil {
		return false
	}
	return r.activate(&r.a.ext, fn, false)
}

// ActivateAccount is Activate with the turn's output charged to acct
// (runtime spec §9); nil means no accounting. Like Activate, it must not
// be called from inside a turn, and it runs the turns of idle actors its
// turn sends to before it returns (at most handoffBudget batches; see the
// package doc).
func (r FacetRef) ActivateAccount(acct *Account, fn func(t *Turn) error) bool {
	return r.activate(acct, fn, true)
}

// activate runs fn as a turn under the turn lock; with handoff, it then
// runs the drains that turn claimed, after the lock is released.
func (r FacetRef) activate(acct *Account, fn func(t *Turn) error, handoff bool) bool {
	return r.activateIn(acct, fn, handoff, nil)
}

// activateIn is activate with the runner of a Burst (nil: one of its own
// if the turn hands anything off, given back at the end).
func (r FacetRef) activateIn(acct *Account, fn func(t *Turn) error, handoff bool, burst *runner) bool {
	a := r.a
	if a == nil || a.dead.Load() {
		return false
	}
	if checkTurns {
		checkNotInTurn("ActivateNow (or ActivateAccount)", a, false)
	}
	alive, rn := r.activateLocked(acct, fn, handoff, burst)
	if rn != nil {
		rn.run()
		if rn != burst {
			putRunner(rn)
		}
	}
	return alive
}

// activateLocked is activate's turn, under the turn lock; it returns the
// runner holding the drains and wake-ups the turn handed off (nil if
// none): burst if not nil.
func (r FacetRef) activateLocked(acct *Account, fn func(t *Turn) error, handoff bool, burst *runner) (alive bool, rn *runner) {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead.Load() {
		return false, nil
	}
	if r.f.alive {
		t := &a.turn
		t.handoff = handoff
		a.runTurn(r.f, fn, nil, acct)
		t.handoff = false
		if len(t.claimed) > 0 || len(t.wakes) > 0 {
			if rn = burst; rn == nil {
				rn = getRunner(false)
			}
			rn.adopt(t)
		}
	}
	return !a.dead.Load(), rn
}
