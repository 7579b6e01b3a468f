package timer

import (
	"container/heap"
	"context"
	"math"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/dataspacepatterns"
	timerschema "github.com/syndicate-go/syndicate/dataspace/schemas/timer"
	"github.com/syndicate-go/syndicate/preserves"
)

const (
	// WallRecheck bounds one wait for a wall-clock deadline: the driver
	// reads the wall clock again at least this often while an absolute
	// deadline is pending, so a step of the wall clock (NTP at boot) is
	// noticed within it. Go's timers follow the monotonic clock only.
	WallRecheck = time.Second
	// MinInterval is the shortest periodic-tick interval served: a
	// shorter one is refused with a warning, so that no observer can
	// make the driver flood its dataspace.
	MinInterval = time.Millisecond
	// MaxTimers bounds the pending set-timers of one driver; a set-timer
	// beyond it is dropped with a warning (the server may be PID 1).
	MaxTimers = 1 << 16
)

// driver serves the timer protocol in one dataspace. All its fields
// except rearm are owned by the turns of the actor it runs in; rearm
// carries the next wait to the waiter goroutine (see arm).
type driver struct {
	ds    *dataspace.Ref
	clock Clock
	log   zerolog.Logger

	mono, wall queue
	laters     *byValue[*later]
	ticks      *byValue[*ticker]
	timers     *byValue[*item]

	rearm chan wake
}

// wake is the waiter's next wait: none, or d from now.
type wake struct {
	d  time.Duration
	ok bool
}

// later is one later-than deadline and its observers.
type later struct {
	observers int
	it        *item
	h         dataspace.Handle // the assertion, once the deadline passed
}

// ticker is one periodic-tick interval and its observers.
type ticker struct {
	observers int
	it        *item
}

// observed is the pattern of Observe assertions whose pattern is a
// record labelled label with one literal field, captured: what
// `? <later-than 5.0>` and `?? <periodic-tick 1.0>` assert. An observer
// that captures the field (`<later-than ?t>`) does not match.
func observed(label preserves.Symbol) pattern.Pattern {
	lit := pattern.Rec(dataspacepatterns.LabelLit, pattern.Capture())
	group := pattern.Rec(dataspacepatterns.LabelGroup,
		pattern.Rec(dataspacepatterns.LabelRec, pattern.Lit{Value: label}),
		pattern.Dict(pattern.Entry{Key: preserves.Int(0), Pattern: lit}))
	return pattern.Rec(dsschema.LabelObserve, group, pattern.Discard{})
}

// Serve runs a timer driver for ds in the active facet, until the facet
// stops.
func Serve(t *dataspace.Turn, ds *dataspace.Ref, clock Clock, log zerolog.Logger) {
	if clock == nil {
		clock = RealClock()
	}
	d := &driver{
		ds: ds, clock: clock, log: log,
		laters: newByValue[*later](), ticks: newByValue[*ticker](), timers: newByValue[*item](),
		rearm: make(chan wake, 1),
	}
	fr := t.FacetRef()
	t.LinkedTask("timer", func(ctx context.Context) error { return d.wait(ctx, fr) })
	t.During(ds, observed(timerschema.LabelLaterThan), func(t *dataspace.Turn, caps []preserves.Value) error {
		d.observeLater(t, caps[0])
		return nil
	})
	t.During(ds, observed(timerschema.LabelPeriodicTick), func(t *dataspace.Turn, caps []preserves.Value) error {
		d.observeTick(t, caps[0])
		return nil
	})
	setTimer := pattern.Rec(timerschema.LabelSetTimer, pattern.Capture(), pattern.Capture(), pattern.Capture())
	t.OnMessage(ds, setTimer, func(t *dataspace.Turn, caps []preserves.Value) error {
		d.setTimer(caps[0], caps[1], caps[2])
		return nil
	})
}

// wait is the waiter goroutine: it sleeps until the earliest deadline the
// actor last announced on rearm, then runs fire as a turn of the actor.
func (d *driver) wait(ctx context.Context, fr dataspace.FacetRef) error {
	var due <-chan time.Time
	release := func() {}
	defer func() { release() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case w := <-d.rearm:
			release()
			due, release = nil, func() {}
			if w.ok {
				due, release = d.clock.After(w.d)
			}
		case <-due:
			release()
			due, release = nil, func() {}
			if !fr.ActivateNow(d.fire) {
				return ctx.Err()
			}
		}
	}
}

