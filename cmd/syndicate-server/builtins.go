package main

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/config"
	"github.com/syndicate-go/syndicate/services/control"
	"github.com/syndicate-go/syndicate/services/daemon"
	"github.com/syndicate-go/syndicate/services/debt"
	"github.com/syndicate-go/syndicate/services/gatekeeper"
	shttp "github.com/syndicate-go/syndicate/services/http"
	"github.com/syndicate-go/syndicate/services/listener"
	"github.com/syndicate-go/syndicate/services/logger"
	"github.com/syndicate-go/syndicate/services/resolve"
	"github.com/syndicate-go/syndicate/services/timeline"
	"github.com/syndicate-go/syndicate/services/timer"
)

// primordial holds the control capabilities of the top-level actor's
// forwarders: the worker implementing the entity asserts itself there.
type primordial struct {
	gatekeeper, control *dataspace.Ref
}

// builtin is one built-in service: its name (`<builtin NAME>` in
// `syndicate status`) and the boot of its worker actor.
type builtin struct {
	name string
	boot func(t *dataspace.Turn, env services.Env) error
}

// builtins lists the built-in services this server runs, each in worker
// actors of its own under services.RunBuiltin.
func (s *server) builtins(w primordial) []builtin {
	o := s.opts
	bs := []builtin{
		{"dependencies", func(t *dataspace.Turn, env services.Env) error {
			return services.BootWith(t, env, services.BootOptions{StateDir: o.stateDir})
		}},
		{"daemons", func(t *dataspace.Turn, env services.Env) error {
			_, err := daemon.BootWith(t, env, daemon.Options{DryRun: o.dryRun || s.daemonDryRun, Cgroups: s.cgroups, StateDir: o.stateDir,
				Ledger: s.record, Leftovers: s.leftovers})
			return err
		}},
		{"config", config.Boot},
		{"logger", func(t *dataspace.Turn, env services.Env) error {
			return logger.BootWith(t, env, s.loggerOptions(s.stderr))
		}},
		{"debt", debt.Boot},
		{"timeline", timeline.Boot},
		// The timer protocol in $config, and <timer-driver #:DS>.
		{"timer", timer.Boot},
		{"gatekeeper", func(t *dataspace.Turn, env services.Env) error {
			// The primordial gatekeeper over the config dataspace (§1.2
			// step 4.3), reached through the forwarder, and the
			// <gatekeeper #:BS> service.
			t.Assert(w.gatekeeper, dataspace.Embed(gatekeeper.New(t, env.Config, s.log)))
			return gatekeeper.Boot(t, env)
		}},
		{"listeners", func(t *dataspace.Turn, env services.Env) error {
			return listener.BootWith(t, env, listener.Options{DryRun: o.dryRun})
		}},
		// The HTTP router and static file services (§8) bind no sockets of
		// their own: they serve requests arriving on relay listeners.
		{"http", shttp.Boot},
	}
	// Client-side resolution services run always (services spec §10),
	// except in a dry run, which must not reach outside the machine either.
	if o.dryRun {
		s.log.Info().Msg("dry run: client-side resolution services (connect-transport, resolve-path) are off")
	} else {
		bs = append(bs, builtin{"resolve", resolve.Boot})
	}
	if o.control {
		bs = append(bs, builtin{"control", func(t *dataspace.Turn, env services.Env) error {
			t.Assert(w.control, dataspace.Embed(t.Create(&control.Entity{Log: s.log, Exit: s.requestExit})))
			return nil
		}})
	}
	if o.dryRun {
		bs = append(bs, builtin{"dry-run", func(t *dataspace.Turn, env services.Env) error {
			s.startDryRun(t, env.Config, s.stdout)
			return nil
		}})
	} else if o.adminSocket != "-" {
		bs = append(bs, builtin{"admin", s.bootAdmin})
	}
	return append(bs, s.extraBuiltins...)
}
