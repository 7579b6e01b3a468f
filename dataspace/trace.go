package dataspace

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// Causal tracing (services spec §1.6, trace.prs).
//
// With Options.Trace set, every actor gets an actorTrace that records what
// its turns do and hands the System's Tracer one TraceRecord per actor
// start, per turn and per actor stop. Without it the field is nil and each
// hook in the runtime is a single nil check on a field already in cache:
// no allocation, no atomic operation, no call.
//
// The recording is deliberately separate from rendering: the runtime only
// builds plain Go records (ids, handles, the immutable values carried by
// events) and the Tracer decides how to write them (dataspace/trace renders
// trace.prs records in Preserves text syntax). A Tracer is called on actor
// goroutines while the actor's turn lock is held, so it must never block
// and never call back into the runtime.

// Tracer receives the runtime's causal trace. Trace owns r from the call
// on. It is called concurrently from many actors' goroutines, with their
// turn locks held: it must return promptly (buffer or drop, never block)
// and must not call into the runtime.
type Tracer interface {
	Trace(r *TraceRecord)
}

// TraceRecordKind says which part of a TraceRecord is meaningful.
type TraceRecordKind uint8

const (
	// TraceKindStart: the actor is about to boot; Name is set.
	TraceKindStart TraceRecordKind = iota + 1
	// TraceKindTurn: the actor ran a turn; Turn is set.
	TraceKindTurn
	// TraceKindStop: the actor terminated; Status and Err are set.
	TraceKindStop
)

// TraceRecord is one trace.prs TraceEntry before rendering.
type TraceRecord struct {
	Time   time.Time
	Actor  uint64 // Actor.ID
	Kind   TraceRecordKind
	Name   string     // TraceKindStart: the actor's name
	Turn   *TraceTurn // TraceTurn
	Status ExitStatus // TraceKindStop
	Err    error      // TraceKindStop: nil for a normal exit
}

// TraceTurn describes one turn: a process-unique id, what caused it, and
// what it did, in order.
type TraceTurn struct {
	ID      uint64
	Cause   TraceCause
	Actions []TraceAction
	// Failed is set when the turn failed and rolled back: its enqueued
	// events were discarded and its spawned actors never started, so
	// those actions are not listed.
	Failed bool
}

// TraceCauseKind is the shape of a TurnCause.
type TraceCauseKind uint8

const (
	// CauseTurn: handling a batch sent by turn TraceCause.Turn (or the
	// boot of an actor spawned by it).
	CauseTurn TraceCauseKind = iota + 1
	// CauseCleanup: the retractions of a terminating actor.
	CauseCleanup
	// CauseTaskRelease: linked task TraceCause.Task returned normally
	// and its facet is stopped.
	CauseTaskRelease
	// CauseExternal: anything else (an activation from an I/O goroutine
	// or linked task, a Release request, a top-level spawn);
	// TraceCause.Description says which.
	CauseExternal
	// CauseDelay: an After timer set by turn TraceCause.Turn fired after
	// TraceCause.Period.
	CauseDelay
	// CausePeriodic: an Every tick (period TraceCause.Period).
	CausePeriodic
)

// TraceCause is a TurnCause.
type TraceCause struct {
	Kind        TraceCauseKind
	Turn        uint64        // CauseTurn, CauseDelay
	Task        uint64        // CauseTaskRelease
	Description string        // CauseExternal
	Period      time.Duration // CauseDelay, CausePeriodic
}

// TraceActionKind is the shape of an ActionDescription.
type TraceActionKind uint8

const (
	// ActDequeue: the turn handled an event another actor sent.
	ActDequeue TraceActionKind = iota + 1
	// ActEnqueue: the turn sent an event to another actor.
	ActEnqueue
	// ActDequeueInternal: the turn handled an event this actor sent
	// itself (Later, or a message to one of its own entities).
	ActDequeueInternal
	// ActEnqueueInternal: the turn sent an event to one of its own
	// entities.
	ActEnqueueInternal
	// ActSpawn: the turn spawned actor Child (linked if Link).
	ActSpawn
	// ActLink: the spawned actor Child is linked to this actor by the
	// two assertions ChildToParent and ParentToChild.
	ActLink
	// ActFacetStart: facet Path (root first) started.
	ActFacetStart
	// ActFacetStop: facet Path stopped for Reason.
	ActFacetStop
	// ActLinkedTaskStart: linked task Task named TaskName started.
	ActLinkedTaskStart
)

// TraceEventKind is the shape of a TurnEvent.
type TraceEventKind uint8

const (
	TraceAssert TraceEventKind = iota + 1
	TraceRetract
	TraceMessage
	TraceSync
)

// FacetStopReason is why a facet stopped (trace.prs FacetStopReason).
type FacetStopReason uint8

const (
	// StopExplicit: Stop, StopFacet, StopRoot or a Release request.
	StopExplicit FacetStopReason = iota + 1
	// StopInert: the facet was found inert (runtime spec §4.3).
	StopInert
	// StopParent: an ancestor was stopping.
	StopParent
	// StopActor: the actor was terminating.
	StopActor
)

