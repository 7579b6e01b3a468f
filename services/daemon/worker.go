package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The daemon's state machines (§5.3–§5.5), one struct per level, with the
// state in fields and one method per event:
//
//   - daemonRun: one `<run-service <daemon ID>>`; owns the supervisor and
//     what must outlive a worker crash (start counts).
//   - worker: one worker actor; owns the readiness tally and the
//     `<service-state … ready>` assertion.
//   - specRun: one `<daemon ID SPEC>` inside a worker; owns the running
//     process's facet and reacts to the runner's events.
//
// The counting that decides `ready` and "all completed" is [tally], a
// plain value tested with a transition table.

// daemonRun is the facet of one `<run-service <daemon ID>>`.
type daemonRun struct {
	s    *Service
	env  services.Env
	name preserves.Value // plain (stripped) <daemon ID>
	id   preserves.Value
	log  zerolog.Logger
	hist *history
	key  string            // daemonKey(name)
	sup  dataspace.FacetID // the current supervisor's facet
	// restarts counts restart requests; only the latest one starts a
	// supervisor once the old processes are gone.
	restarts int
	// restartBy is who asked for the restart request about to arrive
	// (`<request-origin …>`), "" when unknown.
	restartBy string
	// lastSpec is the text of the spec declared last, so that the same
	// spec declared again (a new worker's) is not logged as a change.
	lastSpec string
	// specsSeen counts the specs declared, so that a second one is
	// logged as a change.
	specsSeen int
	// held are the sockets of its declarations, kept across workers
	// (sockets_hold.go); watching: their declarations are counted.
	held     *socketHold
	fr       dataspace.FacetRef
	watching bool
}

// runDaemon runs in the facet of one well-formed `<run-service <daemon
// ID>>` (services.Serve reports malformed ones).
func runDaemon(t *dataspace.Turn, s *Service, env services.Env, req services.Request[preserves.Value]) {
	name := req.Name
	d := &daemonRun{s: s, env: env, name: name, id: req.Spec, log: req.Log, hist: newHistory(), key: daemonKey(name),
		held: newSocketHold()}
	s.runs[d.key] = d
	t.OnStop(func(*dataspace.Turn) error {
		if s.runs[d.key] == d {
			delete(s.runs, d.key)
		}
		d.held.close()
		return nil
	})
	d.logLeftovers(t)
	d.fr = t.FacetRef()
	d.startSupervisor(t)
	t.OnStop(func(t *dataspace.Turn) error {
		d.logEvent(t, 0, logEvUnrequired, "no longer required: stopping")
		return nil
	})
	restart := pattern.Rec(service.LabelRestartService, services.Literal(name))
	t.OnMessage(env.Config, pattern.Rec(syndicatego.LabelRequestOrigin, restart, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		if by, ok := caps[0].(preserves.String); ok {
			d.restartBy = string(by) // the admin endpoint's word, just before the request
		}
		return nil
	})
	t.OnMessage(env.Config, pattern.Bind{Pattern: restart}, func(t *dataspace.Turn, caps []preserves.Value) error {
		d.restartRequested(t, caps[0])
		return nil
	})
}

// startSupervisor starts a supervisor of worker actors in a facet of its own.
func (d *daemonRun) startSupervisor(t *dataspace.Turn) {
	d.sup, _ = t.Facet(func(t *dataspace.Turn) error {
		services.Supervise(t, d.env, d.name, services.OnErrorOnly, preserves.Show(d.name),
			func(t *dataspace.Turn, degrade *dataspace.Ref) error {
				w := &worker{d: d, degrade: degrade}
				return w.boot(t)
			}, d.s.sup)
		return nil
	})
}

