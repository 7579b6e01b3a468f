package main

// The hostile-vocabulary harness (issue 12): a full server in this process,
// fed generated values (preserves/testutil.Hostile) in every position of
// every built-in service's assertions and messages, directly and over
// relay connections to the gatekeeper. After each input:
//
//   - the server lives (its top-level actor runs, no built-in service
//     crashed: no `service worker failed` record names a `<builtin …>`);
//   - a canary keeps working: the dependency tracker starts a milestone,
//     and the gatekeeper resolves a sturdy ref;
//   - once the input's assertions are withdrawn, goroutines and file
//     descriptors return to their baseline.
//
// TestHostileVocabularySeeded is the bounded run of every `go test`;
// FuzzHostileVocabulary and FuzzWireGatekeeper run on demand:
//
//	go test -run '^$' -fuzz FuzzHostileVocabulary -parallel 1 ./cmd/syndicate-server/
//	go test -run '^$' -fuzz FuzzWireGatekeeper -parallel 1 ./cmd/syndicate-server/

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/idleread"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// debugHarness copies the server's whole log to stderr
// (HOSTILE_DEBUG=1).
var debugHarness = os.Getenv("HOSTILE_DEBUG") != ""

// failureLog keeps the log records that matter to the harness: errors and
// the start-up line (warnings too, once keepWarnings is called).
// Everything else is dropped, so a long fuzzing run does not accumulate the
// server's chatter; only the longest record's length is kept of it.
type failureLog struct {
	mu       sync.Mutex
	lines    []string
	warnings bool
	longest  int    // bytes in the longest record written
	head     string // the start of that record
}

func (l *failureLog) keepWarnings() {
	l.mu.Lock()
	l.warnings = true
	l.mu.Unlock()
}

// longestRecord returns the length and the start of the longest record.
func (l *failureLog) longestRecord() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.longest, l.head
}

func (l *failureLog) Write(p []byte) (int, error) {
	if debugHarness {
		os.Stderr.Write(p)
	}
	l.mu.Lock()
	if len(p) > l.longest {
		l.longest, l.head = len(p), string(p[:min(len(p), 300)])
	}
	warnings := l.warnings
	l.mu.Unlock()
	s := string(p)
	if strings.Contains(s, `"level":"error"`) || strings.Contains(s, "server running") ||
		warnings && strings.Contains(s, `"level":"warn"`) ||
		strings.Contains(s, `"message":"processed"`) || strings.Contains(s, `"message":"removed"`) {
		l.mu.Lock()
		if len(l.lines) < 1000 {
			l.lines = append(l.lines, s)
		}
		l.mu.Unlock()
	}
	return len(p), nil
}

func (l *failureLog) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}

// crashes returns the records of built-in services that crashed.
func (l *failureLog) crashes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if strings.Contains(x, "service worker failed") && strings.Contains(x, `"service":"<builtin `) {
			out = append(out, x)
		}
	}
	return out
}

// inproc is a full server running in the test process.
type inproc struct {
	s      *server
	dir    string
	sock   string // a relay listener (Unix socket), gatekeeper at oid 0
	log    *failureLog
	driver dataspace.FacetRef
	sink   *dataspace.Ref // an inert entity generated values may embed
	canary int64
	key    []byte

	baseGoroutines, baseFDs int
}

