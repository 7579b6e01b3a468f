package timer

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	timerschema "github.com/syndicate-go/syndicate/dataspace/schemas/timer"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// fakeClock is a Clock whose wall and monotonic readings move only when
// the test says, independently: Advance moves both (time passing), StepWall
// only the wall clock (NTP stepping it).
type fakeClock struct {
	mu      sync.Mutex
	wall    time.Time
	el      time.Duration
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{wall: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *fakeClock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.el
}

func (c *fakeClock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.wall
		return ch, func() {}
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.el + d, ch: ch})
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiters {
			if w.ch == ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				return
			}
		}
	}
}

// pending is the number of waits not yet due.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.el += d
	c.wall = c.wall.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at <= c.el {
			w.ch <- c.wall
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

func (c *fakeClock) StepWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// rig is a dataspace served by a timer driver on a fake clock, and a
// facet of the test's to observe and send from.
type rig struct {
	clock *fakeClock
	ds    *dataspace.Ref
	fr    dataspace.FacetRef
	warns *testutil.Buffer

	flushes int
}

func newRig(tb testing.TB) *rig {
	r := &rig{clock: newFakeClock(), warns: &testutil.Buffer{}}
	sys := dataspacetest.NewSystem(tb, dataspace.Options{})
	ready := make(chan struct{})
	sys.Spawn("rig", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		r.ds = t.Create(dataspace.NewDataspace())
		t.SpawnLink("driver", func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			Serve(t, r.ds, r.clock, zerolog.New(r.warns))
			return nil
		})
		r.fr = t.FacetRef()
		close(ready)
		return nil
	})
	<-ready
	// Messages sent before the driver observes them would be lost.
	all := r.observeAll()
	testutil.WaitFor(tb, "the driver's set-timer observer", func() bool {
		return all.Find(func(v preserves.Value) bool {
			o, ok := v.(*preserves.Record)
			return ok && o.Label == dsschema.LabelObserve && strings.Contains(preserves.FormatText(o.Fields[0]), "set-timer")
		})
	})
	return r
}

// observe asserts an Observe of v (as a literal pattern, what `? v` in a
// script asserts) with a fresh recorder, in a facet of its own; stop
// retracts it.
func (r *rig) observe(tb testing.TB, v preserves.Value) (rec *dataspacetest.Recorder, stop func()) {
	rec = dataspacetest.NewRecorder()
	var id dataspace.FacetID
	r.fr.Activate(func(t *dataspace.Turn) error {
		id, _ = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			t.Assert(r.ds, dataspace.Observe(pattern.MustLift(v), t.Create(rec)))
			return nil
		})
		return nil
	})
	return rec, func() { r.fr.Activate(func(t *dataspace.Turn) error { t.StopFacet(id); return nil }) }
}

// observeAll records every assertion in the dataspace and every message.
func (r *rig) observeAll() *dataspacetest.Recorder {
	rec := dataspacetest.NewCaptureRecorder()
	r.fr.Activate(func(t *dataspace.Turn) error {
		t.Assert(r.ds, dataspace.Observe(pattern.Capture(), t.Create(rec)))
		return nil
	})
	return rec
}

// flush returns once the driver has handled everything sent before: it
// answers a set-timer due at once after those.
func (r *rig) flush(tb testing.TB, all *dataspacetest.Recorder) {
	tb.Helper()
	r.flushes++
	label := preserves.Symbol(fmt.Sprintf("flush%d", r.flushes))
	r.send(preserves.NewRecord(timerschema.LabelSetTimer, label, preserves.Int(0), timerschema.TimerKindRelative.ToValue()))
	testutil.WaitFor(tb, "the driver to catch up", func() bool {
		for _, m := range all.Messages() {
			if te, err := timerschema.ParseTimerExpired(m); err == nil && preserves.Equal(te.Label, label) {
				return true
			}
		}
		return false
	})
}

func (r *rig) send(v preserves.Value) {
	r.fr.Activate(func(t *dataspace.Turn) error { t.Message(r.ds, v); return nil })
}

// settle waits until the driver is asleep on the clock: after a change the
// waiter re-arms, so a test advancing the fake clock does not race it.
func (r *rig) settle(tb testing.TB, waits int) {
	tb.Helper()
	testutil.WaitFor(tb, "the driver to wait on the clock", func() bool { return r.clock.pending() == waits })
}

