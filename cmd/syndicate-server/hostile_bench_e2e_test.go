//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// BenchmarkHostile replays issue 12's hostile-peer session against a fresh
// server per case, with no credentials (every case talks to the
// gatekeeper at oid 0 of a -p listener). For each it reports the server's
// peak RSS, the CPU it spent until it settled (1 s without CPU use), and
// the worst round trip a canary client on another connection saw
// meanwhile; the server must outlive every case.
//
//	go test -tags e2e -run '^$' -bench Hostile -benchtime 1x ./cmd/syndicate-server/
//
// SYNDICATE_E2E_SERVER=/path/to/old/syndicate-server measures another build.
func BenchmarkHostile(b *testing.B) {
	falses := func(n int) []byte { // [[0 <M [#f …]>]] in binary, n bytes
		p := []byte{0xB5, 0xB5, 0xB0, 0x01, 0x00, 0xB4, 0xB3, 0x01, 'M', 0xB5}
		p = append(p, bytes.Repeat([]byte{0x80}, n-len(p)-4)...)
		return append(p, 0x84, 0x84, 0x84, 0x84)
	}
	cases := []struct {
		name   string
		attack func(tb testing.TB, addr string) []net.Conn
	}{
		{"packet-15MiB-of-false", func(tb testing.TB, addr string) []net.Conn {
			return []net.Conn{send(tb, addr, falses(15<<20))}
		}},
		{"3-packets-8MiB-of-false", func(tb testing.TB, addr string) []net.Conn {
			p := falses(8 << 20)
			return []net.Conn{send(tb, addr, append(append(append([]byte{}, p...), p...), p...))}
		}},
		{"100k-unresolvable-resolves", func(tb testing.TB, addr string) []net.Conn {
			var sb strings.Builder
			for i := range 100_000 {
				if i%1000 == 0 {
					sb.WriteString("[")
				}
				fmt.Fprintf(&sb, `[0 <A <resolve <noise {service: %d}> #:[0 %d]> %d>]`, i, i, i)
				if i%1000 == 999 {
					sb.WriteString("]\n")
				}
			}
			return []net.Conn{send(tb, addr, []byte(sb.String()))}
		}},
		{"500-connections-64-resolves-each", func(tb testing.TB, addr string) []net.Conn {
			var cs []net.Conn
			for c := range 500 {
				var sb strings.Builder
				sb.WriteString("[")
				for i := range 64 {
					fmt.Fprintf(&sb, `[0 <A <resolve <noise {service: %d}> #:[0 %d]> %d>]`, c*64+i, i, i)
				}
				sb.WriteString("]\n")
				cs = append(cs, send(tb, addr, []byte(sb.String())))
			}
			return cs
		}},
		{"20-partial-packets-10MiB", func(tb testing.TB, addr string) []net.Conn {
			head := []byte{0xB5, 0xB5, 0xB0, 0x01, 0x00, 0xB4, 0xB3, 0x01, 'M', 0xB1}
			head = binary.AppendUvarint(head, 16<<20-64)
			body := append(head, bytes.Repeat([]byte{'x'}, 10<<20)...)
			var cs []net.Conn
			for range 20 {
				cs = append(cs, send(tb, addr, body))
			}
			return cs
		}},
		{"text-integer-4MB-digits", func(tb testing.TB, addr string) []net.Conn {
			return []net.Conn{send(tb, addr, []byte("[[0 <M 1"+strings.Repeat("1234567890", 400_000)+">]]\n"))}
		}},
		{"binary-integer-8MB-malformed-event", func(tb testing.TB, addr string) []net.Conn {
			p := []byte{0xB5, 0xB5, 0xB0, 0x01, 0x00, 0xB4, 0xB3, 0x01, 'Q', 0xB0}
			p = binary.AppendUvarint(p, 8<<20)
			p = append(p, 0x01)
			p = append(p, make([]byte, 8<<20-1)...)
			return []net.Conn{send(tb, addr, append(p, 0x84, 0x84, 0x84))}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				port := freePort(b)
				srv := start(b, "-p", strconv.Itoa(port))
				testutil.WaitFor(b, "the listener", func() bool { return strings.Contains(srv.stderr.String(), `"message":"listening"`) })
				addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
				pid := srv.cmd.Process.Pid
				canary := startCanary(b, addr)
				cpu0 := procCPU(b, pid)
				conns := c.attack(b, addr)
				settle(b, pid)
				b.ReportMetric(procStatus(b, pid, "VmHWM"), "peak-RSS-MB")
				b.ReportMetric((procCPU(b, pid) - cpu0).Seconds(), "server-CPU-s")
				b.ReportMetric(float64(canary.stop().Milliseconds()), "canary-worst-ms")
				if syscall.Kill(pid, 0) != nil {
					b.Fatal("the server died")
				}
				for _, c := range conns {
					c.Close()
				}
				srv.stop(b)
			}
		})
	}
}

// send connects and writes b in the background (the server may stop
// reading, or close the connection, part-way).
func send(tb testing.TB, addr string, b []byte) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	go c.Write(b)
	return c
}

// settle waits until the server has used no CPU for a second (at most a
// minute).
func settle(tb testing.TB, pid int) {
	time.Sleep(time.Second) // let the attack's bytes arrive before judging
	last := procCPU(tb, pid)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		now := procCPU(tb, pid)
		if now-last < 20*time.Millisecond {
			return
		}
		last = now
	}
}

// canary syncs with oid 0 (a TCP address or a Unix socket path) over its
// own connection every 50 ms and keeps the worst round trip.
type canary struct {
	worst atomic.Int64
	done  chan struct{}
	ended chan struct{}
}

func startCanary(tb testing.TB, addr string) *canary {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	k := &canary{done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(k.ended)
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			select {
			case <-k.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			begin := time.Now()
			c.SetDeadline(begin.Add(2 * time.Minute))
			if _, err := c.Write([]byte("[[0 <S #:[0 0]>]]\n")); err != nil {
				k.worst.Store(int64(time.Hour))
				return
			}
			if _, err := r.ReadString('\n'); err != nil {
				k.worst.Store(int64(time.Hour))
				return
			}
			if d := int64(time.Since(begin)); d > k.worst.Load() {
				k.worst.Store(d)
			}
		}
	}()
	return k
}

func (k *canary) stop() time.Duration {
	close(k.done)
	<-k.ended
	return time.Duration(k.worst.Load())
}
