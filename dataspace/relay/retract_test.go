package relay

import (
	"fmt"
	"strings"
	"testing"
)

// Every assertion a peer made is retracted when it goes, however many it
// held: the relay's inbound assertions live in its facet, whose handle
// list compacts past 32 entries when mostly stale. Sizes straddle that
// threshold; retracting every other handle first leaves the holes that
// make it compact, both while connected and at disconnect.
func TestPeerDisconnectRetractsEverythingAtScale(t *testing.T) {
	for _, n := range []int{31, 32, 33, 64, 129, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h := newWire(t, Options{})
			var b strings.Builder
			b.WriteString("[")
			for i := range n {
				fmt.Fprintf(&b, "[0 <A <fact %d> %d>]", i, i+1)
			}
			b.WriteString("]")
			h.send(b.String())
			waitFor(t, fmt.Sprintf("%d assertions", n), func() bool { return h.rec.count() == n })

			b.Reset()
			b.WriteString("[")
			for i := 0; i < n; i += 2 {
				fmt.Fprintf(&b, "[0 <R %d>]", i+1)
			}
			b.WriteString("]")
			h.send(b.String())
			want := n / 2
			waitFor(t, fmt.Sprintf("%d assertions after retracting every other one", want), func() bool { return h.rec.count() == want })

			h.net.Close()
			waitFor(t, "every assertion retracted", func() bool { return h.rec.count() == 0 })
			if err := h.closed(); err != nil {
				t.Fatalf("clean EOF gave %v", err)
			}
		})
	}
}
