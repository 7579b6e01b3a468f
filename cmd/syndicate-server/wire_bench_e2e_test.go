//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// Wire benchmarks against the built server, the way issue 16 measures it:
// the server runs as its own process; the clients (one publisher and one
// subscriber connection, or one requester and one responder) share this
// process, as natsbench's do, and each resolves a sturdy ref to the config
// dataspace through the gatekeeper on a loopback TCP listener. Payloads
// are 16-byte byte strings.
//
//	go test -tags e2e -run '^$' -bench 'Wire' -benchtime 2000000x ./cmd/syndicate-server/
//
// With NATS_BENCH_DIR naming a directory holding nats-server and natsbench
// (as /work/shared/anchors/nats-bench.sh builds them), every iteration
// also runs the NATS figure right after ours, so that the ratio comes from
// one run on a noisy machine. WIRE_SERVER_PID_FILE, if set, receives the
// server's PID (for perf record / strace -p while the benchmark runs).

type wireServer struct {
	cmd  *exec.Cmd
	port int
}

func startWireServer(b *testing.B) *wireServer {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bind.pr"), []byte(`<bind <ref {oid: "bench", key: #"bench"}> $config #f>`+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	port := freePort(b)
	cmd, stderr := startBenchServer(b, "-p", strconv.Itoa(port), "-c", dir)
	testutil.WaitFor(b, "the listener", func() bool { return strings.Contains(stderr.String(), `"message":"listening"`) })
	if f := os.Getenv("WIRE_SERVER_PID_FILE"); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	}
	return &wireServer{cmd: cmd, port: port}
}

func (s *wireServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

// session dials the server and resolves the bench sturdy ref: the config
// dataspace, seen through its own connection.
func (s *wireServer) session(b *testing.B, sys *dataspace.System) *dataspace.Ref {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, gk, err := client.Dial(ctx, sys, preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(int64(s.port))))
	if err != nil {
		b.Fatal(err)
	}
	ds, _, err := client.Resolve(ctx, sys, gk, caveat.Mint(preserves.String("bench"), []byte("bench")).ToValue())
	if err != nil {
		b.Fatal(err)
	}
	return ds
}

// actorIn spawns an actor that stays alive and returns a handle to run
// turns in it.
func actorIn(sys *dataspace.System, name string) dataspace.FacetRef {
	ch := make(chan dataspace.FacetRef, 1)
	sys.Spawn(name, func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		ch <- t.FacetRef()
		return nil
	})
	return <-ch
}

func freshSystem(b *testing.B) *dataspace.System {
	sys := dataspace.NewSystem(dataspace.Options{})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sys.Shutdown(ctx)
	})
	return sys
}

type wireCounter struct {
	dataspace.BaseEntity
	n atomic.Int64
}

func (c *wireCounter) Message(*dataspace.Turn, preserves.Value) error {
	c.n.Add(1)
	return nil
}

var payload16 = preserves.ByteString("0123456789abcdef")

// BenchmarkWirePubSub: one publisher connection → server → one subscriber
// connection, batch messages per publishing turn, at most 20,000 messages
// in flight (the publisher waits for the subscriber beyond that).
func BenchmarkWirePubSub(b *testing.B) {
	for _, batch := range []int{1, 20, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := startWireServer(b)
			defer s.stop()
			pid := s.cmd.Process.Pid
			srv0, cli0 := procCPU(b, pid), selfCPU()
			rate := wirePubSub(b, s, batch)
			b.ReportMetric(rate, "msgs/s")
			// CPU per message, server and clients: robust against the
			// other load on a shared machine, unlike the rate.
			b.ReportMetric(float64((procCPU(b, pid)-srv0).Nanoseconds())/float64(b.N), "server-cpu-ns/msg")
			b.ReportMetric(float64((selfCPU()-cli0).Nanoseconds())/float64(b.N), "client-cpu-ns/msg")
			if nats := natsFigure(b, "pubsub", "pubsub_median"); nats > 0 {
				b.ReportMetric(nats, "nats-msgs/s")
				b.ReportMetric(rate/nats, "ratio")
				b.ReportMetric(lastNATS.serverNsPerMsg, "nats-server-cpu-ns/msg")
				b.ReportMetric(lastNATS.clientNsPerMsg, "nats-client-cpu-ns/msg")
			}
		})
	}
}