// restartRequested is the event `<restart-service <daemon ID>>` (§2.4): the
// whole supervision facet goes (every process is stopped) and a brand-new
// supervisor starts at once.
//
// The new supervisor starts once the old processes are gone (Go deviation:
// the reference starts it at once). Since dependents now stop first
// (stop.go), starting at once would run two instances of the daemon side
// by side for as long as the dependents take to stop.
//
// The request names no sender; what is known of it is told: the admin
// endpoint's `<request-origin …>` (the operator's uid, pid and command),
// else where a script wrote the message (the position side table).
func (d *daemonRun) restartRequested(t *dataspace.Turn, msg preserves.Value) {
	by := d.restartBy
	d.restartBy = ""
	if by == "" {
		if p := preserves.PosOf(msg); p.IsValid() {
			by = "the script at " + p.String()
		}
	}
	line := "restart requested (a <restart-service> message)"
	if by != "" {
		line = "restart requested by " + by
	}
	d.log.Info().Str("by", by).Msg("restart requested")
	d.logEvent(t, 0, logEvRestart, line)
	t.StopFacet(d.sup)
	d.restarts++
	gen := d.restarts
	fr := t.FacetRef()
	t.LinkedTask("daemon restart", func(ctx context.Context) error {
		d.s.order.waitIdle(ctx, d.key)
		fr.ActivateNow(func(t *dataspace.Turn) error {
			if gen == d.restarts { // a later restart request starts its own
				d.startSupervisor(t)
			}
			return nil
		})
		return dataspace.ErrKeepFacet
	})
}

// worker is one daemon worker actor (§5.3).
type worker struct {
	d       *daemonRun
	degrade *dataspace.Ref
	// out is the worker's boot facet: output is logged from there, not
	// from a spec's facet, so that the last lines of a process killed
	// because its spec was retracted are still delivered.
	rec   *services.Reconciler
	tally tally
	ready dataspace.Handle // <service-state NAME ready>, while tally.ready()
	specs map[*specRun]struct{}
	info  services.InfoPublisher
	// Run-time counterparts of --check (services/diagnose.go): no
	// declaration after the grace period, declarations in several files.
	undeclared bool
	dupWarned  string
}

// boot is the worker actor's boot.
func (w *worker) boot(t *dataspace.Turn) error {
	w.tally = newTally()
	w.specs = map[*specRun]struct{}{}
	w.rec = services.NewReconciler(t, w.reconcile)
	// The whole declaration, so that a spec that is an atom still has
	// the place it was written (its parent remembers it).
	specPat := pattern.Bind{Pattern: pattern.Rec(externalservices.LabelDaemon, services.Literal(w.d.id), pattern.Discard{})}
	t.During(w.d.env.Config, specPat, func(t *dataspace.Turn, caps []preserves.Value) error {
		decl := caps[0].(*preserves.Record)
		return w.specAsserted(t, decl.Fields[1], preserves.FieldPos(decl, 1))
	})
	sigPat := pattern.Rec(syndicatego.LabelSignalService, services.Literal(w.d.name), pattern.Capture())
	t.OnMessage(w.d.env.Config, sigPat, func(t *dataspace.Turn, caps []preserves.Value) error {
		w.signal(caps[0])
		return nil
	})
	// After subscribing, one round trip removes the initial un-readiness.
	t.Sync(w.d.env.Config, func(t *dataspace.Turn) error {
		w.tally.synced()
		w.rec.Kick(t)
		return nil
	})
	t.After(services.DiagnosisGrace, func(t *dataspace.Turn) error {
		if !w.tally.had {
			// Reference semantics: started,ready with no process. A
			// misspelt or deleted declaration would pass in silence.
			w.undeclared = true
			w.d.log.Warn().Msg(w.undeclaredReason())
			w.rec.Kick(t)
		}
		return nil
	})
	return nil
}

func (w *worker) undeclaredReason() string {
	return "no " + strings.TrimSuffix(preserves.Show(w.d.name), ">") + " …> declaration: ready with no process"
}

// reconcile makes the ready assertion follow the tally, and ends the
// worker normally once every spec has completed.
func (w *worker) reconcile(t *dataspace.Turn) error {
	switch {
	case w.tally.ready() && w.ready == 0:
		w.ready = t.Assert(w.d.env.Config, services.ServiceState(w.d.name, services.StateReady))
	case !w.tally.ready() && w.ready != 0:
		t.Retract(w.ready)
		w.ready = 0
	}
	w.publishInfo(t)
	if w.tally.allCompleted() {
		w.d.log.Info().Msg("all processes completed")
		t.StopRoot()
	}
	return nil
}

