package dataspace

import (
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

var handles atomic.Uint64

func newHandle() Handle { return Handle(handles.Add(1)) }

type evKind uint8

const (
	evAssert evKind = iota + 1
	evRetract
	evMessage
	evSync
)

// event is one buffered action addressed to an entity. Events travel by
// value inside pooled batches, so delivering one allocates nothing; the
// struct is kept at 48 bytes.
type event struct {
	kind evKind
	h    Handle
	to   *target
	v    preserves.Value
	peer *Ref // evSync
}

type batchKind uint8

const (
	batchEvents batchKind = iota
	batchRelease
)

// batch is one system message: the events one committed turn addressed to
// one actor, in issue order, or a Release request.
type batch struct {
	kind   batchKind
	dest   *Actor
	events []event
	acct   *Account // charged cost at delivery; repaid in putBatch
	cost   int64    // len(events) × the sending turn's event cost
	weight int64    // the sending turn's event cost, inherited by the turn handling b
	cause  uint64   // tracing only: the sending turn's id (| selfSent)
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

func getBatch() *batch { return batchPool.Get().(*batch) }

// putBatch recycles b, repaying its account: every delivered batch ends
// here, handled or dropped. Its events are cleared so the pool pins no
// values.
func putBatch(b *batch) {
	if b.acct != nil {
		b.acct.Repay(b.cost)
		b.acct = nil
	}
	if cap(b.events) > 4096 {
		b.events = nil // do not let one burst pin a huge buffer forever
	} else {
		clear(b.events)
		b.events = b.events[:0]
	}
	b.kind, b.dest, b.cause, b.cost, b.weight = batchEvents, nil, 0, 0, 0
	batchPool.Put(b)
}

type preAction struct {
	fn    func(t *Turn) error
	f     *facet // active facet for fn; for inert checks, the facet to check
	inert bool
}

type spawnRec struct {
	a    *Actor
	boot func(t *Turn) error
}

type undoRec struct {
	h     Handle
	rec   outRec
	added bool // undo an assert (else undo a retract)
}

// Turn is the transactional context in which an actor handles one batch of
// events or one activation. Outbound events are buffered and delivered at
// commit, one batch per destination actor; if the turn fails, they are
// discarded and the actor crashes. A Turn is only valid during the callback
// it was passed to and only on that goroutine.
type Turn struct {
	a      *Actor
	active *facet
	acct   *Account // charged for this turn's output; may be nil
	weight int64    // units each event sent costs acct (≥ 1; see SetEventCost)
	// handled is the batch this turn handles (nil for activations): its
	// debt is settled at commit, netted with what the turn sends.
	handled *batch

	outs      []*batch
	outMap    map[*Actor]*batch // used once outs grows past a few entries
	lastDest  *Actor
	lastBatch *batch

	pre    []preAction
	spawns []spawnRec
	// preNext is the index in pre of the next action runPreCommit runs
	// (0 outside it); dataflow damage inserts its repair action there.
	preNext      int
	repairQueued bool // a dataflow repair action is pending in pre
	undo         []undoRec

	serial uint64 // counts turns of this actor (tests use it)

	// handoff: the goroutine running this turn has a runner, which takes
	// the drains of the idle actors this turn's commit claims (claimed)
	// once the turn lock is released. Otherwise each gets a goroutine.
	handoff bool
	claimed []*Actor
	wakes   []Waker // WakeLater's, for the runner (handoff only)
}

const outScanLimit = 8

// Account returns the account this turn runs on (runtime spec §9): the
// account of the batch it handles, or the one given to ActivateAccount;
// nil when nothing is counted.
func (t *Turn) Account() *Account { return t.acct }

// SetEventCost makes each event this turn sends cost n units of its
// account instead of one, and so each event sent by the turns handling
// them, and so on down the line: a turn whose events carry large values
// (a relay handling a packet of large messages) charges their size, so
// that credit bounds the memory they hold in mailboxes downstream, not
// just their number. n < 1 means 1.
func (t *Turn) SetEventCost(n int64) { t.weight = max(n, 1) }

// begin resets the turn for a fresh activation with f active.
func (t *Turn) begin(f *facet) {
	t.active = f
	t.acct = nil
	t.weight = 1
	t.handled = nil
	t.serial++
}

// work runs fn or the batch's events, then the pre-commit loop, turning
// panics into errors.
func (t *Turn) work(fn func(t *Turn) error, b *batch) error {
	if err := t.guard(fn, b); err != nil {
		return err
	}
	return t.guard(nil, nil)
}

// guard runs fn, or b's events, or (both nil) the pre-commit queue, and
// recovers a panic as a *PanicError.
func (t *Turn) guard(fn func(t *Turn) error, b *batch) (err error) {
	cur := -1 // the event being dispatched, for the crash report
	defer func() {
		if r := recover(); r != nil {
			if sf, ok := r.(stopFailed); ok {
				err = sf.err
				return
			}
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			if cur >= 0 {
				pe.Event = b.events[cur].v
			}
			err = pe
		}
	}()
	switch {
	case b != nil:
		for i := range b.events {
			cur = i
			if err := t.dispatch(&b.events[i]); err != nil {
				return err
			}
		}
		return nil
	case fn != nil:
		return fn(t)
	}
	return t.runPreCommit()
}

// dispatch delivers one incoming event to its entity with the entity's
// facet active; events for dead facets are ignored (runtime spec §4.8).
func (t *Turn) dispatch(ev *event) error {
	if t.a.tr != nil {
		t.a.tr.dequeue(ev)
	}
	tg := ev.to
	if !tg.facet.alive {
		return nil
	}
	t.active = tg.facet
	switch ev.kind {
	case evAssert:
		return tg.entity.Assert(t, ev.v, ev.h)
	case evRetract:
		return tg.entity.Retract(t, ev.h)
	case evMessage:
		return tg.entity.Message(t, ev.v)
	case evSync:
		return tg.entity.Sync(t, ev.peer)
	}
	return nil
}

// runPreCommit runs queued pre-commit actions (inert checks included) in
// order until none is left; actions may queue more.
func (t *Turn) runPreCommit() error {
	for i := 0; i < len(t.pre); i++ {
		p := t.pre[i]
		t.pre[i] = preAction{}
		t.preNext = i + 1
		if p.inert {
			if p.f.alive && p.f.inert() {
				t.active = p.f
				if t.a.tr != nil {
					t.a.tr.inert = true
				}
				if err := t.stopFacet(p.f, true); err != nil {
					return err
				}
			}
			continue
		}
		t.active = p.f
		if err := p.fn(t); err != nil {
			return err
		}
	}
	t.pre = t.pre[:0]
	t.preNext = 0
	return nil
}

// commit makes the turn final: deliver, then boot spawned actors. A child
// is caused by this turn, so everything the turn sends is queued at its
// destinations before the child can send anything there: booted first,
// a supervised worker's assertions could overtake the subscription its
// supervisor made in the same turn, and a message for it be lost.
// (Batches for a child not yet started wait in its mailbox.)
func (t *Turn) commit() {
	t.undo = resetUndo(t.undo)
	t.pre = t.pre[:0]
	t.deliver()
	if len(t.spawns) > 0 {
		for _, s := range t.spawns {
			t.a.sys.start(s.a, s.boot)
		}
		clear(t.spawns)
		t.spawns = t.spawns[:0]
	}
}

// deliver sends each destination its batch.
func (t *Turn) deliver() {
	if t.acct != nil {
		// One update of the account for the whole turn: what it sends,
		// less what the batch it handled cost (settled here rather than
		// after the turn, so a pass-through actor such as a dataspace
		// touches the shared counter once per turn, not twice).
		var net int64
		for _, b := range t.outs {
			b.acct = t.acct
			b.weight = t.weight
			b.cost = int64(len(b.events)) * t.weight
			net += b.cost
		}
		if h := t.handled; h != nil && h.acct == t.acct {
			net -= h.cost
			h.acct = nil
		}
		if net > 0 {
			t.acct.Borrow(net)
		} else if net < 0 {
			t.acct.Repay(-net)
		}
	}
	for _, b := range t.outs {
		dest := b.dest // b is the receiver's once pushed
		ok, start := dest.mb.push(b)
		switch {
		case !ok:
			putBatch(b)
		case !start:
		case t.handoff:
			t.claimed = append(t.claimed, dest)
		default:
			go drainGo(dest, nil)
		}
	}
	t.forgetOuts()
}

// forgetOuts empties the outgoing batches once they are delivered or
// dropped.
func (t *Turn) forgetOuts() {
	clear(t.outs)
	t.outs = t.outs[:0]
	if t.outMap != nil {
		clear(t.outMap)
	}
	t.lastDest, t.lastBatch = nil, nil
}

// discard drops everything buffered.
func (t *Turn) discard() {
	for _, b := range t.outs {
		putBatch(b)
	}
	t.forgetOuts()
	clear(t.pre)
	t.pre = t.pre[:0]
	t.preNext, t.repairQueued = 0, false
	for _, s := range t.spawns {
		s.a.drop()
	}
	clear(t.spawns)
	t.spawns = t.spawns[:0]
}

// rollback undoes assertion bookkeeping (runtime spec §5.3) and discards
// buffered effects; spawned actors never boot.
func (t *Turn) rollback() {
	out := t.a.outbound
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := t.undo[i]
		if u.added {
			delete(out, u.h)
		} else {
			out[u.h] = u.rec
		}
	}
	t.undo = resetUndo(t.undo)
	t.discard()
}

// resetUndo empties a turn's undo log for the next turn, dropping it
// when one large turn grew it: the actor's Turn lives as long as the
// actor, and a config file asserting 300,000 facts would otherwise pin
// its 10 MB log for good (issue 28).
func resetUndo(u []undoRec) []undoRec {
	if cap(u) > 4096 {
		return nil
	}
	clear(u)
	return u[:0]
}

// enqueue buffers ev for dest's actor, in the one batch this turn sends it.
func (t *Turn) enqueue(dest *Actor, ev event) {
	if t.a.tr != nil {
		t.a.tr.enqueue(dest, ev)
	}
	b := t.lastBatch
	if t.lastDest != dest {
		b = t.batchFor(dest)
	}
	b.events = append(b.events, ev)
}

func (t *Turn) batchFor(dest *Actor) *batch {
	var b *batch
	if t.outMap != nil && len(t.outMap) > 0 {
		b = t.outMap[dest]
	} else {
		for _, x := range t.outs {
			if x.dest == dest {
				b = x
				break
			}
		}
	}
	if b == nil {
		b = getBatch()
		b.dest = dest
		t.outs = append(t.outs, b)
		switch {
		case len(t.outs) > outScanLimit:
			if t.outMap == nil {
				t.outMap = make(map[*Actor]*batch)
			}
			if len(t.outMap) == 0 {
				for _, x := range t.outs {
					t.outMap[x.dest] = x
				}
			} else {
				t.outMap[dest] = b
			}
		}
	}
	t.lastDest, t.lastBatch = dest, b
	return b
}

// ---- Public API ----

// Actor returns the actor running this turn.
func (t *Turn) Actor() *Actor { return t.a }

// Log returns the actor's logger (tagged with the actor name).
func (t *Turn) Log() *zerolog.Logger { return t.a.logger() }

// ActiveFacet returns the id of the active facet.
func (t *Turn) ActiveFacet() FacetID { return t.active.id }

// FacetRef returns a handle on the active facet usable from any goroutine.
func (t *Turn) FacetRef() FacetRef { return FacetRef{a: t.a, f: t.active} }

// Assert asserts v to r's entity from the active facet and returns the new
// handle. The value is first rewritten by r's attenuation; if that rejects
// it, nothing happens and Assert returns 0. If the active facet is dead, a
// fresh handle is returned but nothing is recorded or sent (runtime spec
// §4.8).
func (t *Turn) Assert(r *Ref, v preserves.Value) Handle {
	if len(r.caveats) > 0 {
		var ok bool
		if v, ok = caveat.Apply(r.caveats, v); !ok {
			return 0
		}
	}
	h := newHandle()
	f := t.active
	if !f.alive {
		return h
	}
	rec := outRec{to: r.tgt, f: f}
	t.a.outbound[h] = rec
	f.addHandle(h)
	t.undo = append(t.undo, undoRec{h: h, rec: rec, added: true})
	t.enqueue(r.tgt.actor, event{kind: evAssert, to: r.tgt, v: v, h: h})
	return h
}

// Retract withdraws the assertion named h. Unknown or already retracted
// handles are ignored.
func (t *Turn) Retract(h Handle) {
	if rec, ok := t.a.outbound[h]; ok {
		t.withdraw(h, rec)
		rec.f.dropHandle(t.a.outbound)
	}
}

// withdraw forgets the outbound record of h and sends its retraction; the
// owning facet's handle list is the caller's business.
func (t *Turn) withdraw(h Handle, rec outRec) {
	delete(t.a.outbound, h)
	t.a.outbound = shrinkMap(t.a.outbound, &t.a.outboundPeak)
	t.undo = append(t.undo, undoRec{h: h, rec: rec})
	t.enqueue(rec.to.actor, event{kind: evRetract, to: rec.to, h: h})
}

// Update replaces the assertion in *slot by v asserted to r: the new value
// is asserted first, then the old handle retracted, so observers never see
// a gap. A nil v just retracts. *slot becomes the new handle (0 if none).
func (t *Turn) Update(slot *Handle, r *Ref, v preserves.Value) {
	old := *slot
	*slot = 0
	if v != nil {
		*slot = t.Assert(r, v)
	}
	if old != 0 {
		t.Retract(old)
	}
}

// Message sends v to r's entity, rewritten by r's attenuation (dropped if
// rejected). Sent even from a dead facet.
func (t *Turn) Message(r *Ref, v preserves.Value) {
	if len(r.caveats) > 0 {
		var ok bool
		if v, ok = caveat.Apply(r.caveats, v); !ok {
			return
		}
	}
	t.enqueue(r.tgt.actor, event{kind: evMessage, to: r.tgt, v: v})
}

// Sync asks r's entity to confirm that everything this actor sent it
// earlier has been handled; k then runs in a later turn with the current
// facet active (not at all if that facet stops first). Attenuation never
// applies to Sync.
func (t *Turn) Sync(r *Ref, k func(t *Turn) error) {
	t.SyncPeer(r, t.Create(&syncCont{k: k}))
}

// SyncPeer is Sync with an explicit peer entity, which receives the reply
// (#t) as a message. Relays use it to forward sync requests.
func (t *Turn) SyncPeer(r *Ref, peer *Ref) {
	t.enqueue(r.tgt.actor, event{kind: evSync, to: r.tgt, peer: peer})
}

// syncCont is the one-shot continuation entity behind Sync.
type syncCont struct {
	BaseEntity
	k func(t *Turn) error
}

func (s *syncCont) Message(t *Turn, _ preserves.Value) error {
	k := s.k
	if k == nil {
		return nil
	}
	s.k = nil
	return k(t)
}

// Create places e in the active facet and returns an unattenuated Ref to
// it. If e implements StopHandler, its OnStop becomes a stop action of the
// facet.
func (t *Turn) Create(e Entity) *Ref {
	tg := &target{id: targetIDs.Add(1), actor: t.a, facet: t.active, entity: e}
	tg.base.tgt = tg
	if sh, ok := e.(StopHandler); ok && t.active.alive {
		t.active.stops = append(t.active.stops, sh.OnStop)
	}
	return &tg.base
}

// Facet creates a child facet of the active facet and runs boot in it. The
// new facet is checked for inertness at pre-commit, not now. boot's error is
// returned (returning it from the callback fails the turn).
func (t *Turn) Facet(boot func(t *Turn) error) (FacetID, error) {
	f := t.a.newFacet(t.active)
	if t.a.tr != nil {
		t.a.tr.facetStart(f)
	}
	saved := t.active
	t.active = f
	var err error
	if boot != nil {
		err = boot(t)
	}
	t.active = saved
	t.pre = append(t.pre, preAction{f: f, inert: true})
	return f.id, err
}

// Stop stops the active facet (immediately; runtime spec §4.6).
func (t *Turn) Stop() { t.must(t.stopFacet(t.active, true)) }

// StopFacet stops the facet with the given id if it is alive.
func (t *Turn) StopFacet(id FacetID) {
	if f, ok := t.a.facets[id]; ok {
		t.must(t.stopFacet(f, true))
	}
}

// StopFacetAndContinue appends k to the facet's stop actions (so it runs
// last, with the parent active) and stops it.
func (t *Turn) StopFacetAndContinue(id FacetID, k func(t *Turn) error) {
	if f, ok := t.a.facets[id]; ok {
		f.stops = append(f.stops, k)
		t.must(t.stopFacet(f, true))
	}
}

// StopRoot stops the root facet: a clean actor shutdown at the end of the
// turn.
func (t *Turn) StopRoot() { t.must(t.stopFacet(t.a.root, true)) }

// stopFailed carries a stop-action error out of Stop/StopFacet/StopRoot
// (which have no error result) to the turn's recover, so the turn fails
// with the original error.
type stopFailed struct{ err error }

func (t *Turn) must(err error) {
	if err != nil {
		panic(stopFailed{err})
	}
}

// OnStop registers a stop action on the active facet (ignored if dead).
func (t *Turn) OnStop(fn func(t *Turn) error) {
	if t.active.alive {
		t.active.stops = append(t.active.stops, fn)
	}
}

// PreventInertCheck keeps the active facet from being stopped as inert
// until the returned function is called (once; later calls do nothing; any
// goroutine). No-op on a dead facet. Disarming does not trigger an inert
// check (runtime spec §4.4).
func (t *Turn) PreventInertCheck() func() {
	f := t.active
	if !f.alive {
		return func() {}
	}
	f.preventers.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			f.preventers.Add(-1)
		}
	}
}

