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
	f := t.active
	if !f.alive {
		return
	}
	a := t.a
	ctx := f.context()
	f.nTasks++
	var tid uint64 // trace id of the task; 0 when not tracing
	if a.tr != nil {
		tid = a.tr.taskStart(name)
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		err := runTask(ctx, task)
		if ctx.Err() != nil {
			return
		}
		a.taskDone(f, name, tid, err)
	}()
}

// runTask runs task, turning a panic into an error so that a panicking
// task crashes its actor rather than the process.
func runTask(ctx context.Context, task func(ctx context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return task(ctx)
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
		a.log.Debug().Str("task", name).Err(err).Msg("linked task failed")
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
