package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var (
	labelDaemon = preserves.Symbol("daemon")
	labelLog    = preserves.Symbol("log")
)

// ErrCrash is the error a daemon worker crashes with when a process under
// policy `all` fails (§5.5).
var ErrCrash = errors.New("daemon: process failed under restart policy all")

// Options configures the daemon service beyond the spec (tests, servers).
type Options struct {
	// Clock times process restarts (RealClock if nil).
	Clock Clock
	// Now stamps log records and drives the supervisor's window
	// (time.Now if nil).
	Now func() time.Time
	// Supervise tunes the per-daemon supervisor (zero: the spec's delays).
	Supervise services.SuperviseOptions
	// DryRun starts no process (operator issue, `--dry-run`): each spec is
	// logged with what would be started (argv, env, dir) and counts as
	// started at once, so `started`, `ready` (readyOnStart) and, for a
	// one-shot, `complete` are reported and dependants proceed.
	DryRun bool
}

// Boot installs the daemon service in the active facet with default
// options: during `<run-service <daemon ID>>` in env.Config it supervises
// the processes of every `<daemon ID SPEC>`.
func Boot(t *dataspace.Turn, env services.Env) error {
	_, err := BootWith(t, env, Options{})
	return err
}

// Service is a booted daemon service.
type Service struct {
	runner *Runner
	now    func() time.Time
	sup    services.SuperviseOptions
	dryRun bool
}

// BootWith is Boot with options. Every process runs in a linked task of
// its spec's facet and the task returns only once the process and the rest
// of its group are gone, so shutting the actor system down stops every
// daemon (SIGTERM, SIGKILL after stopTimeout) before System.Shutdown
// returns.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) (*Service, error) {
	s := &Service{runner: NewRunner(opts.Clock), now: opts.Now, sup: opts.Supervise, dryRun: opts.DryRun}
	if opts.DryRun {
		s.runner = newDryRunner(opts.Clock)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sup.Now == nil {
		s.sup.Now = s.now
	}
	p := pattern.Rec(services.LabelRunService, pattern.Bind{Pattern: pattern.Rec(labelDaemon)})
	t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		s.runDaemon(t, env, caps[0])
		return nil
	})
	return s, nil
}

// Wait waits until no process runner is active (all daemons stopped).
func (s *Service) Wait() { s.runner.Wait() }

// runDaemon runs in the facet of one `<run-service <daemon …>>`.
func (s *Service) runDaemon(t *dataspace.Turn, env services.Env, name preserves.Value) {
	// A name a script asserted carries its position: keep that for the
	// warning, and use the plain value from here on (it is asserted in
	// states and log records, and used in patterns).
	pos := posText(name)
	name = preserves.Strip(name)
	r := name.(*preserves.Record)
	if len(r.Fields) < 1 {
		// Go deviation (§0): a request of our label that the schema
		// rejects is reported, never silently ignored.
		env.Logger.Warn().Str("service", preserves.FormatText(name)).Str("pos", pos).
			Msg("malformed daemon service name: expected <daemon ID>")
		t.Assert(env.Config, services.ServiceState(name, services.StateFailed))
		return
	}
	id := r.Fields[0]
	log := env.Logger.With().Str("service", preserves.FormatText(name)).Logger()
	starts := newStartCounter()
	var sup dataspace.FacetID
	startSupervisor := func(t *dataspace.Turn) {
		sup, _ = t.Facet(func(t *dataspace.Turn) error {
			services.Supervise(t, env, name, services.OnErrorOnly, preserves.FormatText(name),
				func(t *dataspace.Turn, degrade *dataspace.Ref) error {
					return s.worker(t, env, log, name, id, degrade, starts)
				}, s.sup)
			return nil
		})
	}
	startSupervisor(t)
	// §2.4: restart-service tears the whole supervision facet down (every
	// process is stopped) and starts a brand-new supervisor at once.
	t.OnMessage(env.Config, pattern.Rec(services.LabelRestartService, literal(name)), func(t *dataspace.Turn, _ []preserves.Value) error {
		log.Info().Msg("restart requested")
		t.StopFacet(sup)
		startSupervisor(t)
		return nil
	})
}

