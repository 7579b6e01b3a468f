package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Options tunes the service; the zero value means the spec's behaviour.
type Options struct {
	// Watch tunes the filesystem watcher (its Logger is ignored: the
	// service's logger is used).
	Watch WatchOptions
	// Supervise tunes the supervisor's restart delays (§2.3: 200 ms, or 10 s
	// after repeated terminations).
	Supervise services.SuperviseOptions
	// PathPoll is how often a watcher whose PATH does not exist looks
	// for it again. Default 1 s.
	PathPoll time.Duration
	polled   func() // tests: called after each look for a missing PATH
}

// ErrNoConfig is returned by Boot when env has no config dataspace.
var ErrNoConfig = errors.New("config: Boot needs a config dataspace")

// Boot installs the config watcher service in env.Config: for every
// `<run-service <config-watcher PATH ENV>>` it runs a supervised watcher of
// PATH whose scripts see the bindings of ENV (§3).
func Boot(t *dataspace.Turn, env services.Env) error {
	return BootWith(t, env, Options{})
}

// BootWith is Boot with explicit options.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) error {
	if env.Config == nil {
		return ErrNoConfig
	}
	// Every <config-watcher …> is matched (by extensible matching, any
	// arity) so that malformed ones are reported rather than silently
	// missed.
	services.Serve(t, env, services.Requests[watcherRequest]{
		Label:     internalservices.LabelConfigWatcher,
		Parse:     parseName,
		Malformed: "malformed config-watcher request",
		// Log lines name the watcher by its path only: the full name
		// carries the environment dictionary, refs included, which made
		// every routine line hundreds of bytes long (issue 15).
		LogName: func(_ preserves.Value, w watcherRequest) string {
			return preserves.Show(preserves.Rec("config-watcher", preserves.String(w.path)))
		},
		// §3.1: a supervisor with policy "always", state reported for the
		// full name, running the worker actor `<config PATH>`.
		Supervise: opts.Supervise,
		Worker: func(req services.Request[watcherRequest]) string {
			return services.WorkerName("config", preserves.String(req.Spec.path))
		},
		Boot: func(t *dataspace.Turn, req services.Request[watcherRequest]) error {
			w := &worker{
				name:    req.Name,
				path:    req.Spec.path,
				env:     req.Spec.env,
				cfg:     env.Config,
				svc:     env,
				log:     req.Log,
				opts:    opts,
				degrade: req.Degrade,
			}
			return w.boot(t)
		},
	})
	return nil
}

// RescanMessage returns `<config-rescan>`: sent as a message to the config
// dataspace, it makes every running config watcher rescan its whole tree at
// once (what the server does on SIGHUP, services spec §1.2). Unlike
// restart-service, a rescan keeps every script whose content is unchanged
// running (§3.4); it picks up what filesystem events cannot show, such as an
// edit to the target of a symlinked script. It is our extension
// (syndicatego.ConfigRescan).
func RescanMessage() preserves.Value { return syndicatego.ConfigRescan{}.ToValue() }

// parseName reads `<config-watcher PATH ENV>` with the generated parser of
// internalServices.prs (the one `--check` uses): PATH a string, ENV a
// dictionary with symbol keys, extra trailing fields tolerated.
func parseName(name preserves.Value) (watcherRequest, error) {
	w, err := internalservices.ParseConfigWatcher(name)
	if err != nil {
		return watcherRequest{}, fmt.Errorf("config: %w", err)
	}
	env := make(map[string]preserves.Value, len(w.Env))
	for k, v := range w.Env {
		env[string(k)] = v
	}
	return watcherRequest{w.Path, env}, nil
}

// watcherRequest is a parsed `<config-watcher PATH ENV>`.
type watcherRequest struct {
	path string
	env  map[string]preserves.Value
}
