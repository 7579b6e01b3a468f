package dataspace

import (
	"sync"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// gate blocks its actor in the first message until released.
type gate struct {
	BaseEntity
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Message(*Turn, preserves.Value) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return nil
}

func TestStatsCountsAndBacklog(t *testing.T) {
	s := newSys(t)
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	stuck, ref := hold(t, s, "stuck", g)
	fr, _, _ := client(t, s, "client")
	released := false
	defer func() {
		if !released {
			close(g.release)
		}
	}()

	before := s.Stats(0)
	if before.Actors != 2 || before.Backlogged != nil {
		t.Fatalf("stats %+v: want 2 actors and no backlog list", before)
	}
	if before.Spawned < 2 {
		t.Fatalf("spawned %d < 2", before.Spawned)
	}
	// ActivateNow: the gate's turn must block a goroutine of its own, not
	// this one (Activate would run it here, a hand-off).
	fr.ActivateNow(func(t *Turn) error { t.Message(ref, preserves.Int(0)); return nil })
	<-g.entered
	const n = 30
	for i := 0; i < n; i++ { // one turn, so one batch, each
		do(t, fr, func(t *Turn) error { t.Message(ref, preserves.Int(1)); return nil })
	}
	st := s.Stats(n)
	if st.Queued < n || len(st.Backlogged) != 1 || st.Backlogged[0].ID != stuck.ID() || st.Backlogged[0].Name != "stuck" || st.Backlogged[0].Queued != n {
		t.Fatalf("stats %+v: want stuck listed with %d queued", st, n)
	}
	if s.Stats(n+1).Backlogged != nil {
		t.Fatal("an actor below the threshold is listed")
	}
	close(g.release)
	released = true
	waitFor(t, "the backlog to drain", func() bool { return s.Stats(1).Backlogged == nil })
	after := s.Stats(0)
	if after.Batches < before.Batches+n+1 {
		t.Fatalf("batches %d, want at least %d", after.Batches, before.Batches+n+1)
	}
	// A finished actor's batches still count.
	do(t, FacetRef{a: stuck, f: stuck.root}, func(t *Turn) error { t.StopRoot(); return nil })
	waitDone(t, stuck)
	waitFor(t, "the actor to be forgotten", func() bool { return s.Stats(0).Actors == 1 })
	if final := s.Stats(0); final.Batches < after.Batches {
		t.Fatalf("batches went down from %d to %d when an actor ended", after.Batches, final.Batches)
	}
}
