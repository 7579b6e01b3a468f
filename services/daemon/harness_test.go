package daemon

// Test harness: an actor system with a config and a log dataspace, a
// driver actor the test asserts through, and a mirror of every assertion in
// the config dataspace plus every message sent to the log dataspace.
// (A copy of services/harness_test.go: test helpers cannot be shared
// between packages without exporting them.)

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

type harness struct {
	tb     testing.TB
	sys    *dataspace.System
	env    services.Env
	driver dataspace.FacetRef

	rec   *dataspacetest.Recorder // everything in the config and log dataspaces
	warns *testutil.Buffer

	// quiet harnesses record nothing but count ready states (benchmarks).
	quiet      bool
	readyCount atomic.Int64
}

// quietMirror stores nothing and counts ready states (benchmarks).
type quietMirror struct {
	dataspace.BaseEntity
	h *harness
}

func (m *quietMirror) Assert(_ *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	caps := preserves.Unwrap(v).(preserves.Sequence)
	if r, ok := caps[0].(*preserves.Record); ok && r.Label == service.LabelServiceState && len(r.Fields) == 2 && r.Fields[1] == services.StateReady {
		m.h.readyCount.Add(1)
	}
	return nil
}

// newHarness boots the dataspaces, the mirror and the given services.
func newHarness(tb testing.TB, boots ...func(t *dataspace.Turn, env services.Env) error) *harness {
	tb.Helper()
	return startHarness(tb, &harness{tb: tb, rec: dataspacetest.NewCaptureRecorder(), warns: &testutil.Buffer{}}, boots)
}

// newQuietHarness is newHarness with a mirror that stores nothing.
func newQuietHarness(tb testing.TB, boots ...func(t *dataspace.Turn, env services.Env) error) *harness {
	tb.Helper()
	return startHarness(tb, &harness{tb: tb, rec: dataspacetest.NewCaptureRecorder(), warns: &testutil.Buffer{}, quiet: true}, boots)
}

func startHarness(tb testing.TB, h *harness, boots []func(t *dataspace.Turn, env services.Env) error) *harness {
	tb.Helper()
	g0 := runtime.NumGoroutine()
	h.sys = dataspace.NewSystem(dataspace.Options{})
	ready := make(chan struct{})
	h.sys.Spawn("harness", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		cfg := t.Create(dataspace.NewDataspace())
		logDS := t.Create(dataspace.NewDataspace())
		h.env = services.Env{Config: cfg, Log: logDS, Logger: zerolog.New(h.warns)}
		var m *dataspace.Ref
		if h.quiet {
			m = t.Create(&quietMirror{h: h})
		} else {
			m = t.Create(h.rec)
		}
		everything := pattern.Capture()
		t.Assert(cfg, dataspace.Observe(everything, m))
		t.Assert(logDS, dataspace.Observe(everything, m))
		for _, b := range boots {
			if err := b(t, h.env); err != nil {
				return err
			}
		}
		_, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			h.driver = t.FacetRef()
			close(ready)
			return nil
		})
		return nil
	})
	<-ready
	fd0 := countFDs()
	tb.Cleanup(func() {
		if isParallel(tb) {
			// Other tests run beside this one: the counts below are
			// theirs too (see parallel). Shutdown still returns only once
			// every process of this harness is gone.
			ctxShutdown(tb, h)
			return
		}
		defer func() {
			eventually(tb, func() bool { return Len() == 0 && countFDs() <= fd0 },
				"children %d, fds %d (was %d)", Len(), countFDs(), fd0)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.sys.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > g0 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				tb.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), g0, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	return h
}

// assert makes v in the config dataspace from the driver; the returned
// function retracts it.
func (h *harness) assert(v preserves.Value) func() {
	var hd dataspace.Handle
	h.driver.Activate(func(t *dataspace.Turn) error { hd = t.Assert(h.env.Config, v); return nil })
	return func() {
		h.driver.Activate(func(t *dataspace.Turn) error { t.Retract(hd); return nil })
	}
}

func (h *harness) send(ds *dataspace.Ref, v preserves.Value) {
	h.driver.Activate(func(t *dataspace.Turn) error { t.Message(ds, v); return nil })
}

func (h *harness) has(v preserves.Value) bool { return h.rec.Has(v) }

func (h *harness) countHistory(entry string) int { return h.rec.Count(entry) }

func (h *harness) waitHas(v preserves.Value, want bool) {
	h.tb.Helper()
	testutil.WaitFor(h.tb, fmt.Sprintf("%v present=%v", v, want), func() bool { return h.has(v) == want })
}

// roundTrip waits until everything the driver sent so far has been
// handled by the config dataspace and everything it triggered in the
// harness actor itself: used to check that something did NOT happen.
func (h *harness) settle() {
	h.tb.Helper()
	for i := 0; i < 5; i++ {
		done := make(chan struct{})
		h.driver.Activate(func(t *dataspace.Turn) error {
			t.Sync(h.env.Config, func(t *dataspace.Turn) error { close(done); return nil })
			return nil
		})
		select {
		case <-done:
		case <-time.After(testutil.WaitPatience):
			buf := make([]byte, 8<<20)
			h.tb.Fatalf("sync timed out\n%s", buf[:runtime.Stack(buf, true)])
		}
	}
}

// ctxShutdown shuts the harness's actor system down now.
func ctxShutdown(tb testing.TB, h *harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.sys.Shutdown(ctx); err != nil {
		tb.Fatalf("shutdown: %v", err)
	}
}
