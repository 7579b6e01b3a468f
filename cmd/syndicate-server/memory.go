package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/rs/zerolog"
)

// Memory comes back after a flood (issue 12 item 5). The Go runtime keeps
// the heap it freed and hands it back to the OS only gradually (its
// background scavenger releases a few percent per cycle, so RSS stays high
// for minutes after a burst). For an init system or a broker on a small
// machine that memory belongs to the rest of the system: every
// memoryInterval the server looks at how much of its heap is free but still
// resident, and past memoryIdleLimit it returns all of it at once
// (debug.FreeOSMemory: one forced collection, then every free page
// released). Under steady load the free part stays small and nothing
// happens; the check itself reads two runtime counters.
const (
	memoryInterval  = 2 * time.Second
	memoryIdleLimit = 16 << 20
)

// idleHeap is the resident memory of the heap's free spans: what
// FreeOSMemory can return. (Free room inside spans that still hold
// objects does not count: returning memory cannot shrink it, and a large
// live heap would then be collected every interval for nothing.)
func idleHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// returnMemory releases the idle heap if it exceeds limit, reporting
// whether it did.
func returnMemory(limit uint64, log zerolog.Logger) bool {
	idle := idleHeap()
	if idle <= limit {
		return false
	}
	debug.FreeOSMemory()
	log.Debug().Uint64("idle_bytes", idle).Uint64("after_bytes", idleHeap()).Msg("returned idle memory to the OS")
	return true
}

// startMemoryReturner runs returnMemory every memoryInterval until stop is
// called.
func startMemoryReturner(log zerolog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(memoryInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				returnMemory(memoryIdleLimit, log)
			}
		}
	}()
	return func() { close(done); <-finished }
}
