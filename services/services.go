// Package services is the service framework of the server (services spec
// §2): the vocabulary of service.prs, the dependency tracker that turns
// `<require-service NAME>` into `<run-service NAME>` once NAME's
// `depends-on` dependees are in their awaited states, the supervisor that
// runs a service's worker actor with the restart rules of §2.3 and reports
// `<service-state NAME S>`, and built-in milestones. It is also the home of
// the status model: [StatusModel] (statusmodel.go) reads the service
// vocabulary (required, running, states, dependencies, cycles) for
// `syndicate status`, `syndicate-server --dry-run` and the run-time
// diagnostics (diagnose.go: a service nothing provides, a dependency cycle,
// warned about and shown as status reasons after a grace period), and
// status.go holds `<service-info NAME INFO>`, what `syndicate status` shows
// beyond the state.
//
// The supervisor is a state machine as a type (supervise.go): [Supervisor]
// holds its state in fields with one method per event, and its decisions
// are a plain value tested with a transition table.
//
// Every service package (daemon, config watcher, gatekeeper, listeners)
// exposes `Boot(t *dataspace.Turn, env services.Env) error` and reacts to
// `<run-service NAME>` assertions in env.Config, most through [Serve]
// (request.go): parse the name, or warn with the place a script asked and
// report `failed`. Services never import each other: they coordinate only
// through assertions in the config dataspace.
//
// Values reach the services plain: scripts strip their annotations where
// their values enter the dataspace and keep positions in the side table
// of package preserves, so a service tests a value's type directly and
// names a place with preserves.PosOf / ItemPos (or the Pos of a
// schema.ParseError, which the generated parsers locate the same way).
//
// # Containment
//
// The server runs each built-in service in worker actors of its own under
// [RunBuiltin] (a [Supervise] supervisor with policy Always), named
// `<builtin NAME>`; stable capabilities for entities in those actors (the
// primordial gatekeeper, `$control`) are [NewForwarder]s. A crash is
// reported by [ReportFailure] with the offending value and its source
// position and contained in the crashing actor; cmd/syndicate-server's
// package doc draws the whole actor layout.
//
// # Facet ownership
//
// An assertion belongs to the facet that was active when it was made, and a
// stop action runs with the stopped facet's parent active. Bookkeeping that
// is changed from many nested facets (the tracker's obstacle count, a
// daemon's ready counters) therefore does not assert directly: it kicks a
// [Reconciler], an entity living in the owning facet, which recomputes the
// assertion in a turn of its own with the right facet active.
package services

import (
	"cmp"
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
)

// The states of service.prs (its labels are service.Label…), as the
// symbols they are on the wire.
var (
	StateStarted  = stateSymbol(service.StateStarted{})
	StateReady    = stateSymbol(service.StateReady{})
	StateFailed   = stateSymbol(service.StateFailed{})
	StateComplete = stateSymbol(service.StateComplete{})
)

func stateSymbol(s service.State) preserves.Symbol { return s.ToValue().(preserves.Symbol) }

// RequireService returns `<require-service name>`.
func RequireService(name preserves.Value) preserves.Value {
	return preserves.NewRecord(service.LabelRequireService, name)
}

// RunService returns `<run-service name>`.
func RunService(name preserves.Value) preserves.Value {
	return preserves.NewRecord(service.LabelRunService, name)
}

// ServiceState returns `<service-state name state>`.
func ServiceState(name, state preserves.Value) preserves.Value {
	return preserves.NewRecord(service.LabelServiceState, name, state)
}

// ServiceObject returns `<service-object name object>`.
func ServiceObject(name, object preserves.Value) preserves.Value {
	return preserves.NewRecord(service.LabelServiceObject, name, object)
}

// DependsOn returns `<depends-on depender dependee>`.
func DependsOn(depender, dependee preserves.Value) preserves.Value {
	return preserves.NewRecord(service.LabelDependsOn, depender, dependee)
}

// RestartService returns the message `<restart-service name>`.
func RestartService(name preserves.Value) preserves.Value {
	return preserves.NewRecord(service.LabelRestartService, name)
}

// Boot starts the framework's permanent observers in env.Config: the
// dependency tracker (§2.2), built-in milestones (§2.7), the diagnostics
// and the operator's overrides (override.go).
func Boot(t *dataspace.Turn, env Env) error { return BootWith(t, env, BootOptions{}) }

// BootWith is Boot with options.
func BootWith(t *dataspace.Turn, env Env, opts BootOptions) error {
	bootOverrides(t, env, opts)
	BootDependencies(t, env)
	BootMilestones(t, env)
	bootDiagnostics(t, env, cmp.Or(opts.DiagnosisGrace, DiagnosisGrace))
	return nil
}

// BootMilestones makes `<milestone NAME>` a built-in service: on
// `<run-service <milestone NAME>>` it asserts `started` and `ready` for it,
// exactly like the boot-script rule of §2.7 (the two coexist: the dataspace
// merges the identical assertions).
func BootMilestones(t *dataspace.Turn, env Env) {
	p := pattern.Rec(service.LabelRunService, pattern.Bind{Pattern: pattern.Rec(preserves.Symbol("milestone"), pattern.Discard{})})
	t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		t.Assert(env.Config, ServiceState(caps[0], StateStarted))
		t.Assert(env.Config, ServiceState(caps[0], StateReady))
		return nil
	})
}

// StopOnRestart, called in a supervised worker, makes the message
// `<restart-service name>` stop the worker's actor normally; under policy
// Always its supervisor then reports `complete` and restarts it after the
// usual delay (§2.4: config watcher, relay listeners).
func StopOnRestart(t *dataspace.Turn, env Env, name preserves.Value) {
	t.OnMessage(env.Config, pattern.Rec(service.LabelRestartService, Literal(name)), func(t *dataspace.Turn, _ []preserves.Value) error {
		t.StopRoot()
		return nil
	})
}

// Reconciler recomputes some derived state in the facet that created it.
// Kick may be called from any facet of the same actor during a turn; the
// reconcile function then runs once, in a later turn, with the creating
// facet active (so what it asserts belongs to that facet). Kicks before the
// reconcile turn are coalesced.
type Reconciler struct {
	ref     *dataspace.Ref
	pending bool
}

type reconcileEntity struct {
	dataspace.BaseEntity
	r  *Reconciler
	fn func(t *dataspace.Turn) error
}

func (e *reconcileEntity) Message(t *dataspace.Turn, _ preserves.Value) error {
	e.r.pending = false
	return e.fn(t)
}

// NewReconciler creates a Reconciler in the active facet.
func NewReconciler(t *dataspace.Turn, fn func(t *dataspace.Turn) error) *Reconciler {
	r := &Reconciler{}
	r.ref = t.Create(&reconcileEntity{r: r, fn: fn})
	return r
}

// Kick schedules a reconcile turn unless one is pending.
func (r *Reconciler) Kick(t *dataspace.Turn) {
	if !r.pending {
		r.pending = true
		t.Message(r.ref, preserves.Bool(true))
	}
}
