// Package bench is the engine of `syndicate bench`, the counterpart of
// `nats bench`: what a user runs to size a deployment (docs/benchmarks.md).
// Three workloads, each against whatever server the session options reach
// (admin socket, or --connect and --ref), in the dataspace that connection
// leads to:
//
//   - pubsub: N publisher and M subscriber sessions, each its own
//     connection. Publishers send `<syndicate-bench RUN T PAYLOAD>`, K per
//     turn, paced by an account (ActivatePaced) so that a publisher never
//     runs further ahead of the server than its credit; subscribers count
//     what they receive and record T's age (publish-to-delivery latency).
//   - reqrep: one requester and one responder session; one request in
//     flight, the next sent from the turn that receives the reply, so the
//     round trip is client → server → responder → server → client.
//   - idle: K sessions opened and left idle; when the server's pid is known
//     (the admin socket's or a Unix listener's SO_PEERCRED, a loopback TCP
//     listener found in /proc, or --server-pid) its memory is read before
//     and after, per session.
//
// Messages carry RUN, a random id, so several runs (or a run and a real
// workload) do not see each other's traffic. Live progress goes to
// Options.Progress once a second; the Result is JSON-encodable or printed
// as text.
package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// Options describe one run.
type Options struct {
	Conn session.Options // how each session reaches the server
	// Progress receives a line of live progress once a second (nil:
	// none).
	Progress io.Writer
	Size     int // payload bytes per message

	// pubsub
	Pubs, Subs int           // publisher and subscriber sessions
	PerTurn    int           // messages each publisher sends per turn
	Duration   time.Duration // publishing time
	Credit     int64         // a publisher's account limit before it waits

	// reqrep
	N, Warmup int // measured and unmeasured round trips

	// idle
	Sessions  int           // idle sessions to open
	Settle    time.Duration // wait after opening before reading the server's memory
	ServerPID int           // the server's pid, if the connection cannot tell
}

// Result is what a workload measured: JSON-encodable, and printable for
// people.
type Result interface{ Text(w io.Writer) }

// Workloads are the names Run accepts.
var Workloads = []string{"pubsub", "reqrep", "idle"}

// Run runs one workload.
func Run(ctx context.Context, workload string, o Options) (Result, error) {
	b := &bench{o: o, sys: dataspace.NewSystem(dataspace.Options{}), run: newRunID()}
	defer b.close()
	switch workload {
	case "pubsub":
		return b.pubsub(ctx)
	case "reqrep":
		return b.reqrep(ctx)
	case "idle":
		return b.idle(ctx)
	}
	return nil, fmt.Errorf("bench: unknown workload %q", workload)
}

func newRunID() preserves.String {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return preserves.String(hex.EncodeToString(b[:]))
}

// bench is one run: its sessions share one actor system.
type bench struct {
	o        Options
	sys      *dataspace.System
	run      preserves.String
	sessions []*session.Session
}