func wirePubSub(b *testing.B, s *wireServer, batch int) float64 {
	sys := freshSystem(b)
	sub := s.session(b, sys)
	pub := s.session(b, sys)
	cnt := &wireCounter{}
	subA := actorIn(sys, "subscriber")
	pubA := actorIn(sys, "publisher")
	subA.Activate(func(t *dataspace.Turn) error {
		t.Assert(sub, dataspace.Observe(pattern.Rec(preserves.Symbol("bench"), pattern.Discard{}), t.Create(cnt)))
		return nil
	})
	msg := preserves.Rec("bench", payload16)
	// Wait until the subscription is in place at the server.
	testutil.WaitFor(b, "the subscription", func() bool {
		pubA.Activate(func(t *dataspace.Turn) error { t.Message(pub, msg); return nil })
		time.Sleep(time.Millisecond)
		return cnt.n.Load() > 0
	})
	for cnt.n.Load() != 0 {
		cnt.n.Store(0)
		time.Sleep(20 * time.Millisecond)
	}
	const window = 20000
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; {
		for int64(sent)-cnt.n.Load() > window {
			time.Sleep(50 * time.Microsecond)
		}
		n := min(batch, b.N-sent)
		pubA.Activate(func(t *dataspace.Turn) error {
			for range n {
				t.Message(pub, msg)
			}
			return nil
		})
		sent += n
	}
	testutil.WaitFor(b, "every message", func() bool { return cnt.n.Load() >= int64(b.N) })
	el := time.Since(start)
	b.StopTimer()
	return float64(b.N) / el.Seconds()
}

// responder answers every <req X> with <rep X> in the same dataspace (it
// observes <req $x>, so it receives the captures [X]).
type responder struct {
	dataspace.BaseEntity
	ds *dataspace.Ref
}

func (r *responder) Message(t *dataspace.Turn, v preserves.Value) error {
	if xs, ok := v.(preserves.Sequence); ok && len(xs) == 1 {
		t.Message(r.ds, preserves.Rec("rep", xs[0]))
	}
	return nil
}

type wireLatch struct {
	dataspace.BaseEntity
	ch chan struct{}
}

func (l *wireLatch) Message(*dataspace.Turn, preserves.Value) error {
	select { // never block the actor: a late reply to a timed-out ping is dropped
	case l.ch <- struct{}{}:
	default:
	}
	return nil
}

