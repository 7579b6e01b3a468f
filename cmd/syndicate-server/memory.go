package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
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
// happens; the check itself reads a few runtime counters.
const (
	memoryInterval = 500 * time.Millisecond
	// memorySettledInterval is the check's period once nothing is left
	// to collect: a settled server wakes for it every 2 s, not twice a
	// second.
	memorySettledInterval = 2 * time.Second
	memoryIdleLimit       = 16 << 20
	// The server is quiet when, in the last interval, it allocated less
	// than memoryQuietAlloc (under 512 KiB/s) and used less than
	// memoryQuietCPU of CPU time (1 %): a busy logger allocates little,
	// and must not be collected under.
	memoryQuietAlloc = 256 << 10
	memoryQuietCPU   = 5 * time.Millisecond
	// A busy spell: more than this allocated since the returner last
	// collected.
	memoryBusySpell = 4 << 20
	// A large retraction: the dataspace's maps were rebuilt after losing
	// this many entries since the returner last collected.
	memoryRetracted = 16384
)

// Garbage at rest (issue 28 item 3). A large retraction (a config file of
// 300,000 facts removed) turns most of the heap into garbage at once, but
// the collector runs only when the heap grows to twice what was live at
// its last cycle: a server that goes quiet afterwards keeps the garbage,
// and its pages, until the forced collection two minutes later, and the
// idle-heap check above sees none of it (it is not free yet). So each
// interval the returner also compares the heap's objects with what the
// last cycle found live: when no cycle has run since the last look, the
// objects have not grown by more than a sixteenth of the limit (the
// server is quiet, not busy allocating), and more than the limit of them
// is garbage, it collects and returns the pages at once. A busy server
// is left to its collector; a quiet one returns its garbage within two
// intervals.
//
// Garbage after a busy spell. The collector's headroom (gcpace.go) lets up
// to 16 MiB of garbage pile up while the server is busy, and a collection
// that runs during a busy spell counts everything allocated meanwhile as
// live, so the figures above underrate what a quiet server could give
// back. So the returner also collects once the server goes quiet after
// allocating more than memoryBusySpell since its own last collection: a
// settled server then holds its live heap and little more (1,000 idle
// sessions: 25.4 kB each against 29.0 kB before).

// heapFigures are the runtime's counters the returner looks at.
type heapFigures struct {
	idle    uint64        // resident free spans (what FreeOSMemory can return now)
	objects uint64        // bytes of heap objects, live or garbage
	live    uint64        // bytes found live by the last completed cycle
	cycles  uint64        // completed collections
	allocs  uint64        // bytes allocated since the start
	cpu     time.Duration // the process's CPU time (user and system)
	// collected: allocs when the returner last collected (carried from
	// look to look by returnMemory).
	collected uint64
	shrunk    uint64 // dataspace.Shrunk()
	// shrunkAt: shrunk when the returner last collected (carried like
	// collected).
	shrunkAt uint64
}

func readHeapFigures() heapFigures {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return heapFigures{idle: u(0), objects: u(1), live: u(2), cycles: u(3), allocs: u(4),
		shrunk: dataspace.Shrunk(), cpu: processCPU()}
}

// processCPU is the CPU time the process has used (0 if unknown).
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// shouldReturn decides, from the figures at the last look and now,
// whether to collect and return memory: the idle heap exceeds limit; or
// the server is quiet and either more than limit of garbage has been at
// rest since the last look, a busy spell ended, or a large retraction
// happened since the returner last collected.
//
// The last rule is there because a retraction makes garbage without
// allocating: when a collection ran while a big retraction was under way
// (the returner's own, say), what it found live was mostly retracted
// since, and neither the garbage estimate nor the allocations show it
// (issue 28: RSS stayed at 4x idle after a file of 300,000 facts was
// removed, in about one run in four).
func shouldReturn(prev, now heapFigures, limit uint64) bool {
	if now.idle > limit {
		return true
	}
	if now.allocs-prev.allocs >= memoryQuietAlloc || now.cpu-prev.cpu >= memoryQuietCPU {
		return false // busy
	}
	atRest := now.cycles == prev.cycles && now.objects <= prev.objects+limit/16 && now.objects > now.live+limit
	return atRest || now.allocs-prev.collected > memoryBusySpell || now.shrunk-prev.shrunkAt >= memoryRetracted
}

// returnMemory collects and releases the idle heap if shouldReturn says
// so, reporting whether it did.
func returnMemory(prev *heapFigures, limit uint64, log zerolog.Logger) bool {
	now := readHeapFigures()
	if !shouldReturn(*prev, now, limit) {
		now.collected, now.shrunkAt = prev.collected, prev.shrunkAt
		*prev = now
		return false
	}
	debug.FreeOSMemory()
	*prev = readHeapFigures()
	// What was allocated or retracted while the collection ran may have
	// been live when it marked: it counts towards the next one. (A
	// retraction of 300,000 facts went on during the collection its first
	// map rebuild asked for, and its garbage then stayed, 4x idle, in
	// about one run in four.)
	prev.collected, prev.shrunkAt = now.allocs, now.shrunk
	log.Debug().Uint64("idle_bytes", now.idle).Uint64("garbage_bytes", now.objects-min(now.live, now.objects)).
		Uint64("after_bytes", prev.idle).Msg("returned idle memory to the OS")
	return true
}

// nextMemoryCheck is how long to wait before the next look: the short
// interval while a quiet spell could find something to collect (a busy
// spell or a large retraction since the last collection), the settled
// one otherwise.
func nextMemoryCheck(prev heapFigures) time.Duration {
	if prev.allocs-prev.collected > memoryBusySpell || prev.shrunk-prev.shrunkAt >= memoryRetracted {
		return memoryInterval
	}
	return memorySettledInterval
}

// startMemoryReturner runs returnMemory every memoryInterval (or
// memorySettledInterval, see nextMemoryCheck) until stop is called.
func startMemoryReturner(log zerolog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTimer(memoryInterval)
		defer tick.Stop()
		prev := readHeapFigures()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				returnMemory(&prev, memoryIdleLimit, log)
				tick.Reset(nextMemoryCheck(prev))
			}
		}
	}()
	return func() { close(done); <-finished }
}