// AddExitHook registers fn to run at actor termination, after every
// remaining assertion has been retracted, with err the exit error (nil for
// a normal exit). Events fn sends are discarded (runtime spec §3.4 QUIRK,
// copied): use it for local cleanup.
func (t *Turn) AddExitHook(fn func(t *Turn, err error)) {
	t.a.exitHooks = append(t.a.exitHooks, fn)
}

// PreCommit queues fn to run at commit, before delivery, with the current
// facet active. It may fail the turn.
func (t *Turn) PreCommit(fn func(t *Turn) error) {
	t.pre = append(t.pre, preAction{fn: fn, f: t.active})
}

// A Waker is woken once the goroutine that ran a turn has run the turns
// handed to it (see [Turn.WakeLater]).
type Waker interface{ Wake() }

// WakeLater asks for w.Wake to be called once the goroutine running this
// turn has run the turns handed off to it: at the end of its activation,
// of its [Burst], or of its drain's budget, and before it waits for
// anything. A relay's outbound side uses it to wake its writer once for
// all the packets one read caused, not once per packet. It reports false,
// having kept nothing, when the turn runs outside the hand-off scheduler
// (ActivateNow): then the caller wakes w itself. w.Wake must not block,
// nor call into a turn.
func (t *Turn) WakeLater(w Waker) bool {
	if !t.handoff {
		return false
	}
	t.wakes = append(t.wakes, w)
	return true
}