// worker is the boot of a daemon's worker actor (§5.3).
func (s *Service) worker(t *dataspace.Turn, env services.Env, log zerolog.Logger, name, id preserves.Value, degrade *dataspace.Ref, starts *startCounter) error {
	total, unready, completed := 0, 1, 0
	var ready dataspace.Handle
	// Output is logged from the worker's boot facet, not the spec's, so
	// that the last lines of a process killed because its spec was
	// retracted are still delivered.
	outFacet := t.FacetRef()
	rec := services.NewReconciler(t, func(t *dataspace.Turn) error {
		switch {
		case unready == 0 && ready == 0:
			ready = t.Assert(env.Config, services.ServiceState(name, services.StateReady))
		case unready != 0 && ready != 0:
			t.Retract(ready)
			ready = 0
		}
		if total > 0 && total == completed {
			log.Info().Msg("all processes completed")
			t.StopRoot()
		}
		return nil
	})

	specPat := pattern.Rec(labelDaemon, literal(id), pattern.Capture())
	t.During(env.Config, specPat, func(t *dataspace.Turn, caps []preserves.Value) error {
		raw := caps[0]
		total++
		unready++
		rec.Kick(t)
		done := false // this spec has completed
		up := false   // its running process counts as ready (readyOnStart)
		t.OnStop(func(t *dataspace.Turn) error {
			total--
			unready--
			if done {
				completed--
			}
			if up {
				// Killed while running: its readiness goes with it.
				up = false
				unready++
			}
			rec.Kick(t)
			return nil
		})
		spec, err := ParseSpec(raw)
		if err != nil {
			ev := log.Warn().Str("spec", preserves.FormatText(raw)).Str("pos", posText(raw)).Err(err)
			if errors.Is(err, ErrNotASpec) {
				// Counters stay raised; the daemon reports failed while
				// this spec is asserted (Go deviation, §5.3).
				ev.Msg("invalid process specification")
				t.Assert(degrade, preserves.Bool(true))
				return nil
			}
			ev.Msg("invalid process configuration; crashing the daemon worker")
			return err
		}
		fr := t.FacetRef()
		command := fmt.Sprintf("%q", spec.Argv)
		key := specKey(raw)
		// The running process's facet (§5.4): set in the turn reporting
		// Started, read by the runner goroutine right after (Activate is
		// synchronous), stopped when the exit is handled.
		var proc dataspace.FacetID
		var procRef dataspace.FacetRef
		running := false
		t.LinkedTask("daemon process", func(ctx context.Context) error {
			out := s.runner.Run(ctx, spec, Events{
				Started: func(pid int) {
					fr.Activate(func(t *dataspace.Turn) error {
						if spec.ReadyOnStart && !up {
							up = true
							unready--
							rec.Kick(t)
						}
						restarts := starts.next(key)
						if s.dryRun {
							logDryRun(log, spec)
							return nil
						}
						proc, procRef = processFacet(t, env.Config, name, pid, restarts, s.now())
						running = true
						return nil
					})
				},
				Stdio: func(pid int, stdout, stdin *os.File) <-chan struct{} {
					return attachRelay(procRef, env.Config, name, spec, log.With().Int("pid", pid).Logger(), stdout, stdin)
				},
				Line: func(l Line) {
					outFacet.Activate(func(t *dataspace.Turn) error {
						t.Message(env.Log, LogRecord(l, name, s.now))
						return nil
					})
				},
				Exited: func(e Exit, next Next) {
					fr.Activate(func(t *dataspace.Turn) error {
						// §5.5: the process facet stops first (its
						// process-status and service-object go).
						if running {
							running = false
							t.StopFacet(proc)
						}
						if up {
							up = false
							unready++
						}
						var ev *zerolog.Event
						if e.Success() {
							ev = log.Info()
						} else {
							ev = log.Error().Str("status", e.String())
						}
						ev = ev.Str("command", command).Int("pid", e.Pid).Str("next", next.Action.String())
						if next.Action == ActRestart {
							ev = ev.Dur("delay", next.Delay)
						}
						switch {
						case s.dryRun:
							ev.Msg("dry run: one-shot assumed to succeed")
						case next.Action == ActGiveUp:
							// Logged once: the loop ends here, and the
							// daemon reports failed while this spec stays.
							ev.Int("restartLimit", spec.Limits.Limit).Dur("restartWindow", spec.Limits.Window).
								Msg("process exited; restart limit reached, giving up")
							t.Assert(degrade, preserves.Bool(true))
						default:
							ev.Msg("process exited")
						}
						if next.Action == ActComplete {
							done = true
							completed++
						}
						rec.Kick(t)
						return nil
					})
				},
			})
			switch out {
			case Crashed:
				return ErrCrash
			case Completed, GaveUp:
				return dataspace.ErrKeepFacet // the spec facet stays: completed or failed
			}
			return ctx.Err()
		})
		return nil
	})
	// After subscribing, one round trip removes the initial un-readiness.
	t.Sync(env.Config, func(t *dataspace.Turn) error {
		unready--
		rec.Kick(t)
		return nil
	})
	return nil
}

// LogRecord builds the `<log "TIMESTAMP" {pid, service, stream, line}>`
// message of §5.6 for one line of output.
func LogRecord(l Line, service preserves.Value, now func() time.Time) preserves.Value {
	var line preserves.Value
	if utf8.Valid(l.Text) {
		line = preserves.String(l.Text)
	} else {
		line = preserves.ByteString(l.Text)
	}
	var pid preserves.Value = preserves.Symbol("unknown")
	if l.Pid > 0 {
		pid = preserves.Int(l.Pid)
	}
	ts := l.Time
	if ts.IsZero() {
		ts = now()
	}
	return preserves.Rec(string(labelLog), preserves.String(Timestamp(ts)), preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("pid"), Value: pid},
		preserves.DictEntry{Key: preserves.Symbol("service"), Value: service},
		preserves.DictEntry{Key: preserves.Symbol("stream"), Value: preserves.Symbol(l.Stream.String())},
		preserves.DictEntry{Key: preserves.Symbol("line"), Value: line},
	))
}

// Timestamp renders t as RFC 3339 in UTC with a `+00:00` offset and 0, 3,
// 6 or 9 fractional digits as needed (services spec §4.5).
func Timestamp(t time.Time) string {
	t = t.UTC()
	ns := t.Nanosecond()
	layout := "2006-01-02T15:04:05"
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		layout += ".000"
	case ns%1_000 == 0:
		layout += ".000000"
	default:
		layout += ".000000000"
	}
	return t.Format(layout) + "+00:00"
}

// literal is the pattern matching v field by field, or exactly when v
// cannot be lifted (it contains a set).
func literal(v preserves.Value) pattern.Pattern {
	if p, err := pattern.Lift(v); err == nil {
		return p
	}
	return pattern.Lit{Value: v}
}

func posText(v preserves.Value) string {
	return preserves.PosOf(v).String()
}
