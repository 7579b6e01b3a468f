package dataspace

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// Options configures a System.
type Options struct {
	// Logger receives actor crash reports and warnings. The zero Logger
	// discards everything.
	Logger zerolog.Logger
	// Trace, when set, receives a causal trace of every actor start, turn
	// and stop (services spec §1.6; see Tracer). Nil costs nothing.
	Trace Tracer
}

// System owns a set of actors and every goroutine they start.
type System struct {
	log zerolog.Logger

	mu      sync.Mutex // guards actors, closing
	actors  map[*Actor]struct{}
	closing bool
	retired uint64 // batches taken by actors already forgotten (Stats)

	tracer Tracer // Options.Trace; nil when not tracing
}

// NewSystem returns an empty actor system.
func NewSystem(opts Options) *System {
	return &System{log: opts.Logger, actors: make(map[*Actor]struct{}), tracer: opts.Trace}
}

// Spawn creates a top-level actor and boots it at once: boot runs in a fresh
// child facet of the actor's root facet, on the actor's goroutine. After
// Shutdown has begun, Spawn returns an actor that is already Dropped.
func (s *System) Spawn(name string, boot func(t *Turn) error) *Actor {
	a := s.newActor(name)
	s.start(a, boot)
	return a
}

// Shutdown stops every actor cleanly (as if each called t.StopRoot in a
// turn of its own) and waits until every actor goroutine and linked task has
// finished, or ctx ends. Actors spawned after Shutdown begins never run.
func (s *System) Shutdown(ctx context.Context) error {
	for {
		// Once closing is set, start refuses new actors, so a round that
		// has waited for every actor leaves the set empty or draining.
		s.mu.Lock()
		s.closing = true
		all := slices.Collect(maps.Keys(s.actors))
		s.mu.Unlock()
		if len(all) == 0 {
			return nil
		}
		for _, a := range all {
			a.release()
		}
		for _, a := range all {
			select {
			case <-a.done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// start boots a (created by newActor) on its own goroutine, or drops it if
// the system is shutting down.
func (s *System) start(a *Actor, boot func(t *Turn) error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		a.drop()
		return
	}
	s.actors[a] = struct{}{}
	a.wg.Add(1)
	s.mu.Unlock()
	go a.run(boot)
}

func (s *System) forget(a *Actor) {
	s.mu.Lock()
	delete(s.actors, a)
	_, taken := a.mb.counts()
	s.retired += taken
	s.mu.Unlock()
}

var actorIDs atomic.Uint64

// Actor is an isolated single-threaded event loop with a mailbox. Its state
// is touched only by the goroutine holding mu (see the package doc).
type Actor struct {
	id   uint64
	name string
	sys  *System
	// log carries the actor's name; built on first use (logger), under
	// mu: most actors never log, and each logger's context costs 512
	// bytes (issue 28, memory per idle session).
	log    zerolog.Logger
	logSet bool

	mb mailbox

	// wg counts the actor goroutine and its linked tasks; done closes once
	// it reaches zero after termination.
	wg   sync.WaitGroup
	done chan struct{}

	// ctx is the parent of every facet context; cancelled at termination
	// so that every linked task ends.
	ctx    context.Context
	cancel context.CancelFunc

	// dead is set (under mu) when the actor terminates, after status and
	// err; read without mu by the run loop, Activate, Err and Status.
	dead atomic.Bool
	// ext is the account of activations from outside the actor world
	// (FacetRef.Activate, ActivateNow): Activate waits while it is in debt.
	ext Account

	// tr records the causal trace; nil unless the system traces. Its
	// state is guarded by mu.
	tr *actorTrace

	mu sync.Mutex // the turn lock: held while running any turn
	// Guarded by mu:
	root     *facet
	facets   map[FacetID]*facet
	outbound map[Handle]outRec
	// outboundPeak is outbound's largest size since it was last rebuilt
	// (shrinkMap).
	outboundPeak int
	exitHooks    []func(t *Turn, err error)
	df           *dataflow // fields and dataflow state; nil until first used
	turn         Turn
	status       ExitStatus // final once dead is set
	err          error      // final once dead is set
}

// outRec is the actor's record of one outbound assertion: where its
// retraction goes and which facet made it.
type outRec struct {
	to *target
	f  *facet
}

func (s *System) newActor(name string) *Actor {
	a := &Actor{
		id:       actorIDs.Add(1),
		name:     name,
		sys:      s,
		done:     make(chan struct{}),
		facets:   make(map[FacetID]*facet),
		outbound: make(map[Handle]outRec),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.mb.init(a)
	a.root = a.newFacet(nil)
	a.turn.a = a
	s.traceActor(a)
	return a
}

// OutsideAccount returns the account that turns activated from outside the
// actor world (FacetRef.Activate and ActivateNow) are charged to.
func (a *Actor) OutsideAccount() *Account { return &a.ext }

// Name returns the name given at spawn.
func (a *Actor) Name() string { return a.name }

// ID returns the process-unique actor id.
func (a *Actor) ID() uint64 { return a.id }

// Done is closed once the actor has terminated, its cleanup has run and
// every goroutine it started has returned.
func (a *Actor) Done() <-chan struct{} { return a.done }

// Err returns the error the actor failed with, or nil while running and
// after a Normal or Dropped exit.
func (a *Actor) Err() error {
	if !a.dead.Load() {
		return nil
	}
	return a.err // written before dead was set, never after
}

// Status reports how the actor ended (Running while it has not).
func (a *Actor) Status() ExitStatus {
	if !a.dead.Load() {
		return Running
	}
	return a.status // written before dead was set, never after
}

// Alive reports whether the actor has not terminated yet.
func (a *Actor) Alive() bool { return !a.dead.Load() }

// release queues an orderly shutdown (runtime spec §3.2 Release).
func (a *Actor) release() {
	b := getBatch()
	b.kind = batchRelease
	ok, start := a.mb.push(b)
	switch {
	case !ok:
		putBatch(b)
	case start:
		go drainGo(a, nil)
	}
}

// run boots the actor on a fresh goroutine, which then drains the
// mailbox (claimed since newActor) and runs what the boot turn handed off.
func (a *Actor) run(boot func(t *Turn) error) {
	r := getRunner(true)
	r.ready = append(r.ready, runEntry{a: a, own: true})
	a.mu.Lock()
	if !a.dead.Load() {
		if a.tr != nil {
			a.tr.started()
		}
		a.turn.handoff = true
		a.runTurn(a.root, func(t *Turn) error {
			_, err := t.Facet(boot)
			return err
		}, nil, nil)
		a.turn.handoff = false
		r.adopt(&a.turn)
	}
	a.mu.Unlock()
	r.run()
	putRunner(r)
}

// bury runs on the drain that sees the actor dead: discard what is
// queued, wait for linked tasks, then announce termination. The drain
// claim is never given back, so bury runs once and no drain follows.
func (a *Actor) bury() {
	for _, b := range a.mb.close() {
		putBatch(b)
	}
	a.wg.Done()
	a.wg.Wait()
	a.sys.forget(a)
	close(a.done)
}

// handle runs one system message. Caller holds mu.
func (a *Actor) handle(b *batch) {
	switch b.kind {
	case batchEvents:
		a.runTurn(nil, nil, b, b.acct)
	case batchRelease:
		if a.tr != nil {
			a.tr.external("release")
		}
		a.runTurn(a.root, func(t *Turn) error { t.StopRoot(); return nil }, nil, nil)
	}
}

// runTurn runs one turn on account acct (nil: none): either fn with facet
// f active, or the events of b. On success the turn commits; on failure it
// rolls back and the actor crashes. Caller holds mu.
func (a *Actor) runTurn(f *facet, fn func(t *Turn) error, b *batch, acct *Account) {
	if checkTurns {
		defer enterTurn(a)()
	}
	t := &a.turn
	t.begin(f)
	t.acct = acct
	t.handled = b
	if b != nil && b.weight > 1 {
		t.weight = b.weight // fan-out of large values costs what they weigh
	}
	if a.tr != nil {
		a.tr.beginTurn(b)
	}
	if err := t.work(fn, b); err != nil {
		if a.tr != nil {
			a.tr.endTurn(t, err)
		}
		t.rollback()
		a.terminate(Failed, err)
		return
	}
	if a.tr != nil {
		a.tr.endTurn(t, nil)
	}
	t.commit()
	if !a.root.alive {
		a.terminate(Normal, nil)
	}
}

// logger returns the actor's logger. Caller holds mu.
func (a *Actor) logger() *zerolog.Logger {
	if !a.logSet {
		a.log = a.sys.log.With().Str("actor", a.name).Logger()
		a.logSet = true
	}
	return &a.log
}

// terminate runs the cleanup procedure of runtime spec §3.4 exactly once.
// Caller holds mu.
func (a *Actor) terminate(status ExitStatus, err error) {
	if a.dead.Load() {
		return
	}
	a.status, a.err = status, err
	a.dead.Store(true)
	if err != nil {
		a.logger().Error().Err(err).Uint64("actor_id", a.id).Msg("actor crashed")
	}
	// 2. Retract every remaining outbound assertion, newest first.
	t := &a.turn
	t.begin(a.root)
	if a.tr != nil {
		a.tr.beginCleanup()
	}
	for _, h := range slices.Backward(slices.Sorted(maps.Keys(a.outbound))) {
		rec := a.outbound[h]
		delete(a.outbound, h)
		t.enqueue(rec.to.actor, event{kind: evRetract, to: rec.to, h: h})
	}
	if a.tr != nil {
		a.tr.endTurn(t, nil)
	}
	t.deliver()
	// 3. Exit hooks, in registration order. Their buffered events are
	// discarded (runtime spec §3.4 QUIRK, copied): hooks are local cleanup.
	// A hook may register another hook; it runs too, after the others.
	for len(a.exitHooks) > 0 {
		hooks := a.exitHooks
		a.exitHooks = nil
		for _, hook := range hooks {
			t.begin(a.root)
			_ = t.guard(func(t *Turn) error { hook(t, err); return nil }, nil)
			t.discard()
		}
	}
	// 4. Drop all facets: cancel every linked task.
	for _, f := range a.facets {
		f.alive = false
		if f.blocks != nil {
			f.dropBlocks()
		}
	}
	clear(a.facets)
	a.cancel()
	if a.tr != nil {
		a.tr.stopped(status, err)
	}
	// Make a drain notice, so that it finishes the actor.
	a.mb.kick()
}

// drop marks an actor that never ran as Dropped. A SpawnLink child may
// already hold its link assertion to the spawning facet; it is retracted
// (so a live parent facet stops as if the child had exited).
func (a *Actor) drop() {
	a.mu.Lock()
	if !a.dead.Load() {
		a.status = Dropped
		a.dead.Store(true)
		t := &a.turn
		t.begin(a.root)
		for h, rec := range a.outbound {
			delete(a.outbound, h)
			t.enqueue(rec.to.actor, event{kind: evRetract, to: rec.to, h: h})
		}
		t.deliver()
		a.cancel()
	}
	a.mu.Unlock()
	a.mb.close()
	close(a.done)
}

// mailbox is an unbounded FIFO of batches. Senders append under its own
// lock (never the actor's turn lock, so a send never waits for a turn); a
// drain swaps the whole queue out in one step. No goroutine waits on an
// empty mailbox: the push that makes it non-empty claims the drain, which
// its sender's goroutine runs or hands to a fresh one (runner.go).
type mailbox struct {
	mu      sync.Mutex
	q       []*batch
	spare   []*batch // the last drained queue, reused by the next drain
	closed  bool
	running bool   // a drain runs (or the actor has not booted yet)
	taken   uint64 // batches handed to drains so far (Stats)
	a       *Actor
}

// init readies an actor's mailbox; until run starts, pushes only queue.
func (m *mailbox) init(a *Actor) { m.a, m.running = a, true }

// push appends b; ok is false if the mailbox is closed (the actor is
// gone). start reports that the actor was idle: the caller now holds its
// drain claim and must run the drain (drainGo) or hand it to a runner.
func (m *mailbox) push(b *batch) (ok, start bool) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false, false
	}
	m.q = append(m.q, b)
	start = !m.running
	m.running = true
	m.mu.Unlock()
	return true, start
}

// kick starts a drain if none runs, so that a terminated actor finishes.
func (m *mailbox) kick() {
	m.mu.Lock()
	start := !m.running && !m.closed
	m.running = true
	m.mu.Unlock()
	if start {
		go drainGo(m.a, nil)
	}
}

// take returns the queued batches, recycling done (the previous take's,
// handled) as the next queue. On an empty queue it returns nil and the
// claim is given up (the drain no longer counts as running), unless the
// actor is dead: then it returns an empty queue and the caller, still
// holding the claim, buries the actor.
func (m *mailbox) take(done []*batch) []*batch {
	m.mu.Lock()
	q := m.q
	if len(q) == 0 {
		if m.a.dead.Load() {
			// Keep the claim: its holder must bury the actor. Checked
			// under m.mu, so a terminate whose kick found the drain
			// running is seen here.
			m.mu.Unlock()
			return []*batch{}
		}
		m.running = false
		if done != nil {
			m.spare = done[:0]
		}
		m.mu.Unlock()
		return nil
	}
	if done == nil {
		done, m.spare = m.spare, nil
	}
	m.q = done[:0]
	m.taken += uint64(len(q))
	m.mu.Unlock()
	return q
}

// close refuses further pushes and returns what was still queued.
func (m *mailbox) close() []*batch {
	m.mu.Lock()
	m.closed = true
	q := m.q
	m.q, m.spare = nil, nil
	m.mu.Unlock()
	return q
}
