package main

import (
	"errors"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/services"
)

// bootGatekeeper creates the primordial gatekeeper over the config
// dataspace (services spec §1.2 step 4.3).
func (s *server) bootGatekeeper(t *dataspace.Turn, env services.Env) *dataspace.Ref {
	return nil
}

// bootNetwork starts the relay listeners of -p and -s and the --inferior
// relay.
func (s *server) bootNetwork(t *dataspace.Turn, env services.Env) error {
	if len(s.opts.ports) > 0 || len(s.opts.sockets) > 0 || s.opts.inferior {
		return errors.New("relay listeners are not available in this build")
	}
	return nil
}
