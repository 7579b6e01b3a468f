package daemon

import (
	"errors"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/ledger"
)

// ErrCrash is the error a daemon worker crashes with when a process under
// policy `all` fails (§5.5).
var ErrCrash = errors.New("daemon: process failed under restart policy all")

// Options configures the daemon service beyond the spec (tests, servers).
type Options struct {
	// Clock is the service's one time source (RealClock if nil): restart
	// delays, stop and readiness timeouts, log and state timestamps, and
	// the per-daemon supervisor's window (it replaces Supervise.Now).
	Clock Clock
	// Supervise tunes the per-daemon supervisor (zero: the spec's delays).
	// Its Now is ignored: the supervisor reads Clock.
	Supervise services.SuperviseOptions
	// DryRun starts no process (operator issue, `--dry-run`): each spec is
	// logged with what would be started (argv, env, dir) and counts as
	// started at once, so `started`, `ready` (readyOnStart) and, for a
	// one-shot, `complete` are reported and dependants proceed.
	DryRun bool
	// Cgroups, when set, runs each daemon process in a cgroup of its own
	// (cgroup.go); the server opens it once (cgroup.Open).
	Cgroups *cgroup.Manager
	// Ledger, when set, records every process started, so that the next
	// server can stop what this one leaves if it is killed (leftover.go).
	Ledger *ledger.Ledger
	// Leftovers are what the server stopped at start-up of the processes
	// a dead server left running; each is logged in its daemon's log
	// stream when the daemon is first wanted.
	Leftovers []ledger.Found
	// StateDir, when set, keeps the time of each scheduled daemon's last
	// run across server restarts, for catchUp (schedule.go).
	StateDir string
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
	clock  Clock
	sup    services.SuperviseOptions
	dryRun bool
	// stateDir is Options.StateDir.
	stateDir string
	out      dataspace.FacetRef // the service's boot facet: daemon output is logged from here
	order    *stopOrder         // dependents stop first (stop.go)
	// stopping holds <service-stopping NAME> (stopping.go).
	stopping *stoppingBoard
	// runs are the wanted daemons by key; touched only in turns of the
	// service's actor (output requests, status.go).
	runs map[string]*daemonRun
	// leftovers are Options.Leftovers by daemon ID (as text) not yet
	// logged in their daemon's stream; touched only in turns of the
	// service's actor.
	leftovers map[string][]ledger.Found
}

// BootWith is Boot with options. Every process runs in a linked task of
// its spec's facet and the task returns only once the process and the rest
// of its group are gone, so shutting the actor system down stops every
// daemon (SIGTERM, SIGKILL after stopTimeout) before System.Shutdown
// returns.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) (*Service, error) {
	clock := opts.Clock
	if clock == nil {
		clock = RealClock
	}
	s := &Service{runner: NewRunner(clock), clock: clock, sup: opts.Supervise, dryRun: opts.DryRun, stateDir: opts.StateDir}
	if opts.DryRun {
		s.runner = newDryRunner(clock)
	} else {
		s.runner.cgroups, s.runner.ledger = opts.Cgroups, opts.Ledger
	}
	s.sup.Now = clock.Now
	s.out = t.FacetRef()
	s.order = newStopOrder(clock)
	s.stopping = bootStoppingBoard(t, env.Config)
	s.order.track(t, env.Config)
	s.runs = map[string]*daemonRun{}
	s.leftovers = map[string][]ledger.Found{}
	for _, f := range opts.Leftovers {
		s.leftovers[f.Name] = append(s.leftovers[f.Name], f)
	}
	s.serveOutput(t, env.Config)
	s.serveStats(t, env.Config)
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
