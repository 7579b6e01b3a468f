// Package dataspace is the Syndicated Actor runtime: actors, facets, turns,
// entities, capabilities (Refs) and the Dataspace entity, following
// runtime.md §2–§13.
//
// # Object model
//
// A [System] owns actors. An [Actor] owns a tree of facets; the root facet
// is created with the actor, and boot runs in a child of it. An [Entity]
// lives in one facet and is addressed through a [Ref], a capability that
// also carries attenuation caveats. Everything an actor does happens in a
// [Turn]: the turn handles one batch of incoming events (or one
// activation), applies immediate effects (facet creation and stop, stop
// actions, entity creation, linked tasks) at once, and buffers outbound
// events (assert, retract, message, sync, later). At commit, after the
// pre-commit actions (inert checks of new facets included), spawned actors
// boot and each destination actor receives exactly one batch holding the
// events addressed to it, in issue order. If the work fails (an error or a
// panic in any callback), the buffered events are discarded, assertion
// bookkeeping is rolled back, spawned actors never boot, and the actor
// terminates: every assertion it still holds is retracted newest first,
// exit hooks run, linked tasks are cancelled. Stop actions do not run on a
// crash. A panic never escapes an actor.
//
// # Goroutines and ownership
//
// An actor has a goroutine only while it has work: the push that makes
// its mailbox non-empty starts one (drain), which swaps out the whole
// queue, handles many batches (one turn each) per swap, and ends when it
// finds the mailbox empty. At most one drain runs per actor (the mailbox's
// running flag, under the mailbox lock); the drain that sees the actor
// dead finishes it. The mailbox is a mutex-protected slice of batches;
// senders append under the mailbox lock only, so sending never waits for
// the receiver's turn. An idle actor so costs its state and no stack: a
// server with thousands of idle sessions and daemons holds no goroutine
// for their actors (issue 16; starting a goroutine costs about what
// waking a parked one does).
//
// The turn lock (Actor.mu) guards all actor state: the facet tree and every
// facet field except the atomic preventer counter, the outbound assertion
// table, exit hooks, the reusable Turn, exit status, and the state of every
// entity living in the actor. Whoever holds it owns the actor: the actor
// goroutine while it handles batches, or a goroutine calling
// [FacetRef.Activate] (linked tasks, timers, I/O loops), which runs its turn
// on the calling goroutine. So at most one goroutine touches an actor's
// state at a time, and turns of one actor never overlap. Activate must not
// be called from inside a turn of the same actor (the lock is not
// reentrant; use [Turn.Later]), and [System.Shutdown] must not be called
// from inside any turn (it waits for every actor).
//
// Linked tasks and timers each run on a goroutine registered in the
// actor's WaitGroup; they observe cancellation through their context
// (cancelled when their facet stops or the actor terminates) and re-enter
// the actor only through Activate. [Actor.Done] closes only after the
// actor has terminated and every one of these goroutines has returned, and
// [System.Shutdown] waits for every actor's Done, so no goroutine outlives
// its actor or the system.
//
// Values are immutable and shared freely between actors. Refs are
// immutable. Batches are pooled: the receiver recycles a batch after
// handling it, so steady-state delivery of an event allocates nothing in
// the runtime itself.
//
// # Dataspaces
//
// [NewDataspace] returns the Dataspace entity of §10: a bag of assertions
// (with multiplicity, keyed by the asserter's handle) over an observer
// index. `<Observe pattern #:observer>` assertions ([Observe]) register
// observers; the index tells the dataspace which capture tuples to assert,
// retract or send to which observer Ref, and the dataspace does so in its
// own turn. [Turn.During] and [Turn.OnMessage] are the usual helpers (§13).
//
// # Decisions on the spec's quirks (§19)
//
// Each decision is pinned by a test named TestQuirkNN_… (quirk 8 by
// TestScenario10_…).
//
//   - 2 (exit-hook events are lost): copied; hooks get a Turn whose buffered
//     events are discarded.
//   - 3 (commit-time failure does not roll back): not copied; a failing
//     pre-commit action rolls back like any other failure.
//   - 4 (Later runs in the root facet): Later runs in the facet that
//     scheduled it and is skipped if that facet has stopped.
//   - 5 (retracted handles leave the facet only at commit): not copied; a
//     retraction removes the handle from its facet at once.
//   - 6 (no inert re-check on retraction, KeepFacet, disarm): copied.
//   - 7 (during facets are never inert-stopped): copied.
//   - 8 (descendants' stop actions run in a dead context): copied; their
//     assertions vanish, their messages are sent.
//   - 9 (Activate does not check facet liveness): not copied; Activate on a
//     stopped facet skips fn.
//   - 10 (reachability GC of actors): not implemented; actors live until
//     their root facet stops, they crash, or the system shuts down.
//   - 13 (identical analyses share an endpoint): inherited from the index.
//   - 14 (order of embedded Caps): Refs order by target creation id, then
//     caveats; consistent within a process.
//   - 1, 11, 12, 15 and 16 concern the relay and caveats and are decided in
//     those packages.
//
// Flow control (§9) is available through [Account]: batches borrow against
// the account of the turn that committed them and repay once handled, and
// producers of external input wait with [Account.Wait] before reading
// more ([FacetRef.ActivateAccount]).
//
// Turns activated from outside the actor world are never free: plain
// [FacetRef.Activate] charges each to its actor's outside account
// ([Actor.OutsideAccount]), which relays also charge for the bytes such a
// turn makes them queue until written, and waits first while that account
// is past [ActivateHighWater] ([FacetRef.ActivateContext] gives up when its
// context ends). So a Go program flooding a relay with plain Activate is
// slowed to its consumers' pace, where the reference (and this runtime
// before) let it queue until the connection overflowed. A consumer that
// reads nothing is cut off by its relay after its WriteTimeout, which
// repays what its queue owed, so one stuck subscriber cannot hold every
// producer for longer. Some activations must never wait, or they could
// deadlock or lose a report; they use [FacetRef.ActivateNow], which charges
// the same account without waiting, and each is tested:
//
//   - stopping or closing a connection (relay.Conn.Close, the relay
//     reader's and writer's stops, noise sessions, listeners, resolve,
//     client releases) and the transports the relay's writer calls;
//   - exit and crash reports (daemon exits, supervised workers, the
//     logger's loss reports; linked-task outcomes take the turn lock
//     directly);
//   - timers ([Turn.After], [Turn.Every], the timer driver, retries);
//   - anything already inside a turn: a turn must not call Activate at all
//     (use the Turn's methods, or ActivateNow for another actor), since a
//     turn waiting for debt may be the one that would repay it. Race
//     builds (go test -race) check this: the paced Activate from inside
//     any turn, and any activation of the turn's own actor, panic with an
//     [ActivateInTurnError], which crashes the calling actor instead of
//     deadlocking it (turncheck.go).
//
// # Tracing and statistics
//
// [Options.Trace] receives a [TraceRecord] for every actor start, turn
// (cause and ordered actions) and stop; package dataspace/trace renders them
// as trace.prs entries for the server's -t flag. The hooks are a nil check
// on a per-actor field, so a system without a tracer pays nothing.
// [System.Stats] is a cheap snapshot of scheduler counters for the debt
// reporter.
//
// # Fields and dataflow
//
// A [Field] (made by [NewField]) is an actor-local variable (§7.12).
// [Turn.Dataflow] registers a block with the active facet and runs it at
// once; every Field.Get during a run makes the block depend on that field,
// and Set or Update damages the field even when the value is unchanged.
// The first damage of a turn inserts one repair action into the pre-commit
// queue, ahead of the actions not yet run (inert checks included), so a
// turn that damages nothing pays nothing. Repair re-runs, pass after pass,
// every block depending on a field damaged since the previous pass, in
// registration order, each with its own facet active, recording its
// dependencies afresh; blocks of stopped facets are skipped (and were
// dropped from the graph when the facet stopped). Everything the blocks do
// leaves with the turn; an error fails the turn (rollback and crash, like
// any failure), and so does repair still finding damage after
// [MaxRepairPasses] passes ([ErrDataflowLoop]). Fields are not
// synchronised: using one in another actor's turn panics with
// [ErrForeignField], crashing that actor.
//
// # Guard
//
// Entities here take Preserves values. [Guard] adapts a [TypedEntity] of
// some Go type T (§6): each asserted or sent value goes through a parse
// function and is dropped silently if it does not parse; retractions are
// always forwarded, so the typed entity must ignore handles it never saw.
// [BaseTypedEntity] gives it no-op defaults.
//
// # Commit order
//
// Commit delivers the turn's batches before it starts the actors the turn
// spawned. Runtime spec §5.2 lists booting first; booting is asynchronous
// either way, and this order guarantees that a child's first events never
// overtake its parent's at a shared destination (a supervisor's
// subscription made in the spawning turn is in place before its worker's
// first assertion arrives). Batches for a child not yet started wait in
// its mailbox.
//
// # Walking what the walk changes
//
// A facet's handle list is compacted in place when mostly stale, and a
// facet's child list shrinks when a child stops explicitly. A stopping
// facet therefore detaches both lists before walking them: the walk
// retracts each handle without touching facet bookkeeping, and a stop
// action that stops a sibling finds it already detached. Every other walk
// in this package either works on a snapshot (stop actions, exit hooks,
// which may register more hooks that then run too), re-reads its length
// (the pre-commit queue), or only deletes the key it stands on from a Go
// map (the outbound table at termination), which Go permits.
// model_test.go checks all of it against a naive model after every step of
// random programs; FuzzRuntimeModel explores further on demand:
//
//	go test -run '^$' -fuzz FuzzRuntimeModel -fuzztime 10m -parallel 1 ./dataspace/
//
// Optional parts of the spec not implemented here: reachability-triggered
// release (§3.5).
package dataspace
