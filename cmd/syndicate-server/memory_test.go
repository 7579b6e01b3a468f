package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

var sink [][]byte

// idleHeap is the resident memory of the heap's free spans: what
// FreeOSMemory can return.
func idleHeap() uint64 { return readHeapFigures().idle }

// After a burst of garbage, returnMemory hands the idle heap back to the
// OS in one go instead of leaving it to the runtime's slow scavenger.
func TestReturnMemoryAfterBurst(t *testing.T) {
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	runtime.GC()
	prev := readHeapFigures()
	before := prev.idle
	if before <= 32<<20 {
		t.Skipf("the runtime already returned the burst (%d idle bytes)", before)
	}
	if !returnMemory(&prev, 16<<20, zerolog.Nop()) {
		t.Fatal("returnMemory did nothing")
	}
	if after := idleHeap(); after >= 16<<20 {
		t.Fatalf("idle heap %d bytes after returning (was %d)", after, before)
	}
	if returnMemory(&prev, 16<<20, zerolog.Nop()) {
		t.Fatal("returnMemory acted on a heap with nothing idle")
	}
}

// Garbage that no collection has reached yet (a large retraction on a
// server that then goes quiet) is collected and returned once it has been
// at rest for an interval.
func TestReturnMemoryCollectsGarbageAtRest(t *testing.T) {
	debug.FreeOSMemory()                             // nothing idle to begin with
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no cycle but ours
	prev := readHeapFigures()
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	if returnMemory(&prev, 16<<20, zerolog.Nop()) {
		t.Fatal("returnMemory acted while the heap was growing")
	}
	garbage := prev.objects - prev.live
	if garbage < 48<<20 {
		t.Fatalf("only %d bytes of garbage after the burst", garbage)
	}
	if !returnMemory(&prev, 16<<20, zerolog.Nop()) {
		t.Fatal("returnMemory left the garbage at rest")
	}
	if now := readHeapFigures(); now.objects > now.live+16<<20 || now.idle >= 16<<20 {
		t.Fatalf("after returning: %+v", now)
	}
}

// The decision: idle heap over the limit, or garbage over the limit while
// no cycle ran and the objects did not grow; never while busy.
func TestShouldReturn(t *testing.T) {
	const limit = 16 << 20
	rest := heapFigures{objects: 100 << 20, live: 60 << 20, cycles: 7}
	for _, c := range []struct {
		name       string
		prev, now  heapFigures
		wantReturn bool
	}{
		{"idle over the limit", rest, heapFigures{idle: limit + 1, cycles: 9}, true},
		{"garbage at rest", rest, rest, true},
		{"garbage grew a little", rest, heapFigures{objects: rest.objects + limit/32, live: rest.live, cycles: 7}, true},
		{"allocating", rest, heapFigures{objects: rest.objects + limit, live: rest.live, cycles: 7}, false},
		{"a cycle ran", rest, heapFigures{objects: rest.objects, live: rest.live, cycles: 8}, false},
		{"little garbage", heapFigures{objects: 70 << 20, live: 60 << 20}, heapFigures{objects: 70 << 20, live: 60 << 20}, false},
		{"allocating after a busy spell", heapFigures{allocs: 10 << 20}, heapFigures{allocs: 10<<20 + memoryQuietAlloc}, false},
		{"quiet after a busy spell", heapFigures{allocs: 10 << 20, collected: 1 << 20}, heapFigures{allocs: 10<<20 + 1}, true},
		{"busy without allocating", heapFigures{allocs: 10 << 20, collected: 1 << 20, cpu: time.Second}, heapFigures{allocs: 10<<20 + 1, cpu: time.Second + memoryQuietCPU}, false},
		{"quiet, little allocated since the last collection", heapFigures{allocs: 10 << 20, collected: 8 << 20}, heapFigures{allocs: 10<<20 + 1}, false},
		{"quiet after a large retraction", heapFigures{allocs: 10 << 20, collected: 10 << 20, shrunk: 5, shrunkAt: 5}, heapFigures{allocs: 10<<20 + 1, shrunk: 5 + memoryRetracted}, true},
		{"busy during a large retraction", heapFigures{allocs: 10 << 20, collected: 10 << 20}, heapFigures{allocs: 10<<20 + memoryQuietAlloc, shrunk: memoryRetracted}, false},
		{"quiet after a small retraction", heapFigures{allocs: 10 << 20, collected: 10 << 20}, heapFigures{allocs: 10<<20 + 1, shrunk: memoryRetracted - 1}, false},
	} {
		if got := shouldReturn(c.prev, c.now, limit); got != c.wantReturn {
			t.Errorf("%s: shouldReturn = %v, want %v", c.name, got, c.wantReturn)
		}
	}
}

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 800}, {1 * mib, 800}, {2 * mib, 800}, {4 * mib, 400}, {8 * mib, 200},
		{16 * mib, 100}, {64 * mib, 100}, {100 * mib, 64}, {128 * mib, 50}, {1024 * mib, 50},
	} {
		if got := gcPercentFor(c.live, 16*mib); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
}