func (b *bench) close() {
	for _, s := range b.sessions {
		s.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = b.sys.Shutdown(ctx)
}

// open adds a session to the run.
func (b *bench) open(ctx context.Context) (*session.Session, error) {
	s, err := session.Open(ctx, b.sys, false, b.o.Conn)
	if err != nil {
		return nil, err
	}
	b.sessions = append(b.sessions, s)
	return s, nil
}

// actor opens a session and runs boot in an actor of it (see spawn);
// once it returns, the server has what boot asserted, so subscriptions
// are in place.
func (b *bench) actor(ctx context.Context, name string, boot func(t *dataspace.Turn, cfg *dataspace.Ref) error) (*session.Session, dataspace.FacetRef, error) {
	s, err := b.open(ctx)
	if err != nil {
		return nil, dataspace.FacetRef{}, err
	}
	fr, err := s.Spawn(name, func(t *dataspace.Turn) error { return boot(t, s.Cfg) })
	if err == nil {
		err = s.Flush(ctx, fr)
	}
	return s, fr, err
}

// progress prints line() to stderr once a second until stop is called.
func (b *bench) progress(line func(elapsed time.Duration) string) (stop func()) {
	if b.o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				fmt.Fprintf(b.o.Progress, "%6.1fs  %s\n", time.Since(start).Seconds(), line(time.Since(start)))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (b *bench) describe() string {
	if b.o.Conn.Connect != "" {
		return b.o.Conn.Connect
	}
	if len(b.sessions) > 0 {
		return b.sessions[0].What
	}
	return "the server"
}

// ---------------------------------------------------------------------------
// pub/sub

type pubsubResult struct {
	Workload     string  `json:"workload"`
	Server       string  `json:"server"`
	Publishers   int     `json:"publishers"`
	Subscribers  int     `json:"subscribers"`
	Size         int     `json:"size"`
	PerTurn      int     `json:"per_turn"`
	Sent         int64   `json:"sent"`
	SendRate     float64 `json:"sent_per_s"`
	Received     int64   `json:"received"`
	Expected     int64   `json:"expected"`
	Seconds      float64 `json:"seconds"`
	MsgPerSec    float64 `json:"msg_per_s"`
	MBPerSec     float64 `json:"mb_per_s"`
	P50us        float64 `json:"p50_us"`
	P90us        float64 `json:"p90_us"`
	P99us        float64 `json:"p99_us"`
	MaxUS        float64 `json:"max_us"`
	latencies    *histogram
	publishTime  time.Duration
	drainTimeout bool
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// subscribers starts o.Subs actors that count the run's messages into
// received, note when the last came (lastNs, since base) and add each
// message's latency to hist.
func (b *bench) subscribers(ctx context.Context, base time.Time, hist *histogram, received, lastNs *atomic.Int64) error {
	o := b.o
	for i := 0; i < o.Subs; i++ {
		_, _, err := b.actor(ctx, fmt.Sprintf("bench-sub-%d", i), func(t *dataspace.Turn, cfg *dataspace.Ref) error {
			p := pattern.Rec(syndicatego.LabelSyndicateBench, pattern.Lit{Value: b.run}, pattern.Capture(), pattern.Discard{})
			t.OnMessage(cfg, p, func(_ *dataspace.Turn, caps []preserves.Value) error {
				now := time.Since(base)
				if ts, ok := caps[0].(preserves.Int); ok {
					hist.add(now - time.Duration(ts))
				}
				received.Add(1)
				lastNs.Store(int64(now))
				return nil
			})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// drain waits until received reaches expected; it gives up (true) when
// the count has not moved for 5 s.
func drain(ctx context.Context, received *atomic.Int64, expected int64) (timedOut bool) {
	last, lastChange := received.Load(), time.Now()
	for received.Load() < expected && ctx.Err() == nil {
		if r := received.Load(); r != last {
			last, lastChange = r, time.Now()
		} else if time.Since(lastChange) > 5*time.Second {
			return true
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, not synchronising
	}
	return false
}

func (b *bench) pubsub(ctx context.Context) (*pubsubResult, error) {
	o := b.o
	base := time.Now()
	hist := &histogram{}
	var received, lastNs atomic.Int64
	if err := b.subscribers(ctx, base, hist, &received, &lastNs); err != nil {
		return nil, err
	}
	type pub struct {
		s  *session.Session
		fr dataspace.FacetRef
	}
	pubs := make([]pub, o.Pubs)
	for i := range pubs {
		s, fr, err := b.actor(ctx, fmt.Sprintf("bench-pub-%d", i), func(*dataspace.Turn, *dataspace.Ref) error { return nil })
		if err != nil {
			return nil, err
		}
		pubs[i] = pub{s, fr}
	}

	var sent atomic.Int64
	payload := preserves.ByteString(strings.Repeat("x", o.Size))
	pctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var lastReceived int64
	stop := b.progress(func(time.Duration) string {
		s, r := sent.Load(), received.Load()
		line := fmt.Sprintf("sent %s  received %s  (%s msg/s received)", fmtCount(float64(s)), fmtCount(float64(r)), fmtCount(float64(r-lastReceived)))
		lastReceived = r
		return line
	})
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acct := dataspace.NewAccount()
			for pctx.Err() == nil {
				alive, err := p.fr.ActivatePaced(pctx, acct, o.Credit, func(t *dataspace.Turn) error {
					m := preserves.NewRecord(syndicatego.LabelSyndicateBench, b.run, preserves.Int(time.Since(base)), payload)
					for k := 0; k < o.PerTurn; k++ {
						t.Message(p.s.Cfg, m)
					}
					sent.Add(int64(o.PerTurn))
					return nil
				})
				if !alive || err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	publishTime := time.Since(start)
	// Everything sent has reached the server once each publisher's sync
	// is back; then wait for the subscribers to have it all.
	for _, p := range pubs {
		if err := p.s.Flush(ctx, p.fr); err != nil {
			stop()
			return nil, err
		}
	}
	expected := sent.Load() * int64(o.Subs)
	timedOut := drain(ctx, &received, expected)
	stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r := &pubsubResult{
		Workload: "pubsub", Server: b.describe(), Publishers: o.Pubs, Subscribers: o.Subs, Size: o.Size, PerTurn: o.PerTurn,
		Sent: sent.Load(), Received: received.Load(), Expected: expected,
		latencies: hist, publishTime: publishTime, drainTimeout: timedOut,
	}
	r.SendRate = float64(r.Sent) / publishTime.Seconds()
	elapsed := time.Duration(lastNs.Load()) - start.Sub(base)
	if o.Subs == 0 || r.Received == 0 {
		elapsed = publishTime
	}
	r.Seconds = elapsed.Seconds()
	if r.Received > 0 {
		r.MsgPerSec = float64(r.Received) / elapsed.Seconds()
		r.MBPerSec = r.MsgPerSec * float64(o.Size) / 1e6
	}
	r.P50us, r.P90us, r.P99us, r.MaxUS = us(hist.quantile(.5)), us(hist.quantile(.9)), us(hist.quantile(.99)), us(hist.quantile(1))
	return r, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (r *pubsubResult) Text(w io.Writer) {
	fmt.Fprintf(w, "pub/sub via %s: %s, %s, %d-byte payload, %d per turn\n", r.Server,
		plural(r.Publishers, "publisher", "publishers"), plural(r.Subscribers, "subscriber", "subscribers"), r.Size, r.PerTurn)
	fmt.Fprintf(w, "  sent      %12d msgs in %.2fs  %s msg/s\n", r.Sent, r.publishTime.Seconds(), fmtCount(r.SendRate))
	if r.Subscribers == 0 {
		return
	}
	fmt.Fprintf(w, "  received  %12d msgs in %.2fs  %s msg/s  %s MB/s\n", r.Received, r.Seconds, fmtCount(r.MsgPerSec), trim3(r.MBPerSec))
	if r.Received != r.Expected {
		why := ""
		if r.drainTimeout {
			why = " (nothing arrived for 5 s)"
		}
		fmt.Fprintf(w, "  MISSING   %12d of %d expected%s\n", r.Expected-r.Received, r.Expected, why)
	}
	h := r.latencies
	fmt.Fprintf(w, "  latency   p50 %s  p90 %s  p99 %s  max %s (publish to delivery)\n",
		fmtLatency(h.quantile(.5)), fmtLatency(h.quantile(.9)), fmtLatency(h.quantile(.99)), fmtLatency(h.quantile(1)))
}

// ---------------------------------------------------------------------------
// request/reply

type reqrepResult struct {
	Workload   string  `json:"workload"`
	Server     string  `json:"server"`
	Size       int     `json:"size"`
	RoundTrips int     `json:"round_trips"`
	Warmup     int     `json:"warmup"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"round_trips_per_s"`
	P50us      float64 `json:"p50_us"`
	P90us      float64 `json:"p90_us"`
	P99us      float64 `json:"p99_us"`
	MaxUS      float64 `json:"max_us"`
	hist       *histogram
}

func (b *bench) reqrep(ctx context.Context) (*reqrepResult, error) {
	o := b.o
	rs, _, err := b.actor(ctx, "bench-responder", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		p := pattern.Rec(syndicatego.LabelSyndicateBenchRequest, pattern.Lit{Value: b.run}, pattern.Capture(), pattern.Capture())
		t.OnMessage(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Message(cfg, preserves.NewRecord(syndicatego.LabelSyndicateBenchReply, b.run, caps[0], caps[1]))
			return nil
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	total := o.Warmup + o.N
	payload := preserves.ByteString(strings.Repeat("x", o.Size))
	hist := &histogram{}
	var done atomic.Int64
	finished := make(chan struct{})
	var sentAt time.Time
	var measureStart time.Time
	var measured time.Duration
	request := func(t *dataspace.Turn, cfg *dataspace.Ref, seq int) {
		if seq == o.Warmup {
			measureStart = time.Now()
		}
		sentAt = time.Now()
		t.Message(cfg, preserves.NewRecord(syndicatego.LabelSyndicateBenchRequest, b.run, preserves.Int(seq), payload))
	}
	qs, qfr, err := b.actor(ctx, "bench-requester", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		p := pattern.Rec(syndicatego.LabelSyndicateBenchReply, pattern.Lit{Value: b.run}, pattern.Capture(), pattern.Discard{})
		t.OnMessage(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			rtt := time.Since(sentAt)
			seq, ok := caps[0].(preserves.Int)
			if !ok || int64(seq) != done.Load() {
				return nil // not the reply to the request in flight
			}
			if int(seq) >= o.Warmup {
				hist.add(rtt)
			}
			if n := done.Add(1); int(n) < total {
				request(t, cfg, int(n))
			} else {
				measured = time.Since(measureStart)
				close(finished)
			}
			return nil
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	stop := b.progress(func(time.Duration) string {
		return fmt.Sprintf("%d of %d round trips", done.Load(), total)
	})
	qfr.Activate(func(t *dataspace.Turn) error { request(t, qs.Cfg, 0); return nil })
	err = qs.Wait(ctx, finished)
	if err == nil {
		err = rs.Err()
	}
	stop()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r := &reqrepResult{Workload: "reqrep", Server: b.describe(), Size: o.Size, RoundTrips: o.N, Warmup: o.Warmup,
		Seconds: measured.Seconds(), hist: hist}
	r.PerSec = float64(o.N) / measured.Seconds()
	r.P50us, r.P90us, r.P99us, r.MaxUS = us(hist.quantile(.5)), us(hist.quantile(.9)), us(hist.quantile(.99)), us(hist.quantile(1))
	return r, nil
}

func (r *reqrepResult) Text(w io.Writer) {
	h := r.hist
	fmt.Fprintf(w, "request/reply via %s: %d round trips (after %d warm-up), %d-byte payload, one in flight\n", r.Server, r.RoundTrips, r.Warmup, r.Size)
	fmt.Fprintf(w, "  %s round trips/s over %.2fs\n", fmtCount(r.PerSec), r.Seconds)
	fmt.Fprintf(w, "  latency   p50 %s  p90 %s  p99 %s  max %s (client → server → responder → server → client)\n",
		fmtLatency(h.quantile(.5)), fmtLatency(h.quantile(.9)), fmtLatency(h.quantile(.99)), fmtLatency(h.quantile(1)))
	h.write(w)
}

// ---------------------------------------------------------------------------
// idle sessions

type idleResult struct {
	Workload   string  `json:"workload"`
	Server     string  `json:"server"`
	Sessions   int     `json:"sessions"`
	PID        int     `json:"server_pid,omitempty"`
	RSSBefore  int64   `json:"rss_before_kb,omitempty"`
	RSSAfter   int64   `json:"rss_after_kb,omitempty"`
	PSSBefore  int64   `json:"pss_before_kb,omitempty"`
	PSSAfter   int64   `json:"pss_after_kb,omitempty"`
	PerSession float64 `json:"rss_per_session_kb,omitempty"`
	PSSPerSess float64 `json:"pss_per_session_kb,omitempty"`
	OpenSecs   float64 `json:"open_seconds"`
}

func (b *bench) idle(ctx context.Context) (*idleResult, error) {
	o := b.o
	first, err := b.open(ctx)
	if err != nil {
		return nil, err
	}
	pid := o.ServerPID
	if pid == 0 {
		pid = first.PID
	}
	if pid == 0 {
		pid = serverPIDByAddress(b.o.Conn.Connect)
	}
	r := &idleResult{Workload: "idle", Server: b.describe(), Sessions: o.Sessions, PID: pid}
	if pid != 0 {
		r.RSSBefore, r.PSSBefore = memoryOf(pid)
	}
	var opened atomic.Int64
	opened.Store(1)
	stop := b.progress(func(time.Duration) string {
		return fmt.Sprintf("%d of %d sessions open", opened.Load(), o.Sessions)
	})
	start := time.Now()
	for i := 1; i < o.Sessions; i++ {
		if _, err := b.open(ctx); err != nil {
			stop()
			return nil, fmt.Errorf("session %d: %w", i+1, err)
		}
		opened.Add(1)
	}
	r.OpenSecs = time.Since(start).Seconds()
	stop()
	if r.PID == 0 {
		return r, nil
	}
	select {
	case <-time.After(o.Settle): // let the server's heap settle before reading it
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.RSSAfter, r.PSSAfter = memoryOf(pid)
	if r.RSSAfter > 0 {
		// The first session was open for the "before" reading.
		n := float64(o.Sessions - 1)
		if n > 0 {
			r.PerSession = float64(r.RSSAfter-r.RSSBefore) / n
			r.PSSPerSess = float64(r.PSSAfter-r.PSSBefore) / n
		}
	}
	return r, nil
}

func (r *idleResult) Text(w io.Writer) {
	fmt.Fprintf(w, "idle sessions via %s: %d open (in %.2fs)\n", r.Server, r.Sessions, r.OpenSecs)
	if r.PID == 0 || r.RSSAfter == 0 {
		fmt.Fprintf(w, "  server memory unknown: not a local server found from the connection (give --server-pid)\n")
		return
	}
	fmt.Fprintf(w, "  server pid %d  RSS %d → %d kB  PSS %d → %d kB\n", r.PID, r.RSSBefore, r.RSSAfter, r.PSSBefore, r.PSSAfter)
	fmt.Fprintf(w, "  per session: RSS %.1f kB  PSS %.1f kB\n", r.PerSession, r.PSSPerSess)
}

// memoryOf reads a process's resident (VmRSS) and proportional (Pss)
// memory in kB; a figure it cannot read is 0.
func memoryOf(pid int) (rss, pss int64) {
	read := func(file, key string) int64 {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), file))
		if err != nil {
			return 0
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				return n
			}
		}
		return 0
	}
	return read("status", "VmRSS:"), read("smaps_rollup", "Pss:")
}

// serverPIDByAddress finds the process listening on a local address: a
// Unix socket's peer credentials, or, for loopback TCP, the socket's inode
// in /proc/net/tcp and then the process holding it; 0 if it is not local
// or cannot be told.
func serverPIDByAddress(connect string) int {
	if connect == "" {
		return 0
	}
	a, err := transport.ParseString(connect)
	if err != nil {
		return 0
	}
	if a.Network == transport.Unix {
		c, err := net.Dial("unix", a.Path)
		if err != nil {
			return 0
		}
		defer c.Close()
		pid, _ := admin.PeerPID(c.(*net.UnixConn))
		return pid
	}
	ip := net.ParseIP(a.Host)
	if a.Host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if a.Network != transport.TCP || ip == nil || !ip.IsLoopback() && !ip.IsUnspecified() {
		return 0
	}
	inode := listeningInode(a.Port)
	if inode == "" {
		return 0
	}
	procs, _ := os.ReadDir("/proc")
	want := "socket:[" + inode + "]"
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); l == want {
				return pid
			}
		}
	}
	return 0
}

// listeningInode finds the inode of a socket listening on port in
// /proc/net/tcp or tcp6.
func listeningInode(port int) string {
	hexPort := fmt.Sprintf(":%04X", port)
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			// sl local rem st ... inode (field 9); 0A is LISTEN.
			if len(fs) > 9 && strings.HasSuffix(fs[1], hexPort) && fs[3] == "0A" {
				f.Close()
				return fs[9]
			}
		}
		f.Close()
	}
	return ""
}