// startInproc runs a server on an empty config directory with a relay
// socket and $control, daemons in dry-run mode (generated daemon specs
// never start a program), and records the idle baseline.
func startInproc(tb testing.TB, configure ...func(*server)) *inproc {
	tb.Helper()
	dir, err := os.MkdirTemp("", "syndicate-hostile")
	if err != nil {
		tb.Fatal(err)
	}
	h := &inproc{dir: dir, sock: filepath.Join(dir, "relay.sock"), log: &failureLog{}, key: []byte("canary key")}
	for _, d := range []string{"config", "empty"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	o := &options{configs: []string{filepath.Join(dir, "config")}, sockets: []transport.Address{transport.UnixAddr(h.sock)}, control: true, noBanner: true, adminSocket: "-"}
	logger := zerolog.New(h.log).Level(zerolog.InfoLevel)
	h.s = newServer(o, logger, io.Discard)
	h.s.daemonDryRun = true
	h.s.superviseOpts = services.SuperviseOptions{Delay: 5 * time.Millisecond, Backoff: 20 * time.Millisecond}
	for _, c := range configure {
		c(h.s)
	}
	h.s.start(dataspace.Options{Logger: logger})
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.s.sys.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		os.RemoveAll(dir)
	})
	testutil.WaitFor(tb, "server running", func() bool { return h.log.has("server running") })
	ready := make(chan struct{})
	h.s.sys.Spawn("harness", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		h.driver = t.FacetRef()
		h.sink = t.Create(dataspacetest.NewRecorder())
		// The canary's bind: a sturdy ref "canary" to the sink.
		t.Assert(h.s.env.Config, preserves.NewRecord(preserves.Symbol("bind"),
			preserves.NewRecord(preserves.Symbol("ref"), preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("canary")},
				preserves.DictEntry{Key: preserves.Symbol("key"), Value: preserves.ByteStringFrom(h.key)},
			)), dataspace.Embed(h.sink), preserves.Bool(false)))
		close(ready)
		return nil
	})
	<-ready
	h.checkCanary(tb)
	// The relay socket is listening once it accepts.
	testutil.WaitFor(tb, "the relay socket", func() bool {
		c, err := net.Dial("unix", h.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	h.settleBaseline(tb)
	return h
}

// settleBaseline records the idle goroutine and descriptor counts once they
// have stopped falling.
func (h *inproc) settleBaseline(tb testing.TB) {
	prev := -1
	for i := 0; i < 200; i++ {
		g := runtime.NumGoroutine()
		if g == prev {
			break
		}
		prev = g
		time.Sleep(10 * time.Millisecond)
	}
	h.baseGoroutines, h.baseFDs = runtime.NumGoroutine(), openFDs(tb)
}

func openFDs(tb testing.TB) int {
	_ = idleread.OpenPoller() // opened once for the process's life, not leaked
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0 // not Linux: descriptors are not checked
	}
	return len(es)
}

// checkCanary: the dependency tracker starts a fresh milestone, and the
// gatekeeper resolves the canary's sturdy ref.
func (h *inproc) checkCanary(tb testing.TB) {
	tb.Helper()
	n := atomic.AddInt64(&h.canary, 1)
	name := preserves.NewRecord(preserves.Symbol("milestone"), preserves.String(fmt.Sprintf("canary-%d", n)))
	states, answer := dataspacetest.NewRecorder(), dataspacetest.NewRecorder()
	var fid dataspace.FacetID
	if !h.driver.Activate(func(t *dataspace.Turn) error {
		fid, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			obs := t.Create(states)
			t.Assert(h.s.env.Config, dataspace.Observe(pattern.Rec(service.LabelServiceState, pattern.MustLift(name), pattern.MustLift(services.StateReady)), obs))
			t.Assert(h.s.env.Config, services.RequireService(name))
			sr := caveat.Mint(preserves.String("canary"), h.key)
			t.Assert(h.s.env.Gatekeeper, preserves.NewRecord(preserves.Symbol("resolve"), sr.ToValue(), dataspace.Embed(t.Create(answer))))
			return nil
		})
		return nil
	}) {
		tb.Fatal("the harness actor is gone")
	}
	testutil.WaitFor(tb, "the canary milestone ready", func() bool { return states.Find(func(preserves.Value) bool { return true }) })
	testutil.WaitFor(tb, "the canary sturdy ref resolved", func() bool {
		return answer.Find(func(v preserves.Value) bool {
			r, ok := preserves.Unwrap(v).(*preserves.Record)
			return ok && r.Label == preserves.Symbol("ok")
		})
	})
	h.driver.Activate(func(t *dataspace.Turn) error { t.StopFacet(fid); return nil })
}

