package daemon

import (
	"errors"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
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
	out    dataspace.FacetRef // the service's boot facet: daemon output is logged from here
	order  *stopOrder         // dependents stop first (stop.go)
	// runs are the wanted daemons by key; touched only in turns of the
	// service's actor (output requests, status.go).
	runs map[string]*daemonRun
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
	s.out = t.FacetRef()
	s.order = newStopOrder()
	s.order.track(t, env.Config)
	s.runs = map[string]*daemonRun{}
	s.serveOutput(t, env.Config)
	// Each daemon runs its own supervisors (one per restart), so the
	// requests are served with Run.
	services.Serve(t, env, services.Requests[preserves.Value]{
		Label:     externalservices.LabelDaemon,
		Parse:     externalservices.ParseDaemonName,
		Malformed: "malformed daemon service name: expected <daemon ID>",
		Run: func(t *dataspace.Turn, req services.Request[preserves.Value]) error {
			runDaemon(t, s, env, req)
			return nil
		},
	})
	return s, nil
}

// Wait waits until no process runner is active (all daemons stopped).
func (s *Service) Wait() { s.runner.Wait() }
