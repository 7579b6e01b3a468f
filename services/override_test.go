package services

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

var overrideNow = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func bootAt(dir string) func(t *dataspace.Turn, env Env) error {
	return func(t *dataspace.Turn, env Env) error {
		return BootWith(t, env, BootOptions{StateDir: dir, Now: func() time.Time { return overrideNow }})
	}
}

func stopped(name preserves.Value) preserves.Value {
	return syndicatego.ServiceStopped{ServiceName: name, Since: StatusTime(overrideNow)}.ToValue()
}

// A stop holds the service (and, through its state, its dependents) down
// until start lifts it; both show as service-info.
func TestOperatorStopAndStart(t *testing.T) {
	h := newHarness(t, bootAt(""))
	a, b := sym("A"), sym("B")
	h.assert(RequireService(a))
	h.assert(RequireService(b))
	h.assert(DependsOn(b, ServiceState(a, StateReady)))
	h.waitHas(RunService(a), true)
	aReady := h.assert(ServiceState(a, StateReady)) // A's service, played by the test
	h.waitHas(RunService(b), true)

	h.send(h.env.Config, preserves.NewRecord(syndicatego.LabelStopService, a))
	h.waitHas(stopped(a), true)
	h.waitHas(RunService(a), false)
	require.True(t, h.has(ServiceInfo(a, Info{Phase: PhaseStopped, Since: overrideNow,
		Reasons: []string{"stopped by the operator at 2026-11-29T03:00:00Z (syndicate start lifts it)"}})))
	aReady() // A's service stops, so B loses what it waits for
	h.waitHas(RunService(b), false)
	require.True(t, h.has(RequireService(a)), "a stop does not touch the requirement")

	h.send(h.env.Config, preserves.NewRecord(syndicatego.LabelStartService, a))
	h.waitHas(stopped(a), false)
	h.waitHas(RunService(a), true)
	h.assert(ServiceState(a, StateReady))
	h.waitHas(RunService(b), true)
	require.False(t, h.rec.Find(func(v preserves.Value) bool {
		return strings.HasPrefix(preserves.FormatText(v), "<service-started")
	}), "A was required: start only lifted the stop")
}

// start of a service nothing requires requires it until the next stop.
func TestOperatorStartsUnrequiredService(t *testing.T) {
	h := newHarness(t, bootAt(""))
	c := preserves.Rec("daemon", sym("c"))
	h.send(h.env.Config, preserves.NewRecord(syndicatego.LabelStartService, c))
	h.waitHas(RequireService(c), true)
	h.waitHas(RunService(c), true)
	require.True(t, h.has(syndicatego.ServiceStarted{ServiceName: c, Since: StatusTime(overrideNow)}.ToValue()))

	h.send(h.env.Config, preserves.NewRecord(syndicatego.LabelStopService, c))
	h.waitHas(RequireService(c), false)
	h.waitHas(RunService(c), false)
	require.True(t, h.has(stopped(c)))
}

// With a state directory a stop outlives the server: the next one holds
// it from its first turn, so the service never starts.
func TestOperatorStopSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	a := preserves.Rec("daemon", preserves.String("my web"))
	h := newHarness(t, bootAt(dir))
	h.send(h.env.Config, preserves.NewRecord(syndicatego.LabelStopService, a))
	h.waitHas(stopped(a), true)
	file := filepath.Join(dir, OverridesFile)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, `<service-stopped <daemon "my web"> "2026-11-29T03:00:00Z">`+"\n", string(b))

	h2 := newHarness(t, bootAt(dir))
	h2.waitHas(stopped(a), true)
	h2.assert(RequireService(a))
	h2.settle()
	require.Zero(t, h2.countHistory("+"+preserves.FormatText(RunService(a))), "a stopped service never ran")
	h2.send(h2.env.Config, preserves.NewRecord(syndicatego.LabelStartService, a))
	h2.waitHas(RunService(a), true)
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	require.Empty(t, string(b))
}

// A damaged overrides file keeps what can be read, and says so.
func TestOperatorStopsFileDamaged(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, OverridesFile),
		[]byte(`<service-stopped web "2026-11-29T03:00:00Z"> <nonsense> <service-stopped`), 0o600))
	h := newHarness(t, bootAt(dir))
	h.waitHas(stopped(sym("web")), true)
	require.Contains(t, h.warns.String(), "not a stop")
	require.Contains(t, h.warns.String(), "damaged")
}
