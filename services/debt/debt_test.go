package debt

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

var waitFor = testutil.WaitFor

// logSink collects JSON log lines.
type logSink struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (s *logSink) Write(p []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(p), &m); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.lines = append(s.lines, m)
	s.mu.Unlock()
	return len(p), nil
}

// matching returns the lines with the given level and message.
func (s *logSink) matching(level, msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range s.lines {
		if l["level"] == level && l["message"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// world is an actor system with a config dataspace, the debt service
// booted in it, and a mirror of every service-state assertion.
type world struct {
	sys    *dataspace.System
	driver dataspace.FacetRef
	cfg    *dataspace.Ref
	logs   *logSink

	mu     sync.Mutex
	states map[dataspace.Handle]preserves.Value
}

type stateMirror struct {
	dataspace.BaseEntity
	w *world
}

func (m *stateMirror) Assert(_ *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	m.w.mu.Lock()
	m.w.states[h] = preserves.Unwrap(v).(preserves.Sequence)[0]
	m.w.mu.Unlock()
	return nil
}

func (m *stateMirror) Retract(_ *dataspace.Turn, h dataspace.Handle) error {
	m.w.mu.Lock()
	delete(m.w.states, h)
	m.w.mu.Unlock()
	return nil
}

func newWorld(tb testing.TB) *world {
	tb.Helper()
	base := runtime.NumGoroutine()
	w := &world{sys: dataspace.NewSystem(dataspace.Options{}), logs: &logSink{}, states: map[dataspace.Handle]preserves.Value{}}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.sys.Shutdown(ctx); err != nil {
			tb.Error(err)
		}
		waitFor(tb, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
	})
	ch := make(chan error, 1)
	w.sys.Spawn("world", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		w.driver = t.FacetRef()
		w.cfg = t.Create(dataspace.NewDataspace())
		env := services.Env{Config: w.cfg, Logger: zerolog.New(w.logs)}
		t.Assert(w.cfg, dataspace.Observe(pattern.Bind{Pattern: pattern.Rec(service.LabelServiceState)}, t.Create(&stateMirror{w: w})))
		ch <- Boot(t, env)
		return nil
	})
	if err := <-ch; err != nil {
		tb.Fatal(err)
	}
	return w
}

func (w *world) do(fn func(t *dataspace.Turn)) {
	w.driver.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

// has reports whether <service-state name state> is asserted.
func (w *world) has(name, state preserves.Value) bool {
	want := services.ServiceState(name, state)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.states {
		if preserves.Equal(v, want) {
			return true
		}
	}
	return false
}

func (w *world) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.states)
}

func request(secs preserves.Value) preserves.Value {
	return preserves.NewRecord(internalservices.LabelDebtReporter, secs)
}

const statsMsg = "debt reporter: scheduler statistics"

func TestReporterStatesAndReports(t *testing.T) {
	w := newWorld(t)
	name := request(preserves.NewDouble(0.02))
	var h dataspace.Handle
	w.do(func(t *dataspace.Turn) { h = t.Assert(w.cfg, services.RunService(name)) })
	waitFor(t, "started and ready", func() bool {
		return w.has(name, services.StateStarted) && w.has(name, services.StateReady)
	})
	// Immediately one report, then one per period: wait for three.
	waitFor(t, "three reports", func() bool { return len(w.logs.matching("info", statsMsg)) >= 3 })
	first := w.logs.matching("info", statsMsg)[0]
	if first["service"] != "<debt-reporter 0.02>" {
		t.Fatalf("report not tagged with the service: %v", first)
	}
	// The world actor (hosting the dataspace) and the worker are alive.
	if n, ok := first["actors"].(float64); !ok || n < 2 {
		t.Fatalf("report %v: want at least 2 live actors", first)
	}
	for _, k := range []string{"spawned", "batches", "queued", "backlogged_actors"} {
		if _, ok := first[k].(float64); !ok {
			t.Fatalf("report %v lacks %s", first, k)
		}
	}
	if _, ok := first["batches_per_second"]; ok {
		t.Fatalf("first report %v has a rate (no previous report)", first)
	}
	if _, ok := w.logs.matching("info", statsMsg)[1]["batches_per_second"].(float64); !ok {
		t.Fatal("second report has no rate")
	}

	// Withdrawing the request stops the worker: states vanish, reports stop.
	w.do(func(t *dataspace.Turn) { t.Retract(h) })
	waitFor(t, "the states to vanish", func() bool { return w.count() == 0 })
	n := len(w.logs.matching("info", statsMsg))
	// The worker has terminated once its linked facet's retraction is
	// handled; a tick already past Activate could still log once.
	waitFor(t, "the worker to end", func() bool {
		return w.sys.Stats(0).Actors == 1 // only the world actor is left
	})
	if m := len(w.logs.matching("info", statsMsg)); m > n+1 {
		t.Fatalf("%d reports after the worker stopped", m-n)
	}
}