// publishInfo asserts the daemon's `<service-info …>`: its history and
// the conditions of its specs.
func (w *worker) publishInfo(t *dataspace.Turn) {
	window := statusWindow
	parts := []services.Info{{}}
	files := map[string]bool{}
	var where []string
	for r := range w.specs {
		if p := r.at; p.File != "" {
			files[p.File] = true
			where = append(where, p.String())
		}
		if r.spec != nil && r.spec.Limits.Window > 0 {
			window = r.spec.Limits.Window
		}
		if r.spec != nil && r.spec.Schedule != nil {
			parts = append(parts, r.scheduleInfo())
		}
		if len(r.sockets) > 0 {
			parts = append(parts, services.Info{Sockets: r.sockets})
		}
		var notes []string
		if r.handle != nil {
			notes = r.handle.Notes
		}
		if r.phase != "" || len(r.reasons)+len(r.warnings)+len(notes) > 0 {
			reasons := append(append(slices.Clone(r.reasons), r.warnings...), notes...)
			parts = append(parts, services.Info{Phase: r.phase, Reasons: reasons, Pos: r.at.String()})
		}
	}
	parts[0] = w.d.hist.info(w.d.s.clock.Now(), window)
	if w.undeclared && !w.tally.had {
		parts = append(parts, services.Info{Reasons: []string{w.undeclaredReason()}})
	}
	if len(files) > 1 {
		slices.Sort(where)
		reason := "declared in several files (" + strings.Join(where, ", ") + "): each declaration runs a process of its own"
		parts = append(parts, services.Info{Reasons: []string{reason}})
		if w.dupWarned != reason {
			w.dupWarned = reason
			w.d.log.Warn().Msg(reason)
		}
	}
	w.info.Publish(t, w.d.env.Config, w.d.name, services.MergeInfo(parts...))
}

// specAsserted is the event "`<daemon ID SPEC>` appeared", SPEC (raw)
// written at `at`; it runs in the facet that lasts as long as the
// assertion.
func (w *worker) specAsserted(t *dataspace.Turn, raw preserves.Value, at preserves.Pos) error {
	r := &specRun{w: w, raw: raw, at: at}
	w.specs[r] = struct{}{}
	w.tally.specAdded()
	w.rec.Kick(t)
	t.OnStop(func(t *dataspace.Turn) error {
		r.retracted(t)
		return nil
	})
	spec, err := ParseSpecAt(raw, at)
	if err != nil {
		ev := w.d.log.Warn().Str("spec", preserves.Show(raw)).Str("pos", at.String()).Err(err)
		if errors.Is(err, ErrNotASpec) || errors.Is(err, ErrRestrictingKey) {
			// The tally stays raised; the daemon reports failed while
			// this spec is asserted (Go deviation, §5.3). A misspelt
			// restricting key fails closed the same way: the process is
			// never run without the restriction meant.
			ev.Msg("invalid process specification")
			r.reasons = []string{"invalid process specification: " + err.Error()}
			t.Assert(w.degrade, preserves.Bool(true))
			return nil
		}
		ev.Msg("invalid process configuration; crashing the daemon worker")
		return err
	}
	r.spec = spec
	w.d.specsSeen++
	text := preserves.FormatText(raw)
	switch {
	case w.d.specsSeen > 1 && text == w.d.lastSpec:
		// The same spec again, after a restart-service or a worker
		// crash: nothing changed, and the restart is logged already.
	case w.d.specsSeen > 1:
		w.d.logEvent(t, 0, logEvSpecChanged, "spec changed: "+preserves.Show(raw))
	default:
		w.d.logEvent(t, 0, logEvDeclared, "declared: "+preserves.Show(raw))
	}
	w.d.lastSpec = text
	// Misspelt keys are ignored, as by the reference, but not silently.
	for _, msg := range spec.Unknown {
		w.d.log.Warn().Str("pos", at.String()).Msg(msg)
		r.warnings = append(r.warnings, msg)
	}
	r.command = preserves.ShowString(fmt.Sprintf("%q", spec.Argv)) // for log lines
	r.key = preserves.FormatText(raw)
	r.fr = t.FacetRef()
	r.out = dataspace.NewAccount()
	if spec.Schedule != nil {
		// Ready once scheduled (schedule.go).
		r.becameReady(t)
		t.LinkedTask("daemon schedule", r.runScheduled)
		return nil
	}
	if len(spec.Listen) > 0 && !w.d.s.dryRun { // a dry run binds no socket
		d := w.d
		d.fr.ActivateNow(func(t *dataspace.Turn) error { d.watchDeclarations(t); return nil })
		t.LinkedTask("daemon sockets", r.runWithSockets)
		return nil
	}
	t.LinkedTask("daemon process", r.run)
	return nil
}

