package dataspace

import (
	"sync"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// hostedEntity records the messages it receives and whether it was stopped.
type hostedEntity struct {
	BaseEntity
	mu      sync.Mutex
	got     []preserves.Value
	stopped bool
}

func (e *hostedEntity) Message(_ *Turn, v preserves.Value) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, v)
	return nil
}

func (e *hostedEntity) OnStop(*Turn) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	return nil
}

func (e *hostedEntity) snapshot() (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.got), e.stopped
}

func TestSpawnForEntity(t *testing.T) {
	sys := newSys(t)
	e := &hostedEntity{}
	var host *Actor
	sys.Spawn("parent", func(t *Turn) error {
		ref := t.SpawnForEntity("host", e)
		host = ref.Actor()
		// Sent in the same turn as the spawn: delivered after the host boots.
		t.Message(ref, preserves.Symbol("hello"))
		return nil
	})
	waitFor(t, "the hosted entity to receive the message", func() bool {
		n, _ := e.snapshot()
		return n == 1
	})
	// The host stays alive although its boot asserted nothing (the inert
	// check of its boot turn came before the message was handled)…
	if !host.Alive() {
		t.Fatal("the host actor exited after its boot")
	}
	// …until it is shut down; then e's stop handler runs.
	sys.Spawn("stopper", func(t *Turn) error {
		host.release()
		return nil
	})
	waitFor(t, "the host to stop cleanly", func() bool {
		_, stopped := e.snapshot()
		return stopped && !host.Alive()
	})
	if err := host.Err(); err != nil {
		t.Fatalf("host exit: %v", err)
	}
}
