package dataspace

import (
	"context"
	"errors"
	"runtime/debug"
	"time"
)

// LinkedTask starts task on its own goroutine, attached to the active facet
// (no-op if the facet is dead). While it runs the facet is not inert. Its
// context is cancelled when the facet stops or the actor terminates. When
// it returns (runtime spec §7.10):
//
//   - nil: in a new turn, the facet is stopped;
//   - ErrKeepFacet: the task is just forgotten (no inert check, §4.4);
//   - another error (or a panic): the actor crashes with it;
//   - after cancellation: nothing further happens.
func (t *Turn) LinkedTask(name string, task func(ctx context.Context) error) {
	t.ResumableTask(name, func(ctx context.Context, _ func()) error { return task(ctx) })
}

// ResumableTask is LinkedTask for a task that may give up its goroutine
// while it waits, so that a thousand idle tasks hold no stacks (a relay
// connection waiting for input; issue 28, memory per idle session). The
// task does so by arranging for resume to be called once, from anywhere,
// and returning ErrSuspended: its goroutine ends, but the task has not,
// and the facet and actor wait for it as for a running one. resume runs
// the task again on a new goroutine, with the same context; the task keeps
// what it needs to go on in its own state. Only its final return is an
// outcome, as for LinkedTask. A task that suspends must make sure resume
// is called however the facet ends (cancellation included).
func (t *Turn) ResumableTask(name string, task func(ctx context.Context, resume func()) error) {
	f := t.active
	if !f.alive {
		return
	}
	a := t.a
	lt := &linkedTask{a: a, f: f, name: name, ctx: f.context(), task: task}
	f.nTasks++
	if a.tr != nil {
		lt.tid = a.tr.taskStart(name)
	}
	a.wg.Add(1)
	go lt.run()
}

// ErrSuspended, returned by a ResumableTask, means the task gave up its
// goroutine and will be resumed; it is not an outcome.
var ErrSuspended = errors.New("dataspace: task suspended")

// linkedTask is a running (or suspended) ResumableTask.
type linkedTask struct {
	a    *Actor
	f    *facet
	name string
	tid  uint64 // trace id of the task; 0 when not tracing
	ctx  context.Context
	task func(ctx context.Context, resume func()) error
}

func (lt *linkedTask) run() {
	err := runTask(lt.ctx, lt.task, lt.resume)
	if errors.Is(err, ErrSuspended) {
		return // resume goes on with it; the actor still counts it
	}
	defer lt.a.wg.Done()
	if lt.ctx.Err() != nil {
		return
	}
	lt.a.taskDone(lt.f, lt.name, lt.tid, err)
}

func (lt *linkedTask) resume() { go lt.run() }

// runTask runs task, turning a panic into an error so that a panicking
// task crashes its actor rather than the process.
func runTask(ctx context.Context, task func(ctx context.Context, resume func()) error, resume func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return task(ctx, resume)
}

// taskDone applies a finished task's outcome, under the turn lock.
func (a *Actor) taskDone(f *facet, name string, tid uint64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead.Load() || !f.alive {
		return // cancelled in the meantime: nothing further happens
	}
	f.nTasks--
	switch {
	case err == nil:
		if a.tr != nil {
			a.tr.taskReleased(tid)
		}
		a.runTurn(f, func(t *Turn) error { t.Stop(); return nil }, nil, nil)
	case errors.Is(err, ErrKeepFacet):
	default:
		a.logger().Debug().Str("task", name).Err(err).Msg("linked task failed")
		a.terminate(Failed, err)
	}
}

// After runs fn as a turn in the active facet once d has elapsed, unless
// the facet stops first. The pending timer keeps the facet from being
// inert; afterwards the facet is left as it is.
func (t *Turn) After(d time.Duration, fn func(t *Turn) error) {
	fr := t.FacetRef()
	if t.a.tr != nil {
		fn = t.a.tr.timer(CauseDelay, d, fn)
	}
	t.LinkedTask("after", func(ctx context.Context) error {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tm.C:
		}
		fr.ActivateNow(fn)
		return ErrKeepFacet
	})
}

// Every runs fn as a turn in the active facet at once (in a turn of its
// own) and then every d, until the facet stops or the actor terminates.
// Ticks missed while a turn runs are dropped.
func (t *Turn) Every(d time.Duration, fn func(t *Turn) error) {
	fr := t.FacetRef()
	if t.a.tr != nil {
		fn = t.a.tr.timer(CausePeriodic, d, fn)
	}
	t.LinkedTask("every", func(ctx context.Context) error {
		if !fr.ActivateNow(fn) {
			return ctx.Err()
		}
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tk.C:
				if !fr.ActivateNow(fn) {
					return ctx.Err()
				}
			}
		}
	})
}
