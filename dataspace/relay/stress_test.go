package relay

import (
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Many turns of varying size, written while the writer goroutine is busy:
// every event arrives exactly once, in order, with intact bytes (guards
// the writer's buffer swapping).
func TestStreamIntegrityUnderLoad(t *testing.T) {
	h := newWire(t, Options{})
	const total = 20000
	go func() {
		sent := 0
		for sent < total {
			n := 1 + sent%37
			base := sent
			h.drv.do(func(t *dataspace.Turn) {
				for i := range n {
					if base+i < total {
						t.Message(h.peer, preserves.Int(base+i))
					}
				}
			})
			sent += n
		}
	}()
	next := 0
	for next < total {
		v, _, _ := h.recv()
		for _, te := range v.(preserves.Sequence) {
			m := te.(preserves.Sequence)[1].(*preserves.Record)
			if got := m.Fields[0].(preserves.Int); int(got) != next {
				t.Fatalf("got %d, want %d", got, next)
			}
			next++
		}
	}
}