// checkAlive fails the test if the server's top-level actor ended or a
// built-in service crashed.
func (h *inproc) checkAlive(tb testing.TB, input string) {
	tb.Helper()
	if st := h.s.top.Status(); st != dataspace.Running {
		tb.Fatalf("the server stopped (%v: %v) after %s", st, h.s.top.Err(), input)
	}
	if cs := h.log.crashes(); len(cs) > 0 {
		tb.Fatalf("a built-in service crashed after %s:\n%s", input, strings.Join(cs, ""))
	}
}

// checkBaseline waits until goroutines and descriptors are back to the
// idle baseline.
func (h *inproc) checkBaseline(tb testing.TB, input string) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, fds := runtime.NumGoroutine(), openFDs(tb)
		if g <= h.baseGoroutines && fds <= h.baseFDs {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			tb.Fatalf("after %s: %d goroutines (baseline %d), %d descriptors (baseline %d)\n%s",
				input, g, h.baseGoroutines, fds, h.baseFDs, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// roundTrips waits until the config dataspace, the log dataspace and the
// gatekeeper have handled everything the driver sent, twice over (so the
// services had a turn to react).
func (h *inproc) roundTrips(tb testing.TB) {
	tb.Helper()
	for i := 0; i < 2; i++ {
		for _, r := range []*dataspace.Ref{h.s.env.Config, h.s.env.Log, h.s.env.Gatekeeper} {
			done := make(chan struct{})
			h.driver.Activate(func(t *dataspace.Turn) error {
				t.Sync(r, func(*dataspace.Turn) error { close(done); return nil })
				return nil
			})
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				tb.Fatal("a sync did not come back")
			}
		}
	}
}

// act is one assertion or message of a hostile input.
type act struct {
	to  *dataspace.Ref
	msg bool
	v   preserves.Value
}

func (a act) String() string {
	kind := "assert"
	if a.msg {
		kind = "send"
	}
	return kind + " " + preserves.FormatTextLimit(a.v, 300)
}

func rec(label string, fields ...preserves.Value) preserves.Value {
	return preserves.NewRecord(preserves.Symbol(label), fields...)
}

// noInt replaces an integer (a port) by p: generated ports must not reach
// other programs on this machine.
func noInt(v preserves.Value, p int64) preserves.Value {
	switch preserves.Unwrap(v).(type) {
	case preserves.Int, *preserves.BigInt:
		return preserves.Int(p)
	}
	return v
}

// templates put a generated value (g.Value()) into each position of each
// built-in service's vocabulary. Positions that reach outside the process
// are sanitised: listeners bind only in the temporary directory or on
// 127.0.0.1 port 0, transports dial only 127.0.0.1 port 1 (closed),
// config watchers watch only an empty directory, daemons run dry.
func (h *inproc) templates() []func(g *testutil.Hostile) act {
	return append(h.localTemplates(), h.peerTemplates()...)
}

// hostileValue, hostileAssert, hostileSend and hostileLoopback are the
// templates' shorthands: a generated value, an assertion or message to
// a dataspace, a TCP address on 127.0.0.1.
func hostileValue(g *testutil.Hostile) preserves.Value { return g.Value() }

func hostileAssert(to *dataspace.Ref, v preserves.Value) act { return act{to: to, v: v} }

func hostileSend(to *dataspace.Ref, v preserves.Value) act { return act{to: to, msg: true, v: v} }

func hostileLoopback(port preserves.Value) preserves.Value {
	return rec("tcp", preserves.String("127.0.0.1"), port)
}

// localTemplates are the templates for anything anywhere, observers,
// the service framework, daemons, config watchers and relay listeners.
func (h *inproc) localTemplates() []func(g *testutil.Hostile) act {
	env := h.s.env
	cfg, gk, logds, ctl := env.Config, env.Gatekeeper, env.Log, env.Control
	x, in, send, loopback := hostileValue, hostileAssert, hostileSend, hostileLoopback
	sink := func() preserves.Value { return dataspace.Embed(h.sink) }
	return []func(g *testutil.Hostile) act{
		// Anything at all, anywhere.
		func(g *testutil.Hostile) act { return in(cfg, x(g)) },
		func(g *testutil.Hostile) act { return send(cfg, x(g)) },
		func(g *testutil.Hostile) act { return in(gk, x(g)) },
		func(g *testutil.Hostile) act { return send(gk, x(g)) },
		func(g *testutil.Hostile) act { return send(logds, x(g)) },
		func(g *testutil.Hostile) act { return in(logds, x(g)) },
		func(g *testutil.Hostile) act { return send(ctl, x(g)) },
		func(g *testutil.Hostile) act { return in(ctl, x(g)) },
		// Observers with hostile patterns, in both dataspaces.
		func(g *testutil.Hostile) act { return in(cfg, rec("Observe", x(g), sink())) },
		func(g *testutil.Hostile) act { return in(cfg, rec("Observe", x(g), x(g))) },
		func(g *testutil.Hostile) act { return in(logds, rec("Observe", x(g), sink())) },
		// The service framework.
		func(g *testutil.Hostile) act { return in(cfg, services.RequireService(x(g))) },
		func(g *testutil.Hostile) act { return in(cfg, services.RunService(x(g))) },
		func(g *testutil.Hostile) act { return in(cfg, services.DependsOn(x(g), x(g))) },
		func(g *testutil.Hostile) act {
			return in(cfg, services.DependsOn(x(g), services.ServiceState(x(g), x(g))))
		},
		func(g *testutil.Hostile) act { return in(cfg, services.ServiceState(x(g), x(g))) },
		func(g *testutil.Hostile) act { return send(cfg, services.RestartService(x(g))) },
		func(g *testutil.Hostile) act { return in(cfg, services.RunService(rec("milestone", x(g)))) },
		func(g *testutil.Hostile) act { return in(cfg, services.ServiceObject(x(g), x(g))) },
		// Daemons (dry run).
		func(g *testutil.Hostile) act { return in(cfg, services.RunService(rec("daemon", x(g)))) },
		func(g *testutil.Hostile) act { return in(cfg, rec("daemon", x(g), x(g))) },
		func(g *testutil.Hostile) act {
			id := x(g)
			return in(cfg, rec("daemon", id, x(g), services.RequireService(rec("daemon", id))))
		},
		// Config watchers, on an empty directory.
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("config-watcher", preserves.String(filepath.Join(h.dir, "empty")), x(g))))
		},
		func(g *testutil.Hostile) act { return send(cfg, rec("config-rescan", x(g))) },
		// Relay listeners.
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("relay-listener", rec("unix", preserves.String(filepath.Join(h.dir, "l.sock"))), x(g))))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("relay-listener", loopback(preserves.Int(0)), x(g))))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("relay-listener", loopback(noInt(x(g), 0)), dataspace.Embed(gk), x(g))))
		},
	}
}

