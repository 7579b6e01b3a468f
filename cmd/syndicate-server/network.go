package main

import (
	"context"
	"os"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// requestListeners asserts the run-service requests of -p and -s (§1.1):
// relay listeners whose oid 0 is the primordial gatekeeper.
func (s *server) requestListeners(t *dataspace.Turn, env services.Env) {
	gk := dataspace.Embed(env.Gatekeeper)
	for _, a := range s.opts.listen() {
		t.Assert(env.Config, services.RunService(preserves.Rec("relay-listener", a.Value(), gk)))
	}
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
				log.Info().Err(conn.Err()).Msg("parent: disconnect") // Err(nil) adds no field
			case <-ctx.Done():
			}
			return nil
		})
		return nil
	})
}