func laterThan(v preserves.Value) preserves.Value {
	return preserves.NewRecord(timerschema.LabelLaterThan, v)
}

func TestLaterThanPastIsAssertedAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	past := preserves.NewDouble(999_999.5)
	rec, _ := r.observe(t, laterThan(past))
	testutil.WaitFor(t, "later-than of a past time", func() bool { return len(rec.Present()) == 1 })
	// The integer form is answered in its own form.
	recInt, _ := r.observe(t, laterThan(preserves.Int(999_999)))
	testutil.WaitFor(t, "later-than of a past integer time", func() bool { return len(recInt.Present()) == 1 })
}

func TestLaterThanFutureWaitsForTheWallClock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.observeAll()
	rec, stop := r.observe(t, laterThan(preserves.NewDouble(1_000_010)))
	r.settle(t, 1)
	r.clock.Advance(9 * time.Second)
	r.settle(t, 1)
	require.Empty(t, rec.Present(), "asserted before its time")
	r.clock.Advance(time.Second)
	testutil.WaitFor(t, "later-than once its time has come", func() bool { return len(rec.Present()) == 1 })
	require.True(t, all.Has(laterThan(preserves.NewDouble(1_000_010))))

	// A second observer shares it; it goes with the last one.
	rec2, stop2 := r.observe(t, laterThan(preserves.NewDouble(1_000_010)))
	testutil.WaitFor(t, "the second observer served", func() bool { return len(rec2.Present()) == 1 })
	stop()
	r.settle(t, 0)
	require.True(t, all.Has(laterThan(preserves.NewDouble(1_000_010))), "retracted while observed")
	stop2()
	testutil.WaitFor(t, "later-than retracted with its last observer", func() bool {
		return !all.Has(laterThan(preserves.NewDouble(1_000_010)))
	})
}

func TestLaterThanFollowsAWallClockStep(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rec, _ := r.observe(t, laterThan(preserves.NewDouble(1_003_600)))
	r.settle(t, 1)
	r.clock.StepWall(2 * time.Hour) // NTP at boot: no monotonic time passes
	// The driver notices within WallRecheck of monotonic time.
	r.clock.Advance(WallRecheck)
	testutil.WaitFor(t, "later-than after the wall clock stepped past it", func() bool { return len(rec.Present()) == 1 })
}

func TestCapturingObserverIsIgnored(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.observeAll()
	r.fr.Activate(func(t *dataspace.Turn) error {
		p := pattern.Rec(timerschema.LabelLaterThan, pattern.Capture())
		t.Assert(r.ds, dataspace.Observe(p, t.Create(dataspacetest.NewRecorder())))
		return nil
	})
	// A literal observer after it is served, so the capturing one was seen.
	rec, _ := r.observe(t, laterThan(preserves.NewDouble(1)))
	testutil.WaitFor(t, "the literal observer served", func() bool { return len(rec.Present()) == 1 })
	n := 0
	for _, v := range all.Present() {
		if rv, ok := v.(*preserves.Record); ok && rv.Label == timerschema.LabelLaterThan {
			n++
		}
	}
	require.Equal(t, 1, n, "only the literal deadline is asserted")
	require.Zero(t, r.clock.pending(), "nothing scheduled for a capturing observer")
}

func TestPeriodicTicksWithoutBunching(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	tick := preserves.NewRecord(timerschema.LabelPeriodicTick, preserves.Int(2))
	rec, stop := r.observe(t, tick)
	rec2, _ := r.observe(t, tick) // a second observer: still one stream
	for i := 1; i <= 3; i++ {
		r.settle(t, 1)
		r.clock.Advance(2 * time.Second)
		testutil.WaitFor(t, "a tick", func() bool { return len(rec.Messages()) == i })
	}
	require.Len(t, rec2.Messages(), 3)
	// A stall of 10 intervals gives one tick, not ten.
	r.settle(t, 1)
	r.clock.Advance(20 * time.Second)
	testutil.WaitFor(t, "the tick after a stall", func() bool { return len(rec.Messages()) == 4 })
	r.settle(t, 1)
	require.Len(t, rec.Messages(), 4, "ticks bunched after a stall")
	// The next one keeps the phase: 2 s after the stall's tick.
	r.clock.Advance(time.Second)
	r.settle(t, 1)
	require.Len(t, rec.Messages(), 4)
	r.clock.Advance(time.Second)
	testutil.WaitFor(t, "the tick after", func() bool { return len(rec.Messages()) == 5 })
	stop()
	_ = rec2
}