// peerTemplates are the templates for the gatekeeper, client-side
// resolution, HTTP, the debt reporter, the log and control.
func (h *inproc) peerTemplates() []func(g *testutil.Hostile) act {
	env := h.s.env
	cfg, gk, logds, ctl := env.Config, env.Gatekeeper, env.Log, env.Control
	x, in, send, loopback := hostileValue, hostileAssert, hostileSend, hostileLoopback
	sink := func() preserves.Value { return dataspace.Embed(h.sink) }
	return []func(g *testutil.Hostile) act{
		// The gatekeeper: resolve and bind steps.
		func(g *testutil.Hostile) act { return in(gk, rec("resolve", x(g), sink())) },
		func(g *testutil.Hostile) act { return in(gk, rec("resolve", x(g), x(g))) },
		func(g *testutil.Hostile) act { return in(gk, rec("resolve", rec("ref", x(g)), sink())) },
		func(g *testutil.Hostile) act { return in(gk, rec("resolve", rec("noise", x(g)), sink())) },
		func(g *testutil.Hostile) act {
			return in(gk, rec("resolve", rec("ref", preserves.Dict(preserves.Symbol("oid"), x(g), preserves.Symbol("sig"), x(g), preserves.Symbol("caveats"), x(g))), sink()))
		},
		func(g *testutil.Hostile) act {
			sr := caveat.Mint(preserves.String("canary"), h.key).ToValue().(*preserves.Record)
			d := preserves.Unwrap(sr.Fields[0]).(*preserves.Dictionary)
			sig, _ := d.Get(preserves.Symbol("sig"))
			return in(gk, rec("resolve", rec("ref", preserves.Dict(preserves.Symbol("oid"), preserves.String("canary"), preserves.Symbol("sig"), sig, preserves.Symbol("caveats"), preserves.Sequence{x(g)})), sink()))
		},
		func(g *testutil.Hostile) act { return in(cfg, rec("bind", x(g), x(g), x(g))) },
		func(g *testutil.Hostile) act {
			return in(cfg, rec("bind", rec("ref", preserves.Dict(preserves.Symbol("oid"), x(g), preserves.Symbol("key"), x(g))), x(g), x(g)))
		},
		func(g *testutil.Hostile) act {
			// A well-formed bind with an observer, but for its oid.
			return in(cfg, rec("bind", rec("ref", preserves.Dict(preserves.Symbol("oid"), preserves.Sequence{x(g), sink()}, preserves.Symbol("key"), preserves.ByteString("k"))), sink(), sink()))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, rec("bind", rec("ref", preserves.Dict(preserves.Symbol("oid"), x(g), preserves.Symbol("key"), preserves.ByteString("k"))), sink(), sink()))
		},
		func(g *testutil.Hostile) act { return in(cfg, rec("bind", rec("noise", x(g)), sink(), sink())) },
		func(g *testutil.Hostile) act {
			return in(cfg, rec("bind", rec("noise", preserves.Dict(preserves.Symbol("service"), x(g), preserves.Symbol("key"), x(g), preserves.Symbol("secretKey"), x(g), preserves.Symbol("protocol"), x(g))), sink(), sink()))
		},
		func(g *testutil.Hostile) act { return in(cfg, services.RunService(rec("gatekeeper", x(g)))) },
		// Client-side resolution.
		func(g *testutil.Hostile) act { return in(cfg, rec("q", x(g))) },
		func(g *testutil.Hostile) act { return in(cfg, rec("q", rec("connect-transport", x(g)))) },
		func(g *testutil.Hostile) act {
			return in(cfg, rec("q", rec("connect-transport", loopback(noInt(x(g), 1)))))
		},
		func(g *testutil.Hostile) act { return in(cfg, rec("q", rec("resolve-path", x(g)))) },
		func(g *testutil.Hostile) act { return in(cfg, rec("q", rec("resolve-path", rec("route", x(g), x(g))))) },
		func(g *testutil.Hostile) act {
			return in(cfg, rec("q", rec("resolve-path", rec("route", preserves.Sequence{loopback(preserves.Int(1))}, x(g)))))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, rec("q", rec("resolve-path", rec("route", preserves.Sequence{x(g)}))))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, rec("q", rec("resolve-path-step", dataspace.Embed(gk), rec("ref", x(g)))))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, rec("q", rec("resolve-path-step", dataspace.Embed(gk), rec("noise", x(g)))))
		},
		func(g *testutil.Hostile) act { return in(cfg, rec("q", rec("resolve-path-step", x(g), x(g)))) },
		// HTTP.
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("http-router", x(g))))
		},
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("http-router", dataspace.Embed(cfg))))
		},
		func(g *testutil.Hostile) act { return in(cfg, rec("http-bind", x(g), x(g), x(g), x(g), x(g))) },
		func(g *testutil.Hostile) act {
			return in(cfg, rec("http-bind", preserves.Bool(false), preserves.Int(0), x(g), preserves.Sequence{x(g)}, sink()))
		},
		func(g *testutil.Hostile) act { return in(cfg, rec("http-listener", x(g))) },
		func(g *testutil.Hostile) act {
			return in(cfg, services.RunService(rec("http-static-files", x(g), x(g))))
		},
		// The debt reporter.
		func(g *testutil.Hostile) act { return in(cfg, services.RunService(rec("debt-reporter", x(g)))) },
		// The log.
		func(g *testutil.Hostile) act { return send(logds, rec("log", x(g), x(g))) },
		func(g *testutil.Hostile) act {
			return send(logds, rec("log", preserves.String("-"), preserves.Dict(preserves.Symbol("line"), x(g), x(g), x(g))))
		},
		// Control.
		func(g *testutil.Hostile) act { return send(ctl, rec("exit", x(g))) },
	}
}