// specRun is one `<daemon ID SPEC>` of a worker and the processes run for it.
type specRun struct {
	w       *worker
	raw     preserves.Value
	at      preserves.Pos // where raw was written, if known
	spec    *Spec
	command string // argv, quoted, for log records
	key     string // the spec without positions (start counts)
	fr      dataspace.FacetRef
	st      specState
	// The running process's facet (§5.4): set in the turn reporting
	// Started, read by the runner goroutine right after (Activate is
	// synchronous), stopped when the exit is handled.
	proc    dataspace.FacetID
	procRef dataspace.FacetRef
	running bool
	handle  *ProcHandle        // the running process, for signals and figures (cgroup.go)
	runDone atomic.Bool        // run has returned: no process is left (stopping.go)
	out     *dataspace.Account // charged with its output (output.go)
	notify  notifyState        // what the running process said (readiness_worker.go)
	token   uint64             // the running process in the stop order (stop.go); runner goroutine only
	// Its condition, for the status: a phase (cannot-start, backoff,
	// gave-up) and why, and the degrade assertion that makes the daemon
	// `failed` while it cannot start.
	phase    preserves.Symbol
	reasons  []string
	warnings []string // about the spec itself (unknown keys)
	degraded dataspace.Handle
	sched    runReport // a scheduled spec's runs (schedule.go)
	sockets  []string  // its sockets' status (sockets.go)
}

// run is the spec's linked task: the restart loop of §5.5.
func (r *specRun) run(ctx context.Context) error {
	defer r.runEnded()
	return r.outcome(ctx, r.w.d.s.runner.Run(ctx, r.spec, r.events()))
}

// outcome is the linked task's end after the restart loop ended with out.
func (r *specRun) outcome(ctx context.Context, out Outcome) error {
	switch out {
	case Crashed:
		return ErrCrash
	case Completed, GaveUp:
		return dataspace.ErrKeepFacet // the spec facet stays: completed or failed
	}
	return ctx.Err()
}

// runEnded is the event "the run loop has returned": every process of the
// spec is gone, so it is no longer stopping (stopping.go).
func (r *specRun) runEnded() {
	r.runDone.Store(true)
	r.w.d.s.stopping.end(r)
}

// events are the runner's callbacks for the spec's processes (one run
// loop at a time: Run or RunScheduled).
func (r *specRun) events() Events {
	// The handle of the process being spawned: Spawned and Started are
	// called one after the other on the runner's goroutine.
	var handle *ProcHandle
	return r.readinessEvents(Events{
		Started: func(pid int) {
			if pid != 0 {
				r.token = r.w.d.s.order.up(r.w.d.key, r.spec.StopTimeout)
			}
			h := handle
			handle = nil
			r.fr.ActivateNow(func(t *dataspace.Turn) error {
				r.started(t, pid)
				if h != nil {
					r.spawned(t, h)
				}
				return nil
			})
		},
		Stdio:  r.stdio,
		Output: func(ctx context.Context, batch []Line) { r.w.d.outputBatch(ctx, r.out, batch) },
		Exited: func(e Exit, next Next) {
			if e.Pid != 0 {
				r.w.d.s.order.down(r.w.d.key, r.token)
			}
			r.fr.ActivateNow(func(t *dataspace.Turn) error { r.exited(t, e, next); return nil })
		},
		BeforeStop: func() time.Duration {
			waited, late := r.w.d.s.order.waitDependents(r.w.d.key)
			if len(late) > 0 {
				r.w.d.log.Warn().Strs("dependents", late).Dur("waited", waited).
					Msg("dependents still running after their stop timeouts; stopping anyway")
			}
			return waited
		},
		Stopped: r.stopped,
		Name:    preserves.FormatText(r.w.d.id),
		Spawned: func(h *ProcHandle) { handle = h; r.w.d.hist.spawned(h) },
	})
}

// stopped is the event "a process we stopped is gone". It runs on the
// runner's goroutine, after the spec's facet may be gone, so it only logs.
func (r *specRun) stopped(e Exit) {
	r.w.d.s.order.down(r.w.d.key, r.token)
	r.stopEvent(e)
	ev := r.w.d.log.Info().Str("command", r.command).Int("pid", e.Pid).Str("status", e.String())
	if st := e.Stop; st != nil {
		ev = ev.Dur("took", st.Took).Bool("sigkill", st.Killed)
		if st.Waited > 0 {
			ev = ev.Dur("waitedForDependents", st.Waited)
		}
		if st.Killed {
			ev.Msg("process stopped with SIGKILL after its stop timeout")
			return
		}
	}
	ev.Msg("process stopped")
}

