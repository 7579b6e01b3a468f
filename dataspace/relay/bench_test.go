package relay

// Loopback TCP benchmarks. Report figures with:
//
//	go test -run '^$' -bench Throughput -benchtime 2000000x ./dataspace/relay
//	go test -run '^$' -bench 'PingPong|Idle' ./dataspace/relay

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// benchServer is a server System with one dataspace, exported as oid 0 on
// every accepted connection.
type benchServer struct {
	sys *dataspace.System
	ds  *dataspace.Ref
	ln  net.Listener
	drv *driver
}

func newBenchServer(b *testing.B) *benchServer {
	s := &benchServer{sys: newSys(b)}
	s.drv = newDriver(b, s.sys, "server")
	s.drv.do(func(t *dataspace.Turn) { s.ds = t.Create(dataspace.NewDataspace()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s.ln = ln
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, _, err := Spawn(s.sys, "conn", c, Options{InitialRef: s.ds}); err != nil {
				c.Close()
			}
		}
	}()
	return s
}

// dial connects a fresh client System and returns the server's oid 0.
func (s *benchServer) dial(b *testing.B) (*dataspace.System, *dataspace.Ref, *driver) {
	sys := newSys(b)
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	_, peer, err := Spawn(sys, "client", c, Options{ImportInitial: true})
	if err != nil {
		b.Fatal(err)
	}
	return sys, peer, newDriver(b, sys, "driver")
}

type counter struct {
	dataspace.BaseEntity
	n atomic.Int64
}

func (c *counter) Message(*dataspace.Turn, preserves.Value) error {
	c.n.Add(1)
	return nil
}

// One producer → server dataspace → one consumer, small messages. The
// producer sends batches of N messages per turn (one Turn packet each) and
// keeps at most 20,000 messages in flight end to end. batch=500 is the
// headline figure; batch=1 (every message its own turn and packet) shows
// the per-packet overhead.
func BenchmarkThroughputProducerDataspaceConsumer(b *testing.B) {
	for _, batch := range []int{500, 20, 1} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchThroughput(b, batch) })
	}
}

func benchThroughput(b *testing.B, batch int) {
	s := newBenchServer(b)
	_, cpeer, cdrv := s.dial(b)
	_, ppeer, pdrv := s.dial(b)
	cnt := &counter{}
	cdrv.do(func(t *dataspace.Turn) {
		t.Assert(cpeer, dataspace.Observe(pattern.Rec(preserves.Symbol("msg"), pattern.Discard{}), t.Create(cnt)))
	})
	// Wait until the subscription is in place at the server.
	for {
		pdrv.do(func(t *dataspace.Turn) { t.Message(ppeer, rec("msg", preserves.Int(-1))) })
		time.Sleep(time.Millisecond)
		if cnt.n.Load() > 0 {
			break
		}
	}
	for cnt.n.Load() != 0 {
		cnt.n.Store(0)
		time.Sleep(20 * time.Millisecond)
	}
	const window = 20000
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	sent := 0
	for sent < b.N {
		for int64(sent)-cnt.n.Load() > window {
			time.Sleep(50 * time.Microsecond)
		}
		n := min(batch, b.N-sent)
		base := sent
		pdrv.do(func(t *dataspace.Turn) {
			for i := range n {
				t.Message(ppeer, rec("msg", preserves.Int(base+i)))
			}
		})
		sent += n
	}
	for cnt.n.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
	// CPU time of the whole process (both clients, the server, the
	// kernel's share of loopback TCP) per message: robust against other
	// load on the machine, unlike wall-clock rates.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1000, "cpu-µs/msg")
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pong replies to `<ping n>` with `<pong n>` at every client registered
// with `<client #:ref>` (an assertion, so the ref is pinned).
type pong struct {
	dataspace.BaseEntity
	clients map[dataspace.Handle]*dataspace.Ref
}

func (p *pong) Assert(_ *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	if r, ok := dataspace.RefOf(v.(*preserves.Record).Fields[0]); ok {
		p.clients[h] = r
	}
	return nil
}

func (p *pong) Message(t *dataspace.Turn, v preserves.Value) error {
	n := v.(*preserves.Record).Fields[0]
	for _, c := range p.clients {
		t.Message(c, rec("pong", n))
	}
	return nil
}

type latch struct {
	dataspace.BaseEntity
	ch chan struct{}
}

func (l *latch) Message(*dataspace.Turn, preserves.Value) error {
	l.ch <- struct{}{}
	return nil
}

// Round trip: client actor → TCP → server relay → echo actor → TCP →
// client relay → client entity; the test goroutine waits for each reply
// before sending the next ping.
func BenchmarkPingPongLatency(b *testing.B) {
	sys := newSys(b)
	drv := newDriver(b, sys, "server")
	var echo *dataspace.Ref
	drv.do(func(t *dataspace.Turn) { echo = t.Create(&pong{clients: make(map[dataspace.Handle]*dataspace.Ref)}) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			Spawn(sys, "conn", c, Options{InitialRef: echo})
		}
	}()
	csys := newSys(b)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	_, peer, err := Spawn(csys, "client", c, Options{ImportInitial: true})
	if err != nil {
		b.Fatal(err)
	}
	cdrv := newDriver(b, csys, "driver")
	l := &latch{ch: make(chan struct{}, 1)}
	cdrv.do(func(t *dataspace.Turn) { t.Assert(peer, rec("client", dataspace.Embed(t.Create(l)))) })
	ping := func(i int) {
		cdrv.do(func(t *dataspace.Turn) { t.Message(peer, rec("ping", preserves.Int(i))) })
		<-l.ch
	}
	for i := range 1000 { // warm up; also waits for the registration
		ping(i)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		ping(i)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}

// 1,000 concurrent idle connections to one server: memory and goroutines
// per connection on the server side (each relay: an actor, a facet, a
// reader and a writer goroutine, buffers, the socket).
func BenchmarkIdleConnections1000(b *testing.B) {
	const n = 1000
	for range b.N {
		sys := dataspace.NewSystem(dataspace.Options{})
		ds := make(chan *dataspace.Ref, 1)
		sys.Spawn("server", func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			ds <- t.Create(dataspace.NewDataspace())
			return nil
		})
		d := <-ds
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		// Client ends are plain sockets, created first so that only the
		// server side is measured.
		clients := make([]net.Conn, 0, n)
		servers := make([]net.Conn, 0, n)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				servers = append(servers, c)
			}
		}()
		for range n {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		wg.Wait()
		ln.Close()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		conns := make([]*Conn, 0, n)
		for _, c := range servers {
			conn, _, err := Spawn(sys, "conn", c, Options{InitialRef: d})
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, conn)
		}
		// Every connection proves it is alive with one packet.
		for _, c := range clients {
			c.Write([]byte("#f\n"))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		g1 := runtime.NumGoroutine()
		used := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(used)/n, "bytes/conn")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/conn")
		for _, c := range clients {
			c.Close()
		}
		for _, c := range conns {
			<-c.Done()
		}
		sys.Shutdown(b.Context())
	}
}