// Later runs fn in a later turn of this actor, after batches already in its
// mailbox, in the facet active now (skipped if that facet has stopped).
// (The reference runs it in the root facet; runtime spec §19 quirk 4 allows
// either.)
func (t *Turn) Later(fn func(t *Turn) error) {
	// A throwaway entity in the active facet: delivery then skips it if
	// the facet has stopped, exactly like any other event.
	tg := &target{id: targetIDs.Add(1), actor: t.a, facet: t.active, entity: laterEntity{fn: fn}}
	t.enqueue(t.a, event{kind: evMessage, to: tg})
}

type laterEntity struct {
	BaseEntity
	fn func(t *Turn) error
}

func (l laterEntity) Message(t *Turn, _ preserves.Value) error { return l.fn(t) }

// Shutdown asks this actor to stop cleanly: a later turn stops the root
// facet.
func (t *Turn) Shutdown() { t.a.release() }

// Spawn creates an actor that boots when this turn commits (never, if the
// turn fails).
func (t *Turn) Spawn(name string, boot func(t *Turn) error) *Actor {
	c := t.a.sys.newActor(name)
	t.spawns = append(t.spawns, spawnRec{a: c, boot: boot})
	if t.a.tr != nil {
		t.a.tr.spawn(c)
	}
	return c
}