// runInput performs one hostile input (its acts in one facet of the
// harness actor), checks the invariants, withdraws it and checks the
// baseline.
func (h *inproc) runInput(tb testing.TB, g *testutil.Hostile, maxActs int) {
	tb.Helper()
	ts := h.templates()
	g.Embed = func() preserves.Value {
		refs := []*dataspace.Ref{h.sink, h.s.env.Config, h.s.env.Log, h.s.env.Gatekeeper, h.s.env.Control}
		return dataspace.Embed(refs[g.Intn(len(refs))])
	}
	n := 1 + g.Intn(maxActs)
	acts := make([]act, 0, n)
	for i := 0; i < n; i++ {
		acts = append(acts, ts[g.Intn(len(ts))](g))
		if g.Exhausted() {
			break
		}
	}
	var desc strings.Builder
	for _, a := range acts {
		desc.WriteString("\n  " + a.String())
	}
	input := desc.String()
	var fid dataspace.FacetID
	h.driver.Activate(func(t *dataspace.Turn) error {
		fid, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			for _, a := range acts {
				if a.msg {
					t.Message(a.to, a.v)
				} else {
					t.Assert(a.to, a.v)
				}
			}
			return nil
		})
		return nil
	})
	h.roundTrips(tb)
	h.checkAlive(tb, input)
	h.checkCanary(tb)
	h.driver.Activate(func(t *dataspace.Turn) error { t.StopFacet(fid); return nil })
	h.roundTrips(tb)
	h.checkAlive(tb, input)
	h.checkBaseline(tb, input)
}

