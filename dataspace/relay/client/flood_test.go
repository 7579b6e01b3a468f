package client

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// slowCounter counts messages, pausing 1 ms every 20: a consumer of about
// 20,000 messages a second (issue 23's flood). The pause simulates a slow
// consumer; it synchronises nothing.
type slowCounter struct {
	dataspace.BaseEntity
	n atomic.Int64
}

func (c *slowCounter) Message(*dataspace.Turn, preserves.Value) error {
	if c.n.Add(1)%20 == 0 {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// floodServer runs a dataspace exported at oid 0 of every connection to
// ln, as a relay listener does.
func floodServer(tb testing.TB, sys *dataspace.System, ln net.Listener) {
	dsc := make(chan *dataspace.Ref, 1)
	sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		dsc <- t.Create(dataspace.NewDataspace())
		return nil
	})
	ds := <-dsc
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, _, err := relay.Spawn(sys, "conn", c, relay.Options{InitialRef: ds}); err != nil {
				c.Close()
			}
		}
	}()
	tb.Cleanup(func() { ln.Close() })
}

// flood is issue 23's flood: a slow consumer, and a producer sending
// total messages of 1 KiB, 200 per turn, with plain FacetRef.Activate.
// It returns once every message has arrived.
func flood(tb testing.TB, total int) {
	srv, cli := newSys(tb), newSys(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	floodServer(tb, srv, ln)
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cconn, cds, err := Dial(ctx, cli, addr)
	if err != nil {
		tb.Fatal(err)
	}
	counter := &slowCounter{}
	synced := make(chan struct{})
	cli.Spawn("consumer", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		pat := pattern.Rec(preserves.Symbol("flood"), pattern.Discard{}, pattern.Discard{})
		t.Assert(cds, dataspace.Observe(pat, t.Create(counter)))
		// The sync answers once the server has the observer.
		t.Sync(cds, func(*dataspace.Turn) error { close(synced); return nil })
		return nil
	})
	<-synced

	pconn, pds, err := Dial(ctx, cli, addr)
	if err != nil {
		tb.Fatal(err)
	}
	frc := make(chan dataspace.FacetRef, 1)
	cli.Spawn("producer", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		frc <- t.FacetRef()
		return nil
	})
	fr := <-frc
	payload := preserves.ByteString(make([]byte, 1024))
	const perTurn = 200
	for i := 0; i < total; i += perTurn {
		if !fr.Activate(func(t *dataspace.Turn) error {
			for j := range perTurn {
				t.Message(pds, preserves.Rec("flood", preserves.Int(i+j), payload))
			}
			return nil
		}) {
			tb.Fatal("the producer's actor died")
		}
	}
	testutil.WaitForWithin(tb, 5*time.Minute, "every message to arrive", func() bool { return counter.n.Load() >= int64(total) })
	if got := counter.n.Load(); got != int64(total) {
		tb.Fatalf("%d of %d messages", got, total)
	}
	if pconn.Err() != nil || cconn.Err() != nil {
		tb.Fatalf("connections failed: producer %v, consumer %v", pconn.Err(), cconn.Err())
	}
}

// A Go producer flooding a slow consumer with plain Activate is slowed to
// the consumer's pace: every message arrives, nobody is cut off.
func TestFloodWithPlainActivate(t *testing.T) {
	flood(t, floodMessages)
	checkFloodMemory(t)
}
