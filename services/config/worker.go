package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// ErrCanonicalise wraps the failure to make PATH absolute and resolve its
// symlinks (e.g. it does not exist yet); the worker fails and the supervisor
// retries (§3.1 step 2).
var ErrCanonicalise = errors.New("config: cannot canonicalise path")

// worker is one incarnation of a config watcher: an actor whose main facet
// holds one child facet per loaded script. Its fields are touched only in
// turns of its actor.
type worker struct {
	name preserves.Value
	path string
	env  map[string]preserves.Value
	cfg  *dataspace.Ref
	svc  services.Env
	log  zerolog.Logger
	opts Options

	degrade *dataspace.Ref // Supervise's: asserted while PATH is missing
	waiting string         // the status reason while PATH is missing

	files map[string]dataspace.FacetID // script path → facet running it
	// broken holds, per file whose latest version does not compile, the
	// status reason; info publishes them (services.Info).
	broken map[string]string
	info   services.InfoPublisher
}

func (w *worker) boot(t *dataspace.Turn) error {
	w.files = map[string]dataspace.FacetID{}
	w.broken = map[string]string{}
	// §2.4: restart-service stops the worker normally; the supervisor
	// ("always") then restarts it.
	services.StopOnRestart(t, w.svc, w.name)

	abs, err := canonicalise(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		w.waitForPath(t)
		return nil
	}
	if err != nil {
		return err
	}
	return w.start(t, abs)
}

// waitForPath is the worker's life while PATH does not exist (Go
// deviation, operator issue, docs/operator.md): the reference fails the
// worker and retries forever (§3.1 step 2, Q22), which logs an error and
// a crash twice per retry. Here the worker stays, the service reports
// `failed` with the reason in its status (through the degrade
// capability), one warning names the path, and it is looked for again
// every PathPoll (1 s: sooner than the reference's 10 s retries). When it
// appears, one info line says so and the watcher starts in the same
// worker.
func (w *worker) waitForPath(t *dataspace.Turn) {
	w.log.Warn().Str("path", w.path).Msg("config path does not exist; it will be loaded when it is created")
	w.waiting = "config path " + w.path + " does not exist; waiting for it to be created"
	w.publishInfo(t)
	failed := t.Assert(w.degrade, preserves.Bool(true))
	every := w.opts.PathPoll
	if every <= 0 {
		every = time.Second
	}
	fr := t.FacetRef()
	t.LinkedTask("config-path", func(ctx context.Context) error {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			abs, err := canonicalise(w.path)
			if w.opts.polled != nil {
				w.opts.polled()
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			fr.ActivateNow(func(t *dataspace.Turn) error {
				t.Retract(failed)
				w.waiting = ""
				if err != nil {
					return err // not a missing path: fail as the reference does
				}
				w.log.Info().Str("path", w.path).Msg("config path created; loading it")
				return w.start(t, abs)
			})
			return dataspace.ErrKeepFacet
		}
	})
}

// start watches the canonical path abs, scans it and runs its scripts.
func (w *worker) start(t *dataspace.Turn, abs string) error {
	wopts := w.opts.Watch
	wopts.Logger = w.log
	wt, err := NewWatcher(abs, wopts)
	if err != nil {
		return err
	}

	t.OnMessage(w.cfg, pattern.Rec(syndicatego.LabelConfigRescan), func(*dataspace.Turn, []preserves.Value) error {
		wt.Rescan() // never blocks; the watcher goroutine does the work
		return nil
	})

	// The watcher goroutine is a linked task of this (main) facet: it ends
	// when the facet stops or the actor dies. It first waits for this boot
	// turn to finish (Activate takes the turn lock), so the initial scan
	// below hands the watcher's model over to it race-free, and a boot turn
	// that fails still gets the watcher closed.
	fr := t.FacetRef()
	t.LinkedTask("config-watcher", func(ctx context.Context) error {
		defer wt.Close()
		if !fr.ActivateNow(func(*dataspace.Turn) error { return nil }) {
			return nil
		}
		return wt.Run(ctx, func(cs []Change) bool {
			return fr.ActivateNow(func(t *dataspace.Turn) error {
				w.apply(t, cs)
				return nil
			})
		})
	})

	// §3.3: the whole initial scan, and readiness, in this one turn.
	cs, err := wt.Scan()
	if err != nil {
		return err // §3.1 step 3: a watch set-up error fails the worker
	}
	w.apply(t, cs)
	t.Assert(w.cfg, services.ServiceState(w.name, services.StateReady))
	return nil
}