// TestHostileVocabularySeeded is the bounded run: a fixed set of seeds,
// each a few generated acts, against one in-process server.
func TestHostileVocabularySeeded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a full server")
	}
	h := startInproc(t)
	for seed := uint64(1); seed <= 60; seed++ {
		h.runInput(t, testutil.NewHostileSeeded(seed), 8)
	}
	// Every template at least once, each with a set in its first hole.
	for i := range h.templates() {
		g := testutil.NewHostile([]byte{0, byte(i), 12, 1, 0})
		h.runInput(t, g, 1)
	}
}

// TestIssue12Script: the one-line script of issue 12 in a watched
// directory no longer ends the server; the route is answered with an error.
func TestIssue12Script(t *testing.T) {
	h := startInproc(t)
	answer := dataspacetest.NewRecorder()
	req := rec("resolve-path", rec("route", preserves.Sequence{preserves.NewSet(preserves.Int(1))}))
	h.driver.Activate(func(t *dataspace.Turn) error {
		// (A set cannot be a literal pattern: capture both and compare.)
		t.Assert(h.s.env.Config, dataspace.Observe(pattern.Rec(preserves.Symbol("a"), pattern.Capture(), pattern.Capture()), t.Create(answer)))
		return nil
	})
	script := filepath.Join(h.dir, "config", "hostile.pr")
	if err := os.WriteFile(script, []byte("<q <resolve-path <route [#{1}]>>>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "an error answer", func() bool {
		return answer.Find(func(v preserves.Value) bool {
			caps, _ := preserves.Unwrap(v).(preserves.Sequence)
			if len(caps) != 2 || !preserves.Equal(caps[0], req) {
				return false
			}
			r, ok := preserves.Unwrap(caps[1]).(*preserves.Record)
			return ok && r.Label == preserves.Symbol("error")
		})
	})
	h.checkAlive(t, "the issue 12 script")
	h.checkCanary(t)
}

