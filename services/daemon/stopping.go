package daemon

import (
	"sync"
	"sync/atomic"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// `<service-stopping NAME>` (syndicateGo.prs): held while processes of a
// daemon that were told to stop have not exited yet. A process's
// process-status goes with its spec's facet, at the start of the stop,
// so without it a reader (`syndicate stop`) could not tell "stopped" from
// "stopping".
//
// The assertion is made by an actor of its own, the board, through a
// synchronous ActivateNow from the worker's turn that withdraws the
// process-status: the board's turn commits first, so the config
// dataspace never shows the daemon with neither. The board only ever
// takes its own turn lock, so activating it cannot deadlock.
type stoppingBoard struct {
	mu      sync.Mutex
	fr      dataspace.FacetRef
	ready   bool
	cfg     *dataspace.Ref
	handles map[*specRun]dataspace.Handle // the board's actor owns it
}

// bootStoppingBoard starts the board's actor, linked to the active facet.
func bootStoppingBoard(t *dataspace.Turn, cfg *dataspace.Ref) *stoppingBoard {
	b := &stoppingBoard{cfg: cfg, handles: map[*specRun]dataspace.Handle{}}
	t.SpawnLink("daemon-stopping", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		b.mu.Lock()
		b.fr, b.ready = t.FacetRef(), true
		b.mu.Unlock()
		return nil
	})
	return b
}

func (b *stoppingBoard) activate(fn func(t *dataspace.Turn)) {
	b.mu.Lock()
	fr, ready := b.fr, b.ready
	b.mu.Unlock()
	if ready {
		// ActivateNow: begin runs inside the worker's turn, where Activate
		// must not be called (it may wait for debt, and it would run the
		// turns its turn hands off while the worker's lock is held).
		fr.ActivateNow(func(t *dataspace.Turn) error { fn(t); return nil })
	}
}

// begin asserts that r's process is stopping, unless its runner has
// already returned (done).
func (b *stoppingBoard) begin(r *specRun, name preserves.Value, done *atomic.Bool) {
	b.activate(func(t *dataspace.Turn) {
		if !done.Load() && b.handles[r] == 0 {
			b.handles[r] = t.Assert(b.cfg, syndicatego.ServiceStopping{ServiceName: name}.ToValue())
		}
	})
}

// end withdraws it: r's runner has returned, every process gone. The
// caller has set done first.
func (b *stoppingBoard) end(r *specRun) {
	b.activate(func(t *dataspace.Turn) {
		if h := b.handles[r]; h != 0 {
			t.Retract(h)
			delete(b.handles, r)
		}
	})
}