func TestMalformedRequests(t *testing.T) {
	w := newWorld(t)
	bad := []preserves.Value{
		request(preserves.String("x")),
		request(preserves.Int(1)), // the schema says double
		request(preserves.NewDouble(0)),
		request(preserves.NewDouble(-1)),
		preserves.NewRecord(internalservices.LabelDebtReporter),
		preserves.NewRecord(internalservices.LabelDebtReporter, preserves.NewDouble(1), preserves.NewDouble(2)),
	}
	w.do(func(t *dataspace.Turn) {
		for _, name := range bad {
			t.Assert(w.cfg, services.RunService(name))
		}
	})
	for _, name := range bad {
		waitFor(t, "failed for "+preserves.FormatText(name), func() bool { return w.has(name, services.StateFailed) })
		if w.has(name, services.StateStarted) {
			t.Fatalf("%v is started", name)
		}
	}
	warns := w.logs.matching("warn", "debt reporter: malformed <debt-reporter SECONDS> request (SECONDS must be a positive double)")
	if len(warns) != len(bad) {
		t.Fatalf("%d warnings, want %d", len(warns), len(bad))
	}
	if len(w.logs.matching("info", statsMsg)) != 0 {
		t.Fatal("a malformed request started reporting")
	}
}

// blocker's first message blocks its actor until released, so that later
// batches pile up in the mailbox.
type blocker struct {
	dataspace.BaseEntity
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (b *blocker) Message(*dataspace.Turn, preserves.Value) error {
	b.once.Do(func() {
		close(b.entered)
		<-b.release
	})
	return nil
}

func TestBacklogIsReported(t *testing.T) {
	w := newWorld(t)
	b := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	refs := make(chan *dataspace.Ref, 1)
	w.sys.Spawn("clogged", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		refs <- t.Create(b)
		return nil
	})
	ref := <-refs
	released := false
	defer func() {
		if !released {
			close(b.release)
		}
	}()
	// ActivateNow: the blocked turn must hold a goroutine of its own, not
	// this one (Activate would run it here, a hand-off).
	w.driver.ActivateNow(func(t *dataspace.Turn) error { t.Message(ref, preserves.Int(0)); return nil })
	<-b.entered
	// One turn per message, so one batch each.
	for i := 1; i <= BacklogThreshold+20; i++ {
		w.do(func(t *dataspace.Turn) { t.Message(ref, preserves.Int(int64(i))) })
	}
	w.do(func(t *dataspace.Turn) { t.Assert(w.cfg, services.RunService(request(preserves.NewDouble(0.02)))) })
	waitFor(t, "a backlog line", func() bool {
		for _, l := range w.logs.matching("info", "debt reporter: mailbox backlog") {
			if l["actor"] == "clogged" && l["queued"].(float64) >= BacklogThreshold {
				return true
			}
		}
		return false
	})
	close(b.release)
	released = true
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		v    preserves.Value
		want time.Duration
		ok   bool
	}{
		{request(preserves.NewDouble(1)), time.Second, true},
		{request(preserves.NewDouble(0.25)), 250 * time.Millisecond, true},
		{request(preserves.Annotate(preserves.NewDouble(2), preserves.String("c"))), 2 * time.Second, true},
		{request(preserves.NewDouble(0.0001)), 0, false},
		{request(preserves.NewDouble(1e300)), 0, false},
		{request(preserves.String("1.0")), 0, false},
		{preserves.String("debt-reporter"), 0, false},
	} {
		got, err := internalservices.DebtPeriod(c.v)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("DebtPeriod(%v) = %v, %v; want %v, %v", c.v, got, err, c.want, c.ok)
		}
	}
	if got := preserves.FormatText(ServiceName(1)); got != "<debt-reporter 1.0>" {
		t.Fatalf("ServiceName(1) = %s", got)
	}
}
