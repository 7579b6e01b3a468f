package services

import (
	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
)

// Env is what every service's Boot receives: the server's well-known
// dataspaces and entities (services spec §1.3, §1.4) and the logger to use.
type Env struct {
	Config, Log, Gatekeeper, Control *dataspace.Ref
	Logger                           zerolog.Logger
}