// TraceTarget names an entity: its actor, its facet and its
// process-unique object id (the number in Ref.String).
type TraceTarget struct {
	Actor uint64
	Facet FacetID
	OID   uint64
}

// TraceAction is one ActionDescription. Which fields mean something
// depends on Kind (see the TraceActionKind constants).
type TraceAction struct {
	Kind TraceActionKind

	// Dequeue and enqueue actions.
	Event  TraceEventKind
	Target TraceTarget
	// Value is the assertion or message body; nil when the event is
	// runtime-internal (a Later continuation), written as opaque.
	Value  preserves.Value
	Handle Handle      // assert, retract
	Peer   TraceTarget // sync

	// Spawn and link actions.
	Child                        uint64
	Link                         bool
	ChildToParent, ParentToChild Handle

	// Facet actions.
	Path   []FacetID
	Reason FacetStopReason

	// Linked-task actions.
	TaskName string
	Task     uint64
}

// Process-unique ids of traced turns and linked tasks; only touched when
// tracing is on.
var (
	traceTurnIDs atomic.Uint64
	traceTaskIDs atomic.Uint64
)

// selfSent marks a batch cause as "sent by the receiving actor itself"
// (high bit; turn ids never get there).
const selfSent = 1 << 63

// actorTrace is an actor's tracing state, guarded by the actor's turn
// lock (except spawnedBy, written by the spawning turn before the actor
// starts).
type actorTrace struct {
	tracer Tracer
	a      *Actor

	cur      *TraceTurn // the turn being recorded, nil between turns
	internal bool       // the batch being handled was self-sent
	pending  TraceCause // cause of the next activation turn, if set
	inert    bool       // the next facet stop is an inert stop
}

// traceActor gives a a tracing state if the system traces.
func (s *System) traceActor(a *Actor) {
	if s.tracer != nil {
		a.tr = &actorTrace{tracer: s.tracer, a: a}
	}
}

// started emits the start record; the boot turn that follows is caused
// by the spawning turn (pending, set by spawn) or is external.
func (tr *actorTrace) started() {
	tr.tracer.Trace(&TraceRecord{Time: time.Now(), Actor: tr.a.id, Kind: TraceKindStart, Name: tr.a.name})
	if tr.pending.Kind == 0 {
		tr.pending = TraceCause{Kind: CauseExternal, Description: "spawn"}
	}
}

// beginTurn opens the record of a turn handling b (nil: an activation).
func (tr *actorTrace) beginTurn(b *batch) {
	t := &TraceTurn{ID: traceTurnIDs.Add(1)}
	tr.internal = false
	switch {
	case b != nil && b.cause != 0:
		tr.internal = b.cause&selfSent != 0
		t.Cause = TraceCause{Kind: CauseTurn, Turn: b.cause &^ selfSent}
	case b != nil:
		t.Cause = TraceCause{Kind: CauseExternal, Description: "untraced sender"}
	case tr.pending.Kind != 0:
		t.Cause = tr.pending
	default:
		t.Cause = TraceCause{Kind: CauseExternal, Description: "activation"}
	}
	tr.pending = TraceCause{}
	tr.cur = t
}

// beginCleanup opens the record of the terminating actor's retractions.
func (tr *actorTrace) beginCleanup() {
	tr.internal = false
	tr.cur = &TraceTurn{ID: traceTurnIDs.Add(1), Cause: TraceCause{Kind: CauseCleanup}}
}

// endTurn closes the current record and hands it to the tracer. On
// success the outgoing batches are stamped with the turn id (before
// delivery, so receivers can name their cause); on failure the enqueue,
// spawn and link actions are dropped, as the events and actors were. An
// empty cleanup turn is not worth a record.
func (tr *actorTrace) endTurn(t *Turn, failed error) {
	cur := tr.cur
	if cur == nil {
		return
	}
	tr.cur = nil
	if failed != nil {
		cur.Failed = true
		cur.Actions = slices.DeleteFunc(cur.Actions, func(act TraceAction) bool {
			return act.Kind == ActEnqueue || act.Kind == ActEnqueueInternal || act.Kind == ActSpawn || act.Kind == ActLink
		})
	} else {
		for _, b := range t.outs {
			b.cause = cur.ID
			if b.dest == tr.a {
				b.cause |= selfSent
			}
		}
	}
	if cur.Cause.Kind == CauseCleanup && len(cur.Actions) == 0 {
		return
	}
	tr.tracer.Trace(&TraceRecord{Time: time.Now(), Actor: tr.a.id, Kind: TraceKindTurn, Turn: cur})
}

// stopped emits the stop record.
func (tr *actorTrace) stopped(status ExitStatus, err error) {
	tr.cur = nil
	tr.tracer.Trace(&TraceRecord{Time: time.Now(), Actor: tr.a.id, Kind: TraceKindStop, Status: status, Err: err})
}

func (tr *actorTrace) add(act TraceAction) {
	if tr.cur != nil {
		tr.cur.Actions = append(tr.cur.Actions, act)
	}
}