// arm tells the waiter the next wait, replacing the one it has. Only the
// actor sends on rearm, so after the drain the send cannot block.
func (d *driver) arm() {
	var w wake
	if len(d.mono) > 0 {
		w = wake{d: max(time.Duration(d.mono[0].at)-d.clock.Elapsed(), 0), ok: true}
	}
	if len(d.wall) > 0 {
		left := time.Duration(d.wall[0].at - d.clock.Now().UnixNano())
		if left < 0 {
			left = 0 // also guards the subtraction's overflow for far deadlines
		}
		left = min(left, WallRecheck)
		if !w.ok || left < w.d {
			w = wake{d: left, ok: true}
		}
	}
	select {
	case <-d.rearm:
	default:
	}
	d.rearm <- w
}

// fire runs every item that is due, then re-arms.
func (d *driver) fire(t *dataspace.Turn) error {
	now := d.clock.Now()
	secs := unixSeconds(now)
	el := int64(d.clock.Elapsed())
	for len(d.mono) > 0 && d.mono[0].at <= el {
		heap.Pop(&d.mono).(*item).fire(t, secs)
	}
	for len(d.wall) > 0 && d.wall[0].at <= now.UnixNano() {
		heap.Pop(&d.wall).(*item).fire(t, secs)
	}
	d.arm()
	return nil
}

func (d *driver) queueOf(it *item) *queue {
	if it.wall {
		return &d.wall
	}
	return &d.mono
}

func (d *driver) schedule(it *item) { heap.Push(d.queueOf(it), it) }
func (d *driver) cancel(it *item)   { d.queueOf(it).remove(it) }

// observeLater serves one observer of `<later-than v>`, in its facet:
// the assertion is shared by all observers of v and retracted with the
// last of them.
func (d *driver) observeLater(t *dataspace.Turn, v preserves.Value) {
	secs, ok := seconds(v)
	if !ok {
		d.log.Warn().Str("value", preserves.Show(v)).Msg("timer: later-than needs a number of seconds since the Unix epoch")
		return
	}
	l, ok := d.laters.get(v)
	if !ok {
		l = &later{}
		d.laters.put(v, l)
		assert := func(t *dataspace.Turn, _ float64) {
			l.h = t.Assert(d.ds, preserves.NewRecord(timerschema.LabelLaterThan, v))
		}
		at, ok := wallNanos(secs)
		switch {
		case !ok: // beyond the year 2262: never
		case at <= d.clock.Now().UnixNano():
			assert(t, 0)
		default:
			l.it = &item{at: at, wall: true, fire: assert}
			d.schedule(l.it)
			d.arm()
		}
	}
	d.observe(t, &l.observers, func(t *dataspace.Turn) {
		d.laters.delete(v)
		if l.it != nil {
			d.cancel(l.it)
		}
		if l.h != 0 {
			t.Retract(l.h)
		}
	})
}

// observe counts one more observer of a timer the observers share (in
// *observers) until the active facet stops; when the last one goes, drop
// removes the timer and the driver rearms.
func (d *driver) observe(t *dataspace.Turn, observers *int, drop func(t *dataspace.Turn)) {
	*observers++
	t.OnStop(func(t *dataspace.Turn) error {
		if *observers--; *observers > 0 {
			return nil
		}
		drop(t)
		d.arm()
		return nil
	})
}

