package config

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Symbols of the service vocabulary (service.prs, internalServices.prs).
var (
	symRunService     = preserves.Symbol("run-service")
	symRestartService = preserves.Symbol("restart-service")
	symServiceState   = preserves.Symbol("service-state")
	symConfigWatcher  = preserves.Symbol("config-watcher")
	symConfigRescan   = preserves.Symbol("config-rescan")

	stateStarted  = preserves.Symbol("started")
	stateReady    = preserves.Symbol("ready")
	stateFailed   = preserves.Symbol("failed")
	stateComplete = preserves.Symbol("complete")
)

// Options tunes the service; the zero value means the spec's behaviour.
type Options struct {
	// Watch tunes the filesystem watcher (its Logger is ignored: the
	// service's logger is used).
	Watch WatchOptions
	// RestartDelay and RepeatedRestartDelay are the supervisor's delays
	// after a worker terminates: the second applies when another termination
	// happened within RestartWindow (§2.3: 200 ms, 10 s, 5 s).
	RestartDelay, RepeatedRestartDelay, RestartWindow time.Duration

	runner runner // tests substitute the script layer; nil means compile+vm
}

func (o Options) withDefaults() Options {
	if o.RestartDelay <= 0 {
		o.RestartDelay = 200 * time.Millisecond
	}
	if o.RepeatedRestartDelay <= 0 {
		o.RepeatedRestartDelay = 10 * time.Second
	}
	if o.RestartWindow <= 0 {
		o.RestartWindow = 5 * time.Second
	}
	if o.runner == nil {
		o.runner = scriptRunner{}
	}
	return o
}

// Boot installs the config watcher service in env.Config: for every
// `<run-service <config-watcher PATH ENV>>` it runs a supervised watcher of
// PATH whose scripts see the bindings of ENV (§3).
func Boot(t *dataspace.Turn, env services.Env) error {
	return BootWith(t, env, Options{})
}

// BootWith is Boot with explicit options.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) error {
	if env.Config == nil {
		return fmt.Errorf("config: Boot needs a config dataspace")
	}
	opts = opts.withDefaults()
	// Match every <config-watcher …> (by extensible matching, any arity) so
	// that malformed ones are reported rather than silently missed.
	p := pattern.Rec(symRunService, pattern.Bind{Pattern: pattern.Rec(symConfigWatcher)})
	t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		name := preserves.Strip(caps[0])
		log := env.Logger.With().Str("service", preserves.FormatText(name)).Logger()
		path, bindings, err := parseName(name)
		if err != nil {
			// Go deviation (§0): a malformed request is reported, not
			// silently ignored.
			log.Warn().Err(err).Msg("malformed config-watcher request")
			t.Assert(env.Config, serviceState(name, stateFailed))
			return nil
		}
		s := &supervisor{
			name: name,
			cfg:  env.Config,
			log:  log,
			opts: opts,
			boot: func(t *dataspace.Turn) error {
				w := &worker{
					name: name,
					path: path,
					env:  bindings,
					cfg:  env.Config,
					log:  log,
					opts: opts,
				}
				return w.boot(t)
			},
			actorName: preserves.FormatText(preserves.Rec("config", preserves.String(path))),
		}
		s.start(t)
		return nil
	})
	return nil
}

// RescanMessage returns `<config-rescan>`: sent as a message to the config
// dataspace, it makes every running config watcher rescan its whole tree at
// once (what the server does on SIGHUP, services spec §1.2). Unlike
// restart-service, a rescan keeps every script whose content is unchanged
// running (§3.4); it picks up what filesystem events cannot show, such as an
// edit to the target of a symlinked script.
func RescanMessage() preserves.Value { return preserves.NewRecord(symConfigRescan) }

// parseName checks `<config-watcher PATH ENV>` against its schema: PATH a
// string, ENV a dictionary with symbol keys (extra trailing fields are
// tolerated, as schema parsing does).
func parseName(name preserves.Value) (string, map[string]preserves.Value, error) {
	r, ok := name.(*preserves.Record)
	if !ok || len(r.Fields) < 2 {
		return "", nil, fmt.Errorf("config: not <config-watcher PATH ENV>: %v", name)
	}
	path, ok := r.Fields[0].(preserves.String)
	if !ok {
		return "", nil, fmt.Errorf("config: PATH is not a string: %v", r.Fields[0])
	}
	d, ok := r.Fields[1].(*preserves.Dictionary)
	if !ok {
		return "", nil, fmt.Errorf("config: ENV is not a dictionary: %v", r.Fields[1])
	}
	env := make(map[string]preserves.Value, d.Len())
	for _, e := range d.Entries() {
		k, ok := e.Key.(preserves.Symbol)
		if !ok {
			return "", nil, fmt.Errorf("config: ENV key is not a symbol: %v", e.Key)
		}
		env[string(k)] = e.Value
	}
	return string(path), env, nil
}

func serviceState(name, state preserves.Value) preserves.Value {
	return preserves.NewRecord(symServiceState, name, state)
}

// supervisor runs the worker actor with policy "always" and keeps exactly
// one `<service-state NAME S>` assertion up to date (§2.3). It lives in the
// facet of the `run-service` assertion: when that is withdrawn, the facet
// stops, the link stops the worker, pending restarts are cancelled and the
// state assertion is retracted. All fields are touched only in turns of the
// owning actor.
type supervisor struct {
	name      preserves.Value
	cfg       *dataspace.Ref
	log       zerolog.Logger
	opts      Options
	boot      func(t *dataspace.Turn) error
	actorName string

	state dataspace.Handle
	exits []time.Time // worker terminations within the restart window
}

func (s *supervisor) setState(t *dataspace.Turn, st preserves.Value) {
	// Update asserts the new state before retracting the old one (§2.3).
	t.Update(&s.state, s.cfg, serviceState(s.name, st))
}

// start spawns one worker incarnation, linked to a facet of its own so that
// the worker's termination stops only that facet, whose stop action then
// decides about the restart in the supervisor's facet.
func (s *supervisor) start(t *dataspace.Turn) {
	s.setState(t, stateStarted)
	_, _ = t.Facet(func(t *dataspace.Turn) error {
		child := t.SpawnLink(s.actorName, s.boot)
		t.OnStop(func(t *dataspace.Turn) error {
			if child.Alive() {
				// The supervisor itself is stopping; the link stops the
				// worker and nothing is restarted.
				return nil
			}
			s.exited(t, child)
			return nil
		})
		return nil
	})
}

func (s *supervisor) exited(t *dataspace.Turn, child *dataspace.Actor) {
	if err := child.Err(); err != nil {
		s.log.Error().Err(err).Msg("config watcher failed")
		s.setState(t, stateFailed)
	} else {
		s.setState(t, stateComplete)
	}
	now := time.Now()
	keep := s.exits[:0]
	for _, e := range s.exits {
		if now.Sub(e) < s.opts.RestartWindow {
			keep = append(keep, e)
		}
	}
	s.exits = append(keep, now)
	delay := restartDelay(len(s.exits), s.opts)
	s.log.Debug().Dur("delay", delay).Msg("restarting config watcher")
	t.After(delay, func(t *dataspace.Turn) error {
		s.start(t)
		return nil
	})
}

// restartDelay is the §2.3 rule: more than one termination remembered in the
// window → the long delay.
func restartDelay(recent int, o Options) time.Duration {
	if recent > 1 {
		return o.RepeatedRestartDelay
	}
	return o.RestartDelay
}
