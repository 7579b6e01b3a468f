package services

// Test harness: an actor system with a config and a log dataspace, a
// driver actor the test asserts through, and a mirror of every assertion in
// the config dataspace plus every message sent to the log dataspace.
// (services/daemon has a copy: sibling test packages cannot share helpers.)

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

type harness struct {
	tb     testing.TB
	sys    *dataspace.System
	env    Env
	driver dataspace.FacetRef

	rec   *dataspacetest.Recorder // everything in the config and log dataspaces
	warns *testutil.Buffer
}

// newHarness boots the dataspaces, the mirror and the given services.
func newHarness(tb testing.TB, boots ...func(t *dataspace.Turn, env Env) error) *harness {
	tb.Helper()
	g0 := runtime.NumGoroutine()
	h := &harness{tb: tb, rec: dataspacetest.NewCaptureRecorder(), warns: &testutil.Buffer{}}
	h.sys = dataspace.NewSystem(dataspace.Options{Logger: zerolog.New(h.warns)})
	ready := make(chan struct{})
	h.sys.Spawn("harness", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		cfg := t.Create(dataspace.NewDataspace())
		logDS := t.Create(dataspace.NewDataspace())
		h.env = Env{Config: cfg, Log: logDS, Logger: zerolog.New(h.warns)}
		m := t.Create(h.rec)
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
	tb.Cleanup(func() {
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

// observing reports whether some present assertion is an Observe whose
// text mentions label: a subscriber's interest has reached the dataspace.
func (h *harness) observing(label string) bool {
	return h.rec.Find(func(v preserves.Value) bool {
		r, ok := v.(*preserves.Record)
		return ok && preserves.Equal(r.Label, dsschema.LabelObserve) && strings.Contains(preserves.FormatText(r.Fields[0]), label)
	})
}

func (h *harness) countHistory(entry string) int { return h.rec.Count(entry) }

func (h *harness) waitHas(v preserves.Value, want bool) {
	h.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.has(v) != want {
		if time.Now().After(deadline) {
			h.tb.Fatalf("timed out waiting for %v present=%v", v, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
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
		case <-time.After(10 * time.Second):
			h.tb.Fatal("sync timed out")
		}
	}
}

func sym(s string) preserves.Value { return preserves.Symbol(s) }