// scriptTemplates put a generated value's text into the vocabulary as a
// script says it.
var scriptTemplates = []string{
	`<q <resolve-path <route [%[1]s] %[2]s>>>`,
	`<q <resolve-path <route %[1]s>>>`,
	`<q <resolve-path <route [<tcp "127.0.0.1" 1>] <ref {oid: %[1]s sig: %[2]s}>>>>`,
	`<require-service %[1]s>`,
	`<depends-on %[1]s %[2]s>`,
	`<depends-on <milestone x> <service-state %[1]s ready>>`,
	`$log ! <log "-" {line: %[1]s}>`,
	`$log ! <log %[1]s %[2]s>`,
	`$gatekeeper <resolve <ref %[1]s> $config>`,
	`$gatekeeper <resolve <noise %[1]s> $config>`,
	`$gatekeeper <resolve %[1]s $config>`,
	`<bind <ref {oid: %[1]s key: #"k"}> $config #f>`,
	`<bind <noise {service: %[1]s}> $config #f>`,
	`<run-service <milestone %[1]s>>`,
	`<run-service <gatekeeper %[1]s>>`,
	`<http-bind #f 0 get [%[1]s] $config>`,
	`? <hostile-input ?x> [ <echo $x %[1]s> ]`,
	`<hostile-input %[1]s>`,
	`%[1]s`,
	`$config ! %[1]s`,
	`$control ! <exit %[1]s>`,
	`$config += %[1]s`,
}

// TestHostileScripts: generated values in scripts of a watched directory.
// Each script either does not compile (logged) or runs; either way the
// server lives, the canary works, and removing the script returns the
// server to its baseline.
func TestHostileScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a full server")
	}
	h := startInproc(t)
	for seed := uint64(1); seed <= 30; seed++ {
		g := testutil.NewHostileSeeded(seed)
		g.Embed = func() preserves.Value { return preserves.String("embedded") }
		text := func() string { return preserves.FormatText(preserves.Strip(g.Value())) }
		var src strings.Builder
		for i := 0; i < 4; i++ {
			fmt.Fprintf(&src, scriptTemplates[g.Intn(len(scriptTemplates))]+"\n", text(), text())
		}
		path := filepath.Join(h.dir, "config", fmt.Sprintf("hostile-%d.pr", seed))
		if err := os.WriteFile(path, []byte(src.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		input := path + ":\n" + src.String()
		quoted := strings.Trim(preserves.FormatText(preserves.String(path)), `"`)
		testutil.WaitFor(t, "the script handled", func() bool {
			return h.log.has(`"path":"`+quoted+`","message":"processed"`) || h.log.has(quoted+":")
		})
		h.roundTrips(t)
		h.checkAlive(t, input)
		h.checkCanary(t)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if h.log.has(`"path":"` + quoted + `","message":"processed"`) {
			testutil.WaitFor(t, "the script removed", func() bool { return h.log.has(`"path":"` + quoted + `","message":"removed"`) })
		}
		h.roundTrips(t)
		h.checkAlive(t, input)
		h.checkBaseline(t, input)
	}
}

// FuzzHostileVocabulary drives the templates with fuzz input.
func FuzzHostileVocabulary(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x01\x0c\x0c", "\x02\x1f\x0c\x04", "\x05\x20\x0f\x03", "\x08\x24\x02\x04"} {
		f.Add([]byte(s))
	}
	h := startInproc(f) // one server for the whole run
	var rebase sync.Once
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fuzz target runs in goroutines of its own: count them in.
		rebase.Do(func() { h.settleBaseline(t) })
		h.runInput(t, testutil.NewHostile(data), 6)
	})
}

