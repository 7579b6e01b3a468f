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
// An actor has no goroutine of its own. Its mailbox is a mutex-protected
// FIFO of batches; senders append under the mailbox lock only, so sending
// never waits for the receiver's turn. The right to handle the mailbox
// (the drain) belongs to at most one goroutine at a time: the mailbox's
// running flag, set under the mailbox lock by the push that finds the
// actor idle (the claim) and cleared by the take that finds the mailbox
// empty. An idle actor so costs its state and no stack: a server with
// thousands of idle sessions and daemons holds no goroutine for their
// actors (issue 16).
//
// The turn lock (Actor.mu) guards all actor state: the facet tree and every
// facet field except the atomic preventer counter, the outbound assertion
// table, exit hooks, the reusable Turn, exit status, and the state of every
// entity living in the actor. Whoever holds it owns the actor: the
// goroutine draining its mailbox while it handles a batch, or a goroutine
// calling [FacetRef.Activate] (linked tasks, timers, I/O loops), which runs
// its turn on the calling goroutine. So at most one goroutine touches an
// actor's state at a time, and turns of one actor never overlap. Activate
// must not be called from inside a turn of any actor (the lock is not
// reentrant, the caller may wait for debt, and the caller runs the turns
// handed to it: see below; use [Turn.Later], or [FacetRef.ActivateNow] for
// another actor), and [System.Shutdown] must not be called from inside any
// turn (it waits for every actor).
//
// # Running a turn where the data is (hand-off)
//
// A turn that sends to an idle actor claims that actor's drain at commit.
// Where the turn was started by a scheduler entry point (a drain, or
// Activate, ActivateContext, ActivatePaced, ActivateAccount, but not
// ActivateNow, which may run inside another actor's turn), the claim is
// handed to the goroutine that ran the turn instead of to a fresh
// goroutine: the sender's goroutine then runs the receiver's turns, while
// the data they touch is still in its cache, and no goroutine is started
// or woken. A message from a socket through a relay, a dataspace and a
// subscriber's relay so crosses one goroutine, the reader's, and is handed
// off once, to the subscriber connection's writer, as in NATS.
//
// The goroutine keeps the drains handed to it in a runner: a FIFO of
// claimed actors, each with the batches already taken from its mailbox.
// The runner visits them in turn; a visit handles one swap of the actor's
// mailbox (one turn per batch, taking and releasing the turn lock per
// batch). If the mailbox is then empty, the claim is given up; if not,
// others send to the actor faster than this runner visits it (a hub: the
// dataspace everybody sends to), and the actor gets a goroutine of its own
// that drains it as a drain always did, swap after swap, so that a busy hub
// keeps its pace and is not serialized behind one reader, and the reader
// goes back to its socket. A goroutine started for an actor's drain
// (drainGo, an actor's boot) drains that actor until empty. Turns handled
// in a visit may claim further idle actors, which join the back of the
// FIFO. The entry point runs its runner only after it has released the
// turn lock it took.
//
// Wake-ups after the hand-offs. Where the work a message causes ends in a
// hand-off to another goroutine (a relay's writer), that goroutine should
// wake once for a burst of messages, not once for each: NATS's reader
// flushes its subscribers once per read. A turn asks for this with
// [Turn.WakeLater]: its runner wakes the [Waker] once it has run the turns
// handed to it: at the end of the activation, of an owned drain's budget,
// before it waits for a turn lock, or, for a [Burst] (the activations a
// relay's reader makes for the packets of one read), at [Burst.End], which
// the reader calls after the read's last packet and before it waits for
// credit or input. A relay's writer so writes everything one read caused
// in one system call. A wake-up is never held across a wait, so no
// goroutine waits for a writer whose wake-up it holds.
//
// Proof obligations, and why they hold:
//
//  1. One turn at a time per actor. A batch is handled only by the holder
//     of the actor's drain claim, under the actor's turn lock; the claim
//     has one holder (it moves from the mailbox's flag to exactly one
//     runner entry, or to one fresh goroutine), and Activate takes the
//     same turn lock. Hand-off moves the claim, never copies it.
//  2. Causal order between any two actors. Every batch, handed off or
//     not, goes through the destination's mailbox in commit order, and the
//     claim holder handles a mailbox's batches in FIFO order (a runner
//     keeps a taken swap with its actor's entry and finishes it before it
//     takes again). Hand-off changes which goroutine handles a batch,
//     never the order of batches at one actor, so the per-pair order of
//     runtime spec §5 (and with it Sync, and commit-before-spawn) is the
//     order it was.
//  3. No deadlock. A runner runs another actor's turn only while it holds
//     no turn lock: the entry point first commits and unlocks, and a
//     visit holds one actor's lock for one batch. Inside a visit it takes
//     the turn lock with TryLock; when another goroutine holds it (an
//     Activate in progress, or, after a misuse, a turn further up this
//     very stack), the rest of the swap and the claim go to a fresh
//     goroutine instead of waiting. Only a goroutine started for drains
//     with nothing else queued waits for a turn lock, as a drain always
//     did. Re-entrancy: A's turn runs on goroutine G and sends to idle B,
//     and B's turn sends to A. If A's turn came from A's drain, A is
//     claimed and the batch just queues; if it came from Activate (A was
//     idle), B's push claims A for G's runner, which runs A's turn after
//     B's batch has released B's lock, never inside it. Nothing recurses.
//     A turn that calls ActivateNow on another actor runs that actor's
//     turn nested, as before, but such a turn hands nothing off: what it
//     claims gets fresh goroutines, so the nested caller never runs a turn
//     that might need the lock it holds.
//  4. Bounded stack depth. Hand-off is a trampoline, not a call: a turn
//     only appends to the runner's FIFO, and the runner's loop runs the
//     next turn after the previous one returned. The stack depth is that of
//     one turn whatever the length of the chain of actors.
//  5. Fairness under load. A visit handles one swap of any actor but the
//     runner's own, and hands a backlog to a goroutine of its own. A
//     runner handles at most handoffBudget batches before it gives every
//     actor still queued a goroutine of its own: an Activate caller (a relay's reader) also hands on the actor it is
//     draining and returns to its own work, and a goroutine started for
//     drains goes on with the actor it is draining, renewing its budget,
//     as a drain always did. So a claimed actor waits at most
//     handoffBudget batches for its visit, an Activate caller returns
//     after a bounded number of turns, and a ping-pong between two actors
//     cannot hold a goroutine forever. A visit of a dead actor hands its
//     burial (which waits for its linked tasks) to a goroutine of its own
//     unless the runner has nothing else to do.
//  6. Flow control unchanged. Accounts are charged at commit and repaid
//     when a batch is handled or dropped, wherever that happens; an
//     Activate that waits for its account waits before it takes the turn
//     lock and before it runs any hand-off, and hand-offs never wait for an
//     account. Hand-off only makes repayment come sooner.
//  7. No wake-up is lost or held across a wait. A runner runs the
//     wake-ups it holds before it goes back to the pool (the end of every
//     activation, drain and Burst), when an owned runner renews its
//     budget, and before it blocks on a turn lock; a Burst's goroutine
//     ends it before it reads or waits for credit (the writer's writes are
//     what repay that credit). A turn outside the scheduler (ActivateNow)
//     gets no deferral: WakeLater reports false and its caller wakes at
//     once.
//
// Activate therefore returns once its turn and the turns handed to its
// goroutine (at most handoffBudget batches) have run. A goroutine calling
// Activate must hold no lock that some turn might need, and must not wait,
// after Activate, for something a turn it causes waits for. A turn that
// blocks (always a bug: turns must not wait) now also holds up the actors
// queued behind it in the same runner, not only its own actor; tests that
// stall an actor on purpose do so in a turn on a goroutine of its own
// (ActivateNow from a fresh goroutine), which runners then hand around. model_test.go
// checks the hand-off against a naive model (chains of forwarding actors,
// ping-pongs past the budget, misused nesting), and FuzzRuntimeModel
// explores it.
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