// started is the event "a process was spawned".
func (r *specRun) started(t *dataspace.Turn, pid int) {
	w := r.w
	if pid != 0 {
		w.d.logEvent(t, pid, logEvSpawned, fmt.Sprintf("spawned %s, pid %d", r.command, pid))
	}
	if r.spec.ReadyOnStart {
		r.becameReady(t)
	}
	r.setCondition(t, "", nil)
	restarts := w.d.hist.started(r.key)
	if w.d.s.dryRun {
		logDryRun(w.d.log, r.spec)
		return
	}
	r.proc, r.procRef = processFacet(t, w.d.env.Config, w.d.name, pid, restarts, w.d.s.clock.Now())
	r.running = true
	r.notify = notifyState{}
}

// spawned is the event "a process exists": its handle serves signals
// and figures until it exits, and its cgroup notes are status reasons.
func (r *specRun) spawned(t *dataspace.Turn, h *ProcHandle) {
	r.handle = h
	for _, n := range h.Notes {
		r.w.d.log.Warn().Int("pid", h.Pid).Msg(n)
	}
	if len(h.Notes) > 0 {
		r.w.rec.Kick(t)
	}
}

// signal is the message `<signal-service NAME SIGNAL>` (`syndicate
// kill`): SIGNAL goes to every running process of the daemon, through its
// cgroup or process group.
func (w *worker) signal(v preserves.Value) {
	n, ok := v.(preserves.Int)
	if !ok || n <= 0 || n > 64 {
		w.d.log.Warn().Str("signal", preserves.Show(v)).Msg("signal-service: not a signal number; ignored")
		return
	}
	sig := syscall.Signal(n)
	for r := range w.specs {
		if h := r.handle; h != nil {
			err := h.Signal(sig)
			w.d.log.Info().Int("pid", h.Pid).Str("signal", unix.SignalName(sig)).AnErr("error", err).Msg("signal sent by the operator")
		}
	}
}

// becameReady is the event "the running process counts as ready".
func (r *specRun) becameReady(t *dataspace.Turn) {
	r.w.d.logEvent(t, 0, logEvReady, "ready")
	if r.w.tally.specUp(&r.st) {
		r.w.rec.Kick(t)
	}
}

// stdio hands a Syndicate-protocol child's pipes to a relay (§5.7).
func (r *specRun) stdio(pid int, stdout, stdin *os.File) <-chan struct{} {
	w := r.w
	return attachRelay(r.procRef, w.d.env.Config, w.d.name, r.spec, w.d.log.With().Int("pid", pid).Logger(), stdout, stdin)
}

// exited is the event "a process is down; next is what follows".
func (r *specRun) exited(t *dataspace.Turn, e Exit, next Next) {
	w := r.w
	// §5.5: the process facet stops first (its process-status and
	// service-object go).
	if r.running {
		r.running = false
		t.StopFacet(r.proc)
	}
	r.handle = nil
	if r.spec.Schedule == nil && !r.spec.OnDemand {
		// A scheduled or on-demand spec stays ready between runs.
		w.tally.specDown(&r.st)
	}
	w.d.hist.exited(e, w.d.s.clock.Now(), next.Action == ActRestart)
	r.exitEvent(t, e, next)
	var ev *zerolog.Event
	if e.Success() {
		ev = w.d.log.Info()
	} else {
		ev = w.d.log.Error().Str("status", e.String())
	}
	ev = ev.Str("command", r.command).Int("pid", e.Pid).Str("next", next.Action.String())
	if next.Action == ActRestart {
		ev = ev.Dur("delay", next.Delay)
	}
	switch {
	case w.d.s.dryRun:
		ev.Msg("dry run: one-shot assumed to succeed")
	case next.Action == ActGiveUp && e.Failure != nil:
		// Never ready, or its watchdog missed, under policy never:
		// the status says why.
		ev.Msg("process failed; restart policy never: giving up")
		r.setCondition(t, services.PhaseGaveUp, []string{e.String()})
	case next.Action == ActGiveUp:
		// Logged once: the loop ends here, and the daemon reports
		// failed while this spec stays.
		ev.Int("restartLimit", r.spec.Limits.Limit).Dur("restartWindow", r.spec.Limits.Window).
			Msg("process exited; restart limit reached, giving up")
		reason := fmt.Sprintf("restart limit reached (%d restarts", r.spec.Limits.Limit)
		if r.spec.Limits.Window > 0 {
			reason += fmt.Sprintf(" within %v", r.spec.Limits.Window)
		}
		r.setCondition(t, services.PhaseGaveUp, []string{reason + "); last exit: " + e.String()})
	case e.SpawnErr != nil:
		// Its own state (operator issue): the daemon is failed, with
		// the exact cause, until a spawn succeeds.
		ev.Msg("cannot start process")
		r.setCondition(t, services.PhaseCannotStart, []string{"cannot start: " + e.String()})
	case next.Action == ActRestart:
		ev.Msg("process exited")
		r.setCondition(t, services.PhaseBackoff, nil)
	case next.Action == ActScheduled:
		ev.Time("nextRun", r.sched.next).Msg("scheduled run ended")
	default:
		ev.Msg("process exited")
	}
	if next.Action == ActComplete {
		w.tally.specCompleted(&r.st)
	}
	w.rec.Kick(t)
}

