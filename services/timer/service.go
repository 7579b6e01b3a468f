package timer

import (
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Options configure Boot.
type Options struct {
	// Clock is the time source (RealClock when nil).
	Clock Clock
}

// ServiceName returns `<timer-driver #:ds>`.
func ServiceName(ds *dataspace.Ref) preserves.Value {
	return syndicatego.TimerDriver{Dataspace: ds}.ToValue()
}

// Boot serves the timer protocol in env.Config and installs the
// `<timer-driver #:DS>` service.
func Boot(t *dataspace.Turn, env services.Env) error { return BootWith(t, env, Options{}) }

// BootWith is Boot with options.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) error {
	if env.Config == nil {
		return fmt.Errorf("timer: Boot needs a config dataspace")
	}
	clock := opts.Clock
	if clock == nil {
		clock = RealClock()
	}
	Serve(t, env.Config, clock, env.Logger.With().Str("service", "<builtin timer>").Logger())
	services.Serve(t, env, services.Requests[*dataspace.Ref]{
		Label:     syndicatego.LabelTimerDriver,
		Parse:     services.CapabilityName(syndicatego.ParseTimerDriver, func(d syndicatego.TimerDriver) any { return d.Dataspace }),
		Malformed: "timer: malformed <timer-driver #:dataspace> request",
		Boot: func(t *dataspace.Turn, req services.Request[*dataspace.Ref]) error {
			t.PreventInertCheck()
			Serve(t, req.Spec, clock, req.Log)
			t.Assert(env.Config, services.ServiceState(req.Name, services.StateReady))
			return nil
		},
	})
	return nil
}
