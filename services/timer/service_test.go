package timer

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// The service as a script meets it: `<run-service <timer-driver $ds>>`
// (what require-service leads to) serves $ds and reports ready; $config is
// served from the start; a name without a capability fails.
func TestTimerDriverService(t *testing.T) {
	t.Parallel()
	sys := dataspacetest.NewSystem(t, dataspace.Options{})
	warns := &testutil.Buffer{}
	cfgRec, dsRec, bad := dataspacetest.NewCaptureRecorder(), dataspacetest.NewRecorder(), dataspacetest.NewRecorder()
	names := make(chan preserves.Value, 1)
	sys.Spawn("test", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		cfg := t.Create(dataspace.NewDataspace())
		ds := t.Create(dataspace.NewDataspace())
		env := services.Env{Config: cfg, Logger: zerolog.New(warns)}
		if err := BootWith(t, env, Options{Clock: newFakeClock()}); err != nil {
			return err
		}
		t.Assert(cfg, dataspace.Observe(pattern.Capture(), t.Create(cfgRec)))
		name := ServiceName(ds)
		names <- name
		t.Assert(cfg, preserves.NewRecord(service.LabelRunService, name))
		t.Assert(ds, dataspace.Observe(pattern.MustLift(laterThan(preserves.NewDouble(1))), t.Create(dsRec)))
		t.Assert(cfg, dataspace.Observe(pattern.MustLift(laterThan(preserves.Int(2))), t.Create(bad)))
		t.Assert(cfg, preserves.NewRecord(service.LabelRunService, preserves.NewRecord(preserves.Symbol("timer-driver"), preserves.Int(5))))
		return nil
	})
	name := <-names
	testutil.WaitFor(t, "the driver ready", func() bool { return cfgRec.Has(services.ServiceState(name, services.StateReady)) })
	testutil.WaitFor(t, "later-than in the driven dataspace", func() bool { return len(dsRec.Present()) == 1 })
	testutil.WaitFor(t, "later-than in $config", func() bool { return len(bad.Present()) == 1 })
	bogus := preserves.NewRecord(preserves.Symbol("timer-driver"), preserves.Int(5))
	testutil.WaitFor(t, "the malformed request failed", func() bool {
		return cfgRec.Has(services.ServiceState(bogus, services.StateFailed)) && warns.Has("malformed <timer-driver")
	})
}
