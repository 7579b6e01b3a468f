package main

import (
	"context"
	"os"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/gatekeeper"
	shttp "github.com/syndicate-go/syndicate/services/http"
	"github.com/syndicate-go/syndicate/services/listener"
	"github.com/syndicate-go/syndicate/services/resolve"
)

// bootGatekeeper creates the primordial gatekeeper over the config
// dataspace (services spec §1.2 step 4.3).
func (s *server) bootGatekeeper(t *dataspace.Turn, env services.Env) *dataspace.Ref {
	return gatekeeper.New(t, env.Config, s.log)
}

// bootNetwork starts the gatekeeper and listener services, asserts the
// run-service requests of -p and -s (§1.1), and runs the --inferior relay.
func (s *server) bootNetwork(t *dataspace.Turn, env services.Env) error {
	if err := gatekeeper.Boot(t, env); err != nil {
		return err
	}
	if err := listener.BootWith(t, env, listener.Options{DryRun: s.opts.dryRun}); err != nil {
		return err
	}
	// The HTTP router and static file services (§8) bind no sockets of
	// their own: they serve requests arriving on relay listeners.
	if err := shttp.Boot(t, env); err != nil {
		return err
	}
	// Client-side resolution services run always (services spec §10),
	// except in a dry run, which must not reach outside the machine either.
	if s.opts.dryRun {
		s.log.Info().Msg("dry run: client-side resolution services (connect-transport, resolve-path) are off")
	} else if err := resolve.Boot(t, env); err != nil {
		return err
	}
	gk := dataspace.Embed(env.Gatekeeper)
	for _, port := range s.opts.ports {
		addr := preserves.Rec("tcp", preserves.String("0.0.0.0"), preserves.Int(int64(port)))
		t.Assert(env.Config, services.RunService(preserves.Rec("relay-listener", addr, gk)))
	}
	for _, path := range s.opts.sockets {
		addr := preserves.Rec("unix", preserves.String(path))
		t.Assert(env.Config, services.RunService(preserves.Rec("relay-listener", addr, gk)))
	}
	if s.opts.inferior && !s.opts.dryRun {
		s.spawnParent(t, env)
	}
	return nil
}

// spawnParent runs the `parent` relay over stdin/stdout with the config
// dataspace exported as oid 0 (§1.5). When the session ends the server keeps
// running (Q1).
func (s *server) spawnParent(t *dataspace.Turn, env services.Env) {
	log := s.log
	t.Spawn("parent", func(t *dataspace.Turn) error {
		conn, _ := relay.RunOverPipes(t, os.Stdin, os.Stdout, relay.Options{InitialRef: env.Config, Logger: log})
		t.LinkedTask("parent-disconnect", func(ctx context.Context) error {
			select {
			case <-conn.Done():
				if err := conn.Err(); err != nil {
					log.Info().Err(err).Msg("parent: disconnect")
				} else {
					log.Info().Msg("parent: disconnect")
				}
			case <-ctx.Done():
			}
			return nil
		})
		return nil
	})
}
