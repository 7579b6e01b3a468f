package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
)

var sink [][]byte

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
	debug.FreeOSMemory() // nothing idle to begin with
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
	} {
		if got := shouldReturn(c.prev, c.now, limit); got != c.wantReturn {
			t.Errorf("%s: shouldReturn = %v, want %v", c.name, got, c.wantReturn)
		}
	}
}