// setCondition records the spec's phase and reasons; cannot-start and
// gave-up make the daemon `failed` through the degrade capability.
func (r *specRun) setCondition(t *dataspace.Turn, phase preserves.Symbol, reasons []string) {
	r.phase, r.reasons = phase, reasons
	failed := phase == services.PhaseCannotStart || phase == services.PhaseGaveUp
	switch {
	case failed && r.degraded == 0:
		r.degraded = t.Assert(r.w.degrade, preserves.Bool(true))
	case !failed && r.degraded != 0:
		t.Retract(r.degraded)
		r.degraded = 0
	}
	r.w.rec.Kick(t)
}

// retracted is the event "the spec's facet stopped" (spec retracted,
// worker stopping).
func (r *specRun) retracted(t *dataspace.Turn) {
	if r.running {
		r.w.d.s.stopping.begin(r, r.w.d.name, &r.runDone)
	}
	if r.spec != nil {
		r.w.d.logEvent(t, 0, logEvWithdrawn, "spec withdrawn: "+preserves.Show(r.raw))
	}
	delete(r.w.specs, r)
	r.w.tally.specRemoved(&r.st)
	r.w.rec.Kick(t)
}

// tally counts, for one worker, the specs asserted, those not (yet) ready
// and those completed (§5.3): the daemon is ready when nothing is unready,
// and its worker ends once every spec has completed. Before the first
// sync round trip the worker counts as unready, so that a daemon with no
// spec is ready only once it is known to have none.
//
// Go deviation (operator issue): once a worker has had a spec, losing the
// last one does not make the daemon ready. The reference would assert
// `ready` there, so removing the file of a daemon that never became ready
// (or deleting a declaration its dependents wait for) would release its
// dependents; a daemon that was never declared is ready, as in the
// reference.
type tally struct {
	total, unready, completed int
	had                       bool // a spec has been added
}

// specState is one spec's part in the tally.
type specState struct {
	up   bool // its running process counts as ready
	done bool // it has completed
}

func newTally() tally { return tally{unready: 1} }

// synced: the initial round trip is done.
func (c *tally) synced() { c.unready-- }

// specAdded: a spec appeared; it is unready until its process is up.
func (c *tally) specAdded() { c.total++; c.unready++; c.had = true }

// specRemoved: a spec went; its readiness goes with it.
func (c *tally) specRemoved(s *specState) {
	c.specDown(s)
	c.total--
	c.unready--
	if s.done {
		s.done = false
		c.completed--
	}
}

// specUp: the spec's process counts as ready. It reports whether that
// changed anything.
func (c *tally) specUp(s *specState) bool {
	if s.up {
		return false
	}
	s.up = true
	c.unready--
	return true
}

// specDown: the spec's process is gone.
func (c *tally) specDown(s *specState) {
	if s.up {
		s.up = false
		c.unready++
	}
}

// specCompleted: the spec's process completed and is not restarted.
func (c *tally) specCompleted(s *specState) {
	if !s.done {
		s.done = true
		c.completed++
	}
}

func (c *tally) ready() bool        { return c.unready == 0 && (c.total > 0 || !c.had) }
func (c *tally) allCompleted() bool { return c.total > 0 && c.total == c.completed }