// apply runs one batch of changes as part of the current turn, with the
// worker's main facet active (§3.4). Every new version is started before any
// replaced version is stopped, so assertions common to both never disappear.
// When the batch started new versions, the old ones stop one config-dataspace
// round trip later (see below); otherwise at once.
func (w *worker) apply(t *dataspace.Turn, cs []Change) {
	var old []dataspace.FacetID
	started := false
	for _, c := range cs {
		prev, had := w.files[c.Path]
		if c.Removed {
			delete(w.broken, c.Path)
			if had {
				delete(w.files, c.Path)
				old = append(old, prev)
				w.log.Info().Str("path", c.Path).Msg("removed")
			}
			continue
		}
		prog, err := compileScript(c.Path, c.Src)
		if err != nil {
			w.logErrors(err)
			// Go deviation (operator issue, docs/operator.md): a new
			// version that does not compile, whether its Preserves
			// syntax is broken (§3.5 step 2) or it has compile errors
			// (§3.5 step 3 would stop the old version), keeps the
			// previous version running. The log and the status say so.
			first := firstError(err)
			if had {
				w.log.Warn().Str("path", c.Path).Msg("the new version does not compile; the previous version keeps running")
				w.broken[c.Path] = "new version of " + c.Path + " does not compile; previous version kept: " + first
			} else {
				w.broken[c.Path] = c.Path + " does not compile: " + first
			}
			continue
		}
		delete(w.broken, c.Path)
		for _, warn := range prog.Warnings {
			// A script that runs, but probably not as its author meant
			// (a caveat in another dialect's notation restricts nothing).
			w.log.Warn().Str("path", c.Path).Str("pos", warn.Pos.String()).Msg(warn.Msg)
		}
		env := make(map[string]preserves.Value, len(w.env)+1)
		for k, v := range w.env {
			env[k] = v
		}
		env["scriptdir"] = preserves.String(filepath.Dir(c.Path))
		id, err := runScript(t, prog, env, w.log)
		if err != nil {
			// Only a failure to create the facet is returned; run-time
			// errors are logged by the VM and stop only the new facet.
			// Either way the file counts as processed (§3.5 step 4).
			w.log.Error().Err(err).Str("path", c.Path).Msg("script failed")
		}
		if had {
			old = append(old, prev)
		}
		w.files[c.Path] = id
		started = true
		w.log.Info().Str("path", c.Path).Msg("processed")
	}
	w.publishInfo(t)
	stop := func(t *dataspace.Turn) error {
		for _, id := range old {
			t.StopFacet(id)
		}
		return nil
	}
	switch {
	case len(old) == 0:
	case started:
		// Q18: stop the replaced versions only after a round trip through
		// the config dataspace. By then it has answered the new versions'
		// subscriptions, so their `?` handler bodies have run (in the same
		// turn as this continuation) and an assertion common to both
		// versions but made in a handler body does not blink either.
		t.Sync(w.cfg, stop)
	default:
		_ = stop(t)
	}
}

// publishInfo asserts the watcher's `<service-info …>`: the files whose
// latest version does not compile.
func (w *worker) publishInfo(t *dataspace.Turn) {
	reasons := slices.Sorted(maps.Values(w.broken))
	if w.waiting != "" {
		reasons = append(reasons, w.waiting)
	}
	w.info.Publish(t, w.cfg, w.name, services.Info{Reasons: reasons})
}

// firstError is the first error of a list, with how many follow.
func firstError(err error) string {
	if l, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := l.Unwrap(); len(errs) > 0 {
			if len(errs) > 1 {
				return fmt.Sprintf("%v (and %d more errors)", errs[0], len(errs)-1)
			}
			return errs[0].Error()
		}
	}
	return err.Error()
}

// logErrors logs each error of a list on its own line, as
// `file:line:col: message`.
func (w *worker) logErrors(err error) {
	if l, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range l.Unwrap() {
			w.log.Error().Msg(e.Error())
		}
		return
	}
	w.log.Error().Msg(err.Error())
}

// canonicalise makes path absolute and resolves every symlink in it (§3.1
// step 2). Failure wraps ErrCanonicalise.
func canonicalise(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrCanonicalise, path, err)
	}
	return abs, nil
}