func traceTargetOf(tg *target) TraceTarget {
	return TraceTarget{Actor: tg.actor.id, Facet: tg.facet.id, OID: tg.id}
}

// traceEvent fills the event part of act from ev.
func traceEvent(act *TraceAction, ev *event) {
	act.Target = traceTargetOf(ev.to)
	switch ev.kind {
	case evAssert:
		act.Event, act.Value, act.Handle = TraceAssert, ev.v, ev.h
	case evRetract:
		act.Event, act.Handle = TraceRetract, ev.h
	case evMessage:
		act.Event, act.Value = TraceMessage, ev.v
	case evSync:
		act.Event = TraceSync
		if ev.peer != nil {
			act.Peer = traceTargetOf(ev.peer.tgt)
		}
	}
}

// dequeue records the handling of one incoming event.
func (tr *actorTrace) dequeue(ev *event) {
	act := TraceAction{Kind: ActDequeue}
	if tr.internal {
		act.Kind = ActDequeueInternal
	}
	traceEvent(&act, ev)
	tr.add(act)
}

// enqueue records one buffered outgoing event.
func (tr *actorTrace) enqueue(dest *Actor, ev event) {
	if tr.cur == nil {
		return
	}
	act := TraceAction{Kind: ActEnqueue}
	if dest == tr.a {
		act.Kind = ActEnqueueInternal
	}
	traceEvent(&act, &ev)
	tr.add(act)
}

// facetPath lists f's ancestry, root first.
func facetPath(f *facet) []FacetID {
	var path []FacetID
	for g := f; g != nil; g = g.parent {
		path = append(path, g.id)
	}
	slices.Reverse(path)
	return path
}

func (tr *actorTrace) facetStart(f *facet) {
	tr.add(TraceAction{Kind: ActFacetStart, Path: facetPath(f)})
}

// facetStop records a facet stop; atOrAbove is stopFacet's argument
// (false for descendants of the facet being stopped).
func (tr *actorTrace) facetStop(f *facet, atOrAbove bool) {
	reason := StopExplicit
	switch {
	case !atOrAbove:
		reason = StopParent
	case tr.inert:
		reason = StopInert
	}
	tr.inert = false
	tr.add(TraceAction{Kind: ActFacetStop, Path: facetPath(f), Reason: reason})
}

// spawn records that the current turn spawned c, whose boot turn it
// causes.
func (tr *actorTrace) spawn(c *Actor) {
	if tr.cur != nil && c.tr != nil {
		c.tr.pending = TraceCause{Kind: CauseTurn, Turn: tr.cur.ID}
	}
	tr.add(TraceAction{Kind: ActSpawn, Child: c.id})
}

// link records the links SpawnLink just made between the active facet
// and c: the parent→child handle is the newest handle of the active facet
// (absent if that facet is dead), the child→parent one the newest of c's
// root facet. The spawn action of c becomes a linked one.
func (tr *actorTrace) link(t *Turn, c *Actor) {
	if tr.cur == nil {
		return
	}
	acts := tr.cur.Actions
	for i := len(acts) - 1; i >= 0; i-- {
		if acts[i].Kind == ActSpawn && acts[i].Child == c.id {
			acts[i].Link = true
			break
		}
	}
	act := TraceAction{Kind: ActLink, Child: c.id}
	if hs := t.active.handles; len(hs) > 0 {
		if rec, ok := t.a.outbound[hs[len(hs)-1]]; ok && rec.to.actor == c {
			act.ParentToChild = hs[len(hs)-1]
		}
	}
	if hs := c.root.handles; len(hs) > 0 {
		act.ChildToParent = hs[len(hs)-1]
	}
	tr.add(act)
}

// taskStart records a linked task start and returns its id.
func (tr *actorTrace) taskStart(name string) uint64 {
	id := traceTaskIDs.Add(1)
	tr.add(TraceAction{Kind: ActLinkedTaskStart, TaskName: name, Task: id})
	return id
}

// taskReleased makes the next activation turn a linked-task release.
func (tr *actorTrace) taskReleased(id uint64) {
	tr.pending = TraceCause{Kind: CauseTaskRelease, Task: id}
}

// timer wraps the function of an After (kind CauseDelay: caused by the
// current turn) or Every (CausePeriodic) timer so that its turn is
// recorded with that cause.
func (tr *actorTrace) timer(kind TraceCauseKind, d time.Duration, fn func(t *Turn) error) func(t *Turn) error {
	c := TraceCause{Kind: kind, Period: d}
	if kind == CauseDelay && tr.cur != nil {
		c.Turn = tr.cur.ID
	}
	return func(t *Turn) error {
		t.a.tr.recause(c)
		return fn(t)
	}
}

// recause replaces the cause of the turn being recorded (the record is
// only emitted when the turn ends).
func (tr *actorTrace) recause(c TraceCause) {
	if tr.cur != nil {
		tr.cur.Cause = c
	}
}

// external names the cause of the next activation turn.
func (tr *actorTrace) external(desc string) {
	tr.pending = TraceCause{Kind: CauseExternal, Description: desc}
}