// observeTick serves one observer of `<periodic-tick v>` messages: while
// any observer of v stands, one message every v seconds on the monotonic
// clock. After a stall (a busy actor, a suspended machine) the missed
// ticks are dropped, not sent in a burst: the next one keeps the phase.
func (d *driver) observeTick(t *dataspace.Turn, v preserves.Value) {
	secs, ok := seconds(v)
	every := time.Duration(secs * float64(time.Second))
	if !ok || math.IsNaN(secs) || secs*float64(time.Second) >= math.MaxInt64 || every < MinInterval {
		d.log.Warn().Str("value", preserves.Show(v)).Dur("minimum", MinInterval).
			Msg("timer: periodic-tick needs an interval in seconds, at least the minimum; not served")
		return
	}
	tk, ok := d.ticks.get(v)
	if !ok {
		tk = &ticker{}
		d.ticks.put(v, tk)
		msg := preserves.NewRecord(timerschema.LabelPeriodicTick, v)
		tk.it = &item{at: int64(d.clock.Elapsed() + every)}
		tk.it.fire = func(t *dataspace.Turn, _ float64) {
			t.Message(d.ds, msg)
			next := tk.it.at + int64(every)
			if el := int64(d.clock.Elapsed()); next <= el {
				next += ((el-next)/int64(every) + 1) * int64(every)
			}
			tk.it.at = next
			d.schedule(tk.it)
		}
		d.schedule(tk.it)
		d.arm()
	}
	d.observe(t, &tk.observers, func(*dataspace.Turn) {
		d.ticks.delete(v)
		d.cancel(tk.it)
	})
}

// setTimer handles `<set-timer LABEL SECONDS KIND>`: a timer of that label
// replaces any pending one, `clear` cancels it, and at expiry the driver
// sends `<timer-expired LABEL NOW>`.
func (d *driver) setTimer(label, secsV, kindV preserves.Value) {
	kind, err := timerschema.ParseTimerKind(kindV)
	secs, ok := seconds(secsV)
	if err != nil || !ok || math.IsNaN(secs) {
		d.log.Warn().Str("value", preserves.Show(preserves.NewRecord(timerschema.LabelSetTimer, label, secsV, kindV))).
			Msg("timer: malformed set-timer (expected <set-timer LABEL SECONDS relative|absolute|clear>)")
		return
	}
	if old, ok := d.timers.get(label); ok {
		d.cancel(old)
		d.timers.delete(label)
	}
	if kind == timerschema.TimerKindClear {
		d.arm()
		return
	}
	if d.timers.len() >= MaxTimers {
		d.log.Warn().Str("label", preserves.Show(label)).Int("limit", MaxTimers).Msg("timer: too many pending set-timers; dropped")
		return
	}
	it := &item{}
	it.fire = func(t *dataspace.Turn, now float64) {
		d.timers.delete(label)
		t.Message(d.ds, timerschema.TimerExpired{Label: label, Seconds: now}.ToValue())
	}
	switch kind {
	case timerschema.TimerKindAbsolute:
		at, ok := wallNanos(secs)
		if !ok {
			return // beyond the year 2262: never
		}
		it.at, it.wall = at, true
	default:
		it.at = int64(d.clock.Elapsed()) + clampNanos(secs)
	}
	d.timers.put(label, it)
	d.schedule(it)
	d.arm()
}

// seconds reads a number of seconds: a double, or an integer (the schema
// says double, but `<periodic-tick 1>` is what people write; the driver
// answers in the form it was asked).
func seconds(v preserves.Value) (float64, bool) {
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Double:
		return x.Float64(), true
	case preserves.Int:
		return float64(x), true
	case *preserves.BigInt:
		f, _ := x.Big().Float64()
		return f, true
	}
	return 0, false
}

// wallNanos converts Unix seconds to Unix nanoseconds; false for a time
// past what time.Time's UnixNano holds (the year 2262, or +Inf). Far past
// times clamp to the smallest.
func wallNanos(secs float64) (int64, bool) {
	ns := secs * float64(time.Second)
	switch {
	case math.IsNaN(ns) || ns >= math.MaxInt64:
		return 0, false
	case ns <= math.MinInt64:
		return math.MinInt64, true
	}
	return int64(ns), true
}

// clampNanos converts a relative number of seconds to nanoseconds, with
// negative values meaning now and huge ones about 146 years.
func clampNanos(secs float64) int64 {
	ns := secs * float64(time.Second)
	switch {
	case ns <= 0:
		return 0
	case ns >= math.MaxInt64/2:
		return math.MaxInt64 / 2
	}
	return int64(ns)
}

// unixSeconds is tm as Unix seconds, with nanosecond precision where a
// double has it.
func unixSeconds(tm time.Time) float64 {
	return float64(tm.Unix()) + float64(tm.Nanosecond())/1e9
}
