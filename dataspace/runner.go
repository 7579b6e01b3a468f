package dataspace

import "sync"

// The hand-off scheduler (see the package doc, "Running a turn where the
// data is"): a runner is the set of actor drains one goroutine holds.

// handoffBudget is how many batches a runner handles before it gives the
// actors still queued goroutines of their own (fairness: an Activate
// caller returns to its own work, a ping-pong does not keep a goroutine).
// A relay's message crosses three actors; 64 leaves room for fan-out.
const handoffBudget = 64

// runEntry is one claimed actor in a runner's FIFO, with the batches
// already taken from its mailbox and not yet handled (nil: take first).
type runEntry struct {
	a *Actor
	q []*batch
	// own: the goroutine was started for this actor's drain (drainGo,
	// an actor's boot), so a visit drains it until empty. Any other
	// visit handles one swap and gives a backlog a goroutine of its own.
	own bool
}

// runner runs the drains handed to one goroutine. It lives on that
// goroutine only (pooled between uses), so it needs no lock.
type runner struct {
	ready  []runEntry
	head   int
	budget int
	// owned: the goroutine exists for these drains (drainGo), so it may
	// wait for a turn lock when it has nothing else to do.
	owned bool
	// wakes: Turn.WakeLater's, run by flushWakes.
	wakes []Waker
}

var runnerPool = sync.Pool{New: func() any { return new(runner) }}

func getRunner(owned bool) *runner {
	r := runnerPool.Get().(*runner)
	r.owned, r.budget = owned, handoffBudget
	return r
}

func putRunner(r *runner) {
	r.flushWakes()
	clear(r.ready)
	r.ready, r.head = r.ready[:0], 0
	runnerPool.Put(r)
}

// drainGo is a goroutine started for a's drain (claimed by the caller) and
// whatever that drain hands off; q holds batches already taken from a's
// mailbox (nil: none).
func drainGo(a *Actor, q []*batch) {
	r := getRunner(true)
	r.ready = append(r.ready, runEntry{a: a, q: q, own: true})
	r.run()
	putRunner(r)
}

// adopt takes over the drains t claimed at commit. Caller holds t's turn
// lock.
func (r *runner) adopt(t *Turn) {
	for _, a := range t.claimed {
		r.ready = append(r.ready, runEntry{a: a})
	}
	clear(t.claimed)
	t.claimed = t.claimed[:0]
	r.wakes = append(r.wakes, t.wakes...)
	clear(t.wakes)
	t.wakes = t.wakes[:0]
}

// flushWakes runs the wake-ups the turns run so far asked for
// (Turn.WakeLater). Called when the runner's work ends, when an owned
// runner renews its budget, and before it waits for a turn lock, so that
// no wake-up waits on something that waits for it.
func (r *runner) flushWakes() {
	for i, w := range r.wakes {
		w.Wake()
		r.wakes[i] = nil
	}
	r.wakes = r.wakes[:0]
}

// alone reports whether the actor being visited is all this runner has to
// do: then its goroutine is that actor's drain, and may wait as one.
func (r *runner) alone() bool { return r.owned && r.head == len(r.ready) }

// run visits the queued actors in FIFO order until none is left. A runner
// that does not own its goroutine (Activate's) gives the rest goroutines
// of their own once its budget is spent.
func (r *runner) run() {
	for r.head < len(r.ready) {
		e := r.ready[r.head]
		r.ready[r.head] = runEntry{}
		r.head++
		if r.budget <= 0 {
			if !r.owned {
				go drainGo(e.a, e.q)
				continue
			}
			r.budget = handoffBudget
			r.flushWakes()
		}
		r.visit(e)
		if r.head >= 32 && r.head*2 >= len(r.ready) {
			n := copy(r.ready, r.ready[r.head:])
			clear(r.ready[n:])
			r.ready, r.head = r.ready[:n], 0
		}
	}
}

// spillQueued gives every actor still queued a goroutine of its own.
func (r *runner) spillQueued() {
	for _, e := range r.ready[r.head:] {
		go drainGo(e.a, e.q)
	}
	clear(r.ready)
	r.ready, r.head = r.ready[:0], 0
}

// visit drains e.a until its mailbox is empty, as a drain always did, so
// that a busy actor (a dataspace everybody sends to) keeps its pace; the
// actors its turns claim wait in the FIFO meanwhile, for at most the
// budget: then they get goroutines of their own (an owned runner goes on
// with e.a; Activate's gives e.a one too and returns).
func (r *runner) visit(e runEntry) {
	a, q := e.a, e.q
	for {
		if a.dead.Load() {
			for _, b := range q {
				putBatch(b)
			}
			if r.alone() {
				a.bury()
			} else {
				go a.bury() // it waits for the actor's linked tasks
			}
			return
		}
		if q == nil {
			if q = a.mb.take(nil); q == nil {
				return // the claim is given up
			}
		}
		if !r.handleSwap(a, q) {
			return
		}
		if a.dead.Load() {
			q = nil // handled; bury it
		} else if q = a.mb.take(q); q == nil {
			return // the claim is given up
		} else if !e.own {
			// A backlog: others send to a faster than this visit
			// handles it (a hub: the dataspace everybody sends to).
			// It gets a goroutine of its own instead of holding up
			// this runner's own work (a relay's reading).
			go drainGo(a, q)
			return
		}
	}
}

// handleSwap handles the batches of one swap of a's mailbox, one turn
// each, under a's turn lock. It returns false if it handed the rest (and
// the claim) to a goroutine of its own.
func (r *runner) handleSwap(a *Actor, q []*batch) bool {
	for i, b := range q {
		if r.budget <= 0 {
			if !r.owned {
				go drainGo(a, q[i:])
				return false
			}
			r.spillQueued()
			r.budget = handoffBudget
			r.flushWakes()
		}
		if !a.mu.TryLock() {
			if !r.alone() {
				go drainGo(a, q[i:]) // never wait with others queued behind
				return false
			}
			r.flushWakes()
			a.mu.Lock()
		}
		// The lock is taken per batch, not per swap, so that a goroutine
		// waiting in Activate gets in between batches instead of after a
		// whole backlog.
		if !a.dead.Load() {
			t := &a.turn
			t.handoff = true
			a.handle(b)
			t.handoff = false
			r.adopt(t)
		}
		a.mu.Unlock()
		putBatch(b)
		q[i] = nil
		r.budget--
	}
	return true
}

// A Burst runs the activations one goroutine makes in a row (a relay's
// reader handling the packets of one read) with one runner: each
// activation runs the turns it hands off before it returns, as Activate
// does, but the wake-ups those turns ask for (Turn.WakeLater) wait for
// End. A writer so wakes once for everything a read caused, and writes it
// in one system call. The zero Burst is ready to use; a Burst belongs to
// one goroutine, which must call End before it waits for anything (a
// read, an account's credit) and when it is done.
type Burst struct {
	rn *runner
}

// ActivateAccount is FacetRef.ActivateAccount within the burst.
func (b *Burst) ActivateAccount(r FacetRef, acct *Account, fn func(t *Turn) error) bool {
	if b.rn == nil {
		b.rn = getRunner(false)
	}
	b.rn.budget = handoffBudget
	return r.activateIn(acct, fn, true, b.rn)
}

// End runs the wake-ups the burst's turns asked for, and gives back its
// runner.
func (b *Burst) End() {
	if b.rn != nil {
		putRunner(b.rn)
		b.rn = nil
	}
}