// BenchmarkWireReqRep: sequential round trips requester → server →
// responder → server → requester, each on its own connection, as NATS's
// Request does (the reply travels on a subject the requester subscribed
// to).
func BenchmarkWireReqRep(b *testing.B) {
	s := startWireServer(b)
	defer s.stop()
	sys := freshSystem(b)
	respDS := s.session(b, sys)
	reqDS := s.session(b, sys)
	respA := actorIn(sys, "responder")
	reqA := actorIn(sys, "requester")
	l := &wireLatch{ch: make(chan struct{}, 1)}
	respA.Activate(func(t *dataspace.Turn) error {
		t.Assert(respDS, dataspace.Observe(pattern.Rec(preserves.Symbol("req"), pattern.Bind{Pattern: pattern.Discard{}}), t.Create(&responder{ds: respDS})))
		return nil
	})
	reqA.Activate(func(t *dataspace.Turn) error {
		t.Assert(reqDS, dataspace.Observe(pattern.Rec(preserves.Symbol("rep"), pattern.Discard{}), t.Create(l)))
		return nil
	})
	req := preserves.Rec("req", payload16)
	ping := func(patience time.Duration) bool {
		select {
		case <-l.ch:
		default:
		}
		reqA.Activate(func(t *dataspace.Turn) error { t.Message(reqDS, req); return nil })
		select {
		case <-l.ch:
			return true
		case <-time.After(patience):
			return false
		}
	}
	testutil.WaitFor(b, "the first reply", func() bool { return ping(100 * time.Millisecond) })
	for range 2000 { // warm up, as natsbench does
		ping(5 * time.Second)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if !ping(5 * time.Second) {
			b.Fatal("no reply within 5s")
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	p50 := float64(lat[len(lat)/2].Nanoseconds()) / 1000
	b.ReportMetric(p50, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
	if nats := natsFigure(b, "reqrep", "rtt_p50_us"); nats > 0 {
		b.ReportMetric(nats, "nats-p50-µs")
		b.ReportMetric(p50/nats, "ratio")
	}
}

// natsCPU is the CPU time per delivered message of NATS's last pubsub
// run: nats-server's and natsbench's (both clients).
type natsCPU struct{ serverNsPerMsg, clientNsPerMsg float64 }

var lastNATS natsCPU

// natsFigure runs natsbench MODE against a fresh nats-server from
// $NATS_BENCH_DIR and returns the value of key, or 0 when NATS_BENCH_DIR
// is not set.
func natsFigure(b *testing.B, mode, key string) float64 {
	dir := os.Getenv("NATS_BENCH_DIR")
	if dir == "" {
		return 0
	}
	port := freePort(b)
	srv := exec.Command(filepath.Join(dir, "nats-server"), "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		srv.Wait()
	}()
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	args := []string{mode, "-url", url, "-size", "16"}
	if mode == "pubsub" {
		args = append(args, "-dur", envOr("NATS_DUR", "2s"), "-reps", "1")
	} else {
		args = append(args, "-n", strconv.Itoa(max(b.N, 2000)))
	}
	var out []byte
	var err error
	var nb *exec.Cmd
	srv0 := procCPU(b, srv.Process.Pid)
	for range 50 { // the server needs a moment to listen
		nb = exec.Command(filepath.Join(dir, "natsbench"), args...)
		out, err = nb.Output()
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		b.Fatalf("natsbench: %v", err)
	}
	lastNATS = natsCPU{}
	if i := strings.Index(string(out), " delivered="); i >= 0 {
		var delivered float64
		fmt.Sscan(strings.Fields(string(out)[i+len(" delivered="):])[0], &delivered)
		if delivered > 0 {
			cli := nb.ProcessState.UserTime() + nb.ProcessState.SystemTime()
			lastNATS.serverNsPerMsg = float64((procCPU(b, srv.Process.Pid) - srv0).Nanoseconds()) / delivered
			lastNATS.clientNsPerMsg = float64(cli.Nanoseconds()) / delivered
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	b.Fatalf("natsbench printed no %s: %s", key, out)
	return 0
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// BenchmarkWireIdleSessions opens WIRE_SESSIONS (default 1,000) sessions,
// each a TCP connection that resolved the bench sturdy ref, lets the
// server settle for WIRE_SETTLE (default 2s, as natsbench conns waits for
// NATS) and reports its resident memory per session (VmRSS after minus
// before).
//
//	go test -tags e2e -run '^$' -bench WireIdleSessions -benchtime 1x ./cmd/syndicate-server/
func BenchmarkWireIdleSessions(b *testing.B) {
	n := envInt("WIRE_SESSIONS", 1000)
	settle, err := time.ParseDuration(envOr("WIRE_SETTLE", "2s"))
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		s := startWireServer(b)
		pid := s.cmd.Process.Pid
		sys := freshSystem(b)
		s.session(b, sys) // warm up: the listener's first connection allocates shared state
		time.Sleep(2 * time.Second)
		before := procStatus(b, pid, "VmRSS")
		for range n {
			s.session(b, sys)
		}
		time.Sleep(settle)
		after := procStatus(b, pid, "VmRSS")
		b.ReportMetric((after-before)*1024/float64(n), "kB/session")
		b.ReportMetric(after, "server-RSS-MB")
		if d, err := time.ParseDuration(os.Getenv("WIRE_HOLD")); err == nil {
			fmt.Fprintln(os.Stderr, "holding", d)
			time.Sleep(d) // time to profile the server (see SYNDICATE_PPROF)
		}
		s.stop()
	}
}

// BenchmarkDaemonPSS supervises DAEMONS (default 1,000) `sleep` daemons,
// added to a running server's config directory, and reports the server's
// proportional set size (smaps_rollup Pss) per daemon once every child
// runs, after minus before.
//
//	go test -tags e2e -run '^$' -bench DaemonPSS -benchtime 1x ./cmd/syndicate-server/
func BenchmarkDaemonPSS(b *testing.B) {
	n := envInt("DAEMONS", 1000)
	for range b.N {
		dir := b.TempDir()
		cmd, _ := startBenchServer(b, "-c", dir)
		pid := cmd.Process.Pid
		time.Sleep(2 * time.Second)
		before := smapsPss(b, pid)
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "<require-service <daemon d%d>>\n<daemon d%d \"exec sleep 1000\">\n", i, i)
		}
		if err := os.WriteFile(filepath.Join(dir, "daemons.pr"), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(120 * time.Second)
		for childCount(pid) < n {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d children after 120s", childCount(pid), n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		after := smapsPss(b, pid)
		b.ReportMetric(float64(after-before)/float64(n), "PSS-kB/daemon")
		b.ReportMetric(float64(threads(pid)), "threads")
		if d, err := time.ParseDuration(os.Getenv("WIRE_HOLD")); err == nil {
			fmt.Fprintln(os.Stderr, "holding", d)
			time.Sleep(d) // time to profile the server (see SYNDICATE_PPROF)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
}

func smapsPss(b *testing.B, pid int) int {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(line, "Pss:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return kb
		}
	}
	b.Fatal("no Pss in smaps_rollup")
	return 0
}

// childCount counts pid's direct children over all its threads.
func childCount(pid int) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	n := 0
	for _, t := range tasks {
		c, _ := os.ReadFile(t)
		n += len(strings.Fields(string(c)))
	}
	return n
}

func threads(pid int) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*")
	return len(tasks)
}

// BenchmarkDaemonRestart measures restart latency: a daemon whose process
// appends a timestamp and exits with status 1 at once, restarted after
// restartDelay 10 ms; it reports the median and p90 time from one start
// to the next, net of that delay (so it includes the shell's start-up,
// as the s6/runit anchor with flap-child.sh does).
//
//	go test -tags e2e -run '^$' -bench DaemonRestart -benchtime 1x ./cmd/syndicate-server/
func BenchmarkDaemonRestart(b *testing.B) {
	const starts = 60
	for range b.N {
		dir := b.TempDir()
		stamps := filepath.Join(dir, "starts")
		script := fmt.Sprintf(`<require-service <daemon flap>>
<daemon flap {argv: ["/bin/sh" "-c" "date +%%s%%N >> %s; exit 1"] restartDelay: 0.01 restartMaxDelay: 0.01 restartLimit: 100000 restartWindow: 1}>
`, stamps)
		if err := os.WriteFile(filepath.Join(dir, "flap.pr"), []byte(script), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd, _ := startBenchServer(b, "-c", filepath.Join(dir, "flap.pr"))
		var ts []int64
		testutil.WaitFor(b, "the restarts", func() bool {
			data, _ := os.ReadFile(stamps)
			ts = ts[:0]
			for _, f := range strings.Fields(string(data)) {
				n, _ := strconv.ParseInt(f, 10, 64)
				ts = append(ts, n)
			}
			return len(ts) > starts
		})
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		var d []time.Duration
		for i := 1; i < len(ts); i++ {
			d = append(d, time.Duration(ts[i]-ts[i-1])-10*time.Millisecond)
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "net-p50-ms")
		b.ReportMetric(float64(d[len(d)*9/10].Microseconds())/1000, "net-p90-ms")
	}
}
