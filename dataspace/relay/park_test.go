package relay

import (
	"runtime"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/idleread"
)

func ended(c *Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// Idle connections hold no reader goroutine (issue 28, memory per idle
// session): their streams are parked with the shared poller. Input
// resumes the reader; the peer's close and a local Close both end the
// connection cleanly from the parked state.
func TestIdleConnectionsHoldNoReader(t *testing.T) {
	checkGoroutines(t)
	sys := newSys(t)
	rec := newRecorder()
	drv := newDriver(t, sys, "driver")
	var recR *dataspace.Ref
	drv.do(func(t *dataspace.Turn) { recR = t.Create(rec) })

	const n = 40
	g0 := runtime.NumGoroutine()
	conns := make([]*Conn, n)
	peers := make([]interface{ Close() error }, n)
	raw := make([]func(string), n)
	for i := range n {
		a, b := tcpPair(t)
		t.Cleanup(func() { b.Close() })
		c, _, err := Spawn(sys, "relay", a, Options{InitialRef: recR})
		if err != nil {
			t.Fatal(err)
		}
		conns[i], peers[i] = c, b
		raw[i] = func(s string) {
			if _, err := b.Write([]byte(s + "\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "the idle connections' readers to park", func() bool {
		return runtime.NumGoroutine()-g0 < n/4 && idleread.Parked() >= n
	})

	// Input resumes a parked reader.
	raw[3](`[[0 <M hello>]]`)
	waitFor(t, "the message to arrive", func() bool { return rec.has("!hello") })
	waitFor(t, "the reader to park again", func() bool { return idleread.Parked() >= n })

	// Half end from the peer's side, half from ours.
	for i := range n {
		if i%2 == 0 {
			peers[i].Close()
		} else {
			conns[i].Close()
		}
	}
	for i, c := range conns {
		waitFor(t, "every connection to end from the parked state", func() bool { return ended(c) })
		if err := c.Err(); err != nil {
			t.Fatalf("connection %d ended with %v", i, err)
		}
	}
}