// wirePacket builds one Turn packet `[[OID EVENT] …]` of generated events
// for the gatekeeper (oid 0) or another oid, in text or binary syntax.
func wirePacket(g *testutil.Hostile) []byte {
	g.Embed = func() preserves.Value {
		// A wire reference: [0 OID] (the peer's export) or [1 OID] (ours).
		return preserves.NewEmbedded(preserves.Sequence{preserves.Int(g.Intn(2)), preserves.Int(g.Intn(4))})
	}
	n := 1 + g.Intn(4)
	turn := make(preserves.Sequence, 0, n)
	for i := 0; i < n; i++ {
		var ev preserves.Value
		step := func() preserves.Value {
			switch g.Intn(4) {
			case 0:
				return rec("noise", g.Value())
			case 1:
				return rec("ref", g.Value())
			case 2:
				return rec("ref", preserves.Dict(preserves.Symbol("oid"), g.Value(), preserves.Symbol("sig"), g.Value()))
			default:
				return g.Value()
			}
		}
		observer := preserves.NewEmbedded(preserves.Sequence{preserves.Int(0), preserves.Int(1 + g.Intn(3))})
		switch g.Intn(6) {
		case 0, 1:
			ev = rec("A", rec("resolve", step(), observer), preserves.Int(g.Intn(8)))
		case 2:
			ev = rec("A", g.Value(), g.Value())
		case 3:
			ev = rec("R", g.Value())
		case 4:
			ev = rec("M", g.Value())
		default:
			ev = rec("S", g.Value())
		}
		oid := preserves.Value(preserves.Int(0))
		if g.Intn(4) == 0 {
			oid = g.Value()
		}
		turn = append(turn, preserves.Sequence{oid, ev})
	}
	if g.Intn(2) == 0 {
		return []byte(preserves.FormatText(turn))
	}
	return preserves.EncodeCanonical(turn)
}

// runWire sends generated packets (or, for inputs starting with 0xff, the
// raw bytes) over one relay connection, closes it, and checks the
// invariants.
func (h *inproc) runWire(tb testing.TB, data []byte) {
	tb.Helper()
	var out bytes.Buffer
	if len(data) > 0 && data[0] == 0xff {
		out.Write(data[1:])
	} else {
		g := testutil.NewHostile(data)
		for i := 0; i < 3 && !(i > 0 && g.Exhausted()); i++ {
			out.Write(wirePacket(g))
		}
	}
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(out.Bytes()); err != nil && !errors.Is(err, io.ErrClosedPipe) && !isConnReset(err) {
		tb.Fatalf("write: %v", err)
	}
	// End our side and read until the server ends its side: it has then
	// read and handled everything.
	c.(*net.UnixConn).CloseWrite()
	io.Copy(io.Discard, c)
	c.Close()
	input := fmt.Sprintf("packet %q", abbreviateBytes(out.Bytes()))
	h.roundTrips(tb)
	h.checkAlive(tb, input)
	h.checkCanary(tb)
	h.checkBaseline(tb, input)
}

func isConnReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

func abbreviateBytes(b []byte) []byte {
	if len(b) > 400 {
		return append(b[:400:400], "…"...)
	}
	return b
}

// TestWireIssue12Packets: the packets of issue 12, from a peer with no
// credentials, no longer end the server.
func TestWireIssue12Packets(t *testing.T) {
	h := startInproc(t)
	for _, p := range []string{
		`[[0 <A <resolve <noise #{1}> #:[0 1]> 0>]]`,
		`[[0 <A <resolve <ref {oid: #{1} sig: #""}> #:[0 1]> 0>]]`,
		`[[0 <A <resolve <ref {oid: #{1} sig: #"" caveats: [<rewrite <bind <_>> <ref 0>>]}> #:[0 1]> 0>]]`,
	} {
		h.runWire(t, append([]byte{0xff}, p...))
	}
}

// FuzzWireGatekeeper drives relay connections to the gatekeeper with
// generated packets.
func FuzzWireGatekeeper(f *testing.F) {
	f.Add(append([]byte{0xff}, `[[0 <A <resolve <noise #{1}> #:[0 1]> 0>]]`...))
	for _, s := range []string{"", "\x00\x00\x00", "\x01\x01\x0c", "\x02\x00\x01\x0d\x0d", "\x03\x05\x09\x09\x09"} {
		f.Add([]byte(s))
	}
	h := startInproc(f) // one server for the whole run
	var rebase sync.Once
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fuzz target runs in goroutines of its own: count them in.
		rebase.Do(func() { h.settleBaseline(t) })
		h.runWire(t, data)
	})
}
