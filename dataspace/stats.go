package dataspace

import (
	"cmp"
	"slices"
)

// Scheduler statistics for diagnostics (the debt reporter, services spec
// §9). Everything here is read from state the runtime keeps anyway: the
// actor set under the system lock and each mailbox's queue and
// taken-counter under the mailbox lock (held for a few instructions, so a
// snapshot never waits for a turn and never holds up a sender for long).
// Nothing is counted per event or per turn on the hot path.

// Stats is a snapshot of a System's scheduler state.
type Stats struct {
	// Actors is the number of live actors (started and not yet finished).
	Actors int
	// Spawned is the number of actors created in this process so far (all
	// systems).
	Spawned uint64
	// Batches is the number of event batches (each handled in one turn)
	// actors of this system have taken from their mailboxes so far.
	Batches uint64
	// Queued is the number of batches waiting in mailboxes now.
	Queued int
	// Backlogged lists the actors with at least the threshold given to
	// Stats queued, longest queue first (ties by actor id).
	Backlogged []ActorBacklog
}

// ActorBacklog is one actor's mailbox backlog.
type ActorBacklog struct {
	ID     uint64
	Name   string
	Queued int // batches waiting
}

// Stats returns a snapshot of the scheduler state. Actors with at least
// threshold batches waiting are listed in Backlogged (threshold <= 0 lists
// none). Safe to call from any goroutine, including inside a turn.
func (s *System) Stats(threshold int) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Actors: len(s.actors), Spawned: actorIDs.Load(), Batches: s.retired}
	for a := range s.actors {
		q, taken := a.mb.counts()
		st.Batches += taken
		st.Queued += q
		if threshold > 0 && q >= threshold {
			st.Backlogged = append(st.Backlogged, ActorBacklog{ID: a.id, Name: a.name, Queued: q})
		}
	}
	slices.SortFunc(st.Backlogged, func(x, y ActorBacklog) int {
		return cmp.Or(cmp.Compare(y.Queued, x.Queued), cmp.Compare(x.ID, y.ID))
	})
	return st
}

// System returns the system the actor belongs to.
func (a *Actor) System() *System { return a.sys }

// counts returns the queue length and the number of batches taken so far.
func (m *mailbox) counts() (queued int, taken uint64) {
	m.mu.Lock()
	queued, taken = len(m.q), m.taken
	m.mu.Unlock()
	return
}