// SpawnLink is Spawn plus a two-way link (runtime spec §7.7): when the
// child terminates (normally or not) the active facet stops cleanly; when
// the active facet stops, the child's root facet stops.
func (t *Turn) SpawnLink(name string, boot func(t *Turn) error) *Actor {
	c := t.Spawn(name, boot)
	// parent→child: our facet asserts #t to a StopOnRetract entity in the
	// child's root. The child ignores the assertion itself, so it is only
	// recorded, not delivered.
	ctg := &target{id: targetIDs.Add(1), actor: c, facet: c.root, entity: stopOnRetract{}}
	ctg.base.tgt = ctg
	if f := t.active; f.alive {
		h := newHandle()
		rec := outRec{to: ctg, f: f}
		t.a.outbound[h] = rec
		f.addHandle(h)
		t.undo = append(t.undo, undoRec{h: h, rec: rec, added: true})
	}
	// child→parent: the child's root holds an assertion to a StopOnRetract
	// entity in our facet. The child has not started, so we may touch its
	// state.
	ptg := t.Create(stopOnRetract{}).tgt
	h := newHandle()
	c.outbound[h] = outRec{to: ptg, f: c.root}
	c.root.addHandle(h)
	if t.a.tr != nil {
		t.a.tr.link(t, c)
	}
	return c
}

// stopOnRetract stops its own facet on any retraction (links, §6).
type stopOnRetract struct{ BaseEntity }

func (stopOnRetract) Retract(t *Turn, _ Handle) error {
	t.Stop()
	return nil
}