// The pacer sets the percent for the live heap after every collection,
// and stopping it restores the default.
func TestGCPacerFollowsCollections(t *testing.T) {
	t.Setenv("GOGC", "")
	p, stop := startGCPacer(gcHeadroom)
	if p == nil {
		t.Fatal("no pacer without GOGC in the environment")
	}
	testutil.WaitFor(t, "the pacer to see collections", func() bool {
		runtime.GC()
		return p.cycles.Load() >= 2
	})
	if got := p.percent.Load(); got < 100 || got > 800 {
		t.Fatalf("percent %d outside [100, 800]", got)
	}
	stop()
	if prev := debug.SetGCPercent(100); prev != 100 {
		t.Fatalf("stopping the pacer left GOGC at %d", prev)
	}
	n := p.cycles.Load()
	runtime.GC()
	runtime.GC()
	if p.cycles.Load() > n+1 { // a finalizer queued before stop may still run once
		t.Fatalf("a stopped pacer still follows collections")
	}
}

func TestGCPacerLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	if p, stop := startGCPacer(gcHeadroom); p != nil {
		stop()
		t.Fatal("the pacer ran although GOGC was set")
	}
}

// The garbage of a busy spell is collected once the server is quiet, once,
// and not while it allocates; a collection during the spell does not hide
// it (it counts what was allocated meanwhile as live).
func TestReturnMemoryAfterABusySpell(t *testing.T) {
	debug.FreeOSMemory()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	prev := readHeapFigures()
	prev.collected = prev.allocs
	for range 8 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	if returnMemory(&prev, memoryIdleLimit, zerolog.Nop()) {
		t.Fatal("collected while 8 MiB had just been allocated")
	}
	cycles := prev.cycles
	if !returnMemory(&prev, memoryIdleLimit, zerolog.Nop()) {
		t.Fatal("the busy spell's garbage left uncollected in a quiet spell")
	}
	if prev.cycles == cycles {
		t.Fatal("no collection ran")
	}
	if returnMemory(&prev, memoryIdleLimit, zerolog.Nop()) {
		t.Fatal("collected again with nothing allocated since")
	}
}

// The returner looks often while something could be collected, and
// rarely once the server has settled.
func TestNextMemoryCheck(t *testing.T) {
	settled := heapFigures{allocs: 10 << 20, collected: 10 << 20}
	if d := nextMemoryCheck(settled); d != memorySettledInterval {
		t.Errorf("settled: %v", d)
	}
	busy := heapFigures{allocs: 10<<20 + memoryBusySpell + 1, collected: 10 << 20}
	if d := nextMemoryCheck(busy); d != memoryInterval {
		t.Errorf("after a busy spell: %v", d)
	}
	retracted := heapFigures{allocs: 10 << 20, collected: 10 << 20, shrunk: memoryRetracted}
	if d := nextMemoryCheck(retracted); d != memoryInterval {
		t.Errorf("after a large retraction: %v", d)
	}
}
