package main

import (
	"runtime"
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
	before := idleHeap()
	if before <= 32<<20 {
		t.Skipf("the runtime already returned the burst (%d idle bytes)", before)
	}
	if !returnMemory(16<<20, zerolog.Nop()) {
		t.Fatal("returnMemory did nothing")
	}
	if after := idleHeap(); after >= 16<<20 {
		t.Fatalf("idle heap %d bytes after returning (was %d)", after, before)
	}
	if returnMemory(16<<20, zerolog.Nop()) {
		t.Fatal("returnMemory acted on a heap with nothing idle")
	}
}