func TestTicksStopWithTheLastObserver(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	tick := preserves.NewRecord(timerschema.LabelPeriodicTick, preserves.NewDouble(1))
	rec, stop := r.observe(t, tick)
	r.settle(t, 1)
	r.clock.Advance(time.Second)
	testutil.WaitFor(t, "a tick", func() bool { return len(rec.Messages()) == 1 })
	stop()
	r.settle(t, 0)
}

func TestPeriodicTickTooShortIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.observe(t, preserves.NewRecord(timerschema.LabelPeriodicTick, preserves.NewDouble(0.0001)))
	r.observe(t, preserves.NewRecord(timerschema.LabelPeriodicTick, preserves.NewDouble(-1)))
	testutil.WaitFor(t, "two warnings", func() bool { return r.warns.Count("periodic-tick needs an interval") == 2 })
	require.Zero(t, r.clock.pending())
}

func setTimer(label string, secs preserves.Value, kind timerschema.TimerKind) preserves.Value {
	return preserves.NewRecord(timerschema.LabelSetTimer, preserves.Symbol(label), secs, kind.ToValue())
}

// expiries returns the timer-expired messages seen, as LABEL@SECONDS
// (SECONDS relative to the fake clock's starting wall time).
func expiries(all *dataspacetest.Recorder) []string {
	var out []string
	for _, m := range all.Messages() {
		if te, err := timerschema.ParseTimerExpired(m); err == nil && !strings.HasPrefix(string(te.Label.(preserves.Symbol)), "flush") {
			out = append(out, fmt.Sprintf("%s@%g", te.Label.(preserves.Symbol), te.Seconds-1_000_000))
		}
	}
	return out
}

func TestSetTimerRelativeFollowsTheMonotonicClock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.observeAll()
	r.send(setTimer("a", preserves.Int(10), timerschema.TimerKindRelative))
	r.flush(t, all)
	r.settle(t, 1)
	r.clock.StepWall(time.Hour) // a wall-clock step does not fire it
	r.clock.Advance(9 * time.Second)
	r.settle(t, 1)
	require.Empty(t, expiries(all))
	r.clock.Advance(time.Second)
	testutil.WaitFor(t, "timer-expired", func() bool { return len(expiries(all)) == 1 })
	require.Equal(t, []string{"a@3610"}, expiries(all), "SECONDS is the wall-clock time it fired")
}

func TestSetTimerAbsoluteFollowsTheWallClock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.observeAll()
	r.send(setTimer("abs", preserves.NewDouble(1_000_100), timerschema.TimerKindAbsolute))
	r.flush(t, all)
	r.settle(t, 1)
	r.clock.StepWall(100 * time.Second)
	r.clock.Advance(WallRecheck)
	testutil.WaitFor(t, "timer-expired", func() bool { return len(expiries(all)) == 1 })
}

func TestSetTimerClearBeforeExpiry(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.observeAll()
	r.send(setTimer("gone", preserves.NewDouble(5), timerschema.TimerKindRelative))
	r.send(setTimer("kept", preserves.NewDouble(6), timerschema.TimerKindRelative))
	r.send(setTimer("gone", preserves.NewDouble(0), timerschema.TimerKindClear))
	r.send(setTimer("late", preserves.NewDouble(1), timerschema.TimerKindRelative))
	r.send(setTimer("late", preserves.NewDouble(7), timerschema.TimerKindRelative)) // replaces
	r.flush(t, all)
	r.settle(t, 1)
	r.clock.Advance(6 * time.Second)
	testutil.WaitFor(t, "kept expired", func() bool { return len(expiries(all)) == 1 })
	r.settle(t, 1)
	r.clock.Advance(time.Second)
	testutil.WaitFor(t, "late expired", func() bool { return len(expiries(all)) == 2 })
	r.settle(t, 0)
	require.Equal(t, []string{"kept@6", "late@7"}, expiries(all))
}

func TestSetTimerMalformedIsWarned(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.send(preserves.NewRecord(timerschema.LabelSetTimer, preserves.Symbol("x"), preserves.String("soon"), preserves.Symbol("relative")))
	r.send(preserves.NewRecord(timerschema.LabelSetTimer, preserves.Symbol("x"), preserves.Int(1), preserves.Symbol("sometime")))
	testutil.WaitFor(t, "two warnings", func() bool { return r.warns.Count("malformed set-timer") == 2 })
}
