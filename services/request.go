package services

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// Service requests.
//
// Every service started by `<run-service <LABEL …>>` boots the same way:
// observe the requests of its label, parse each name, and either run the
// service for it or, for a name the service cannot use, say so — a warning
// naming the request and where a script asked for it (file:line:col), and
// `<service-state NAME failed>` so that dependants and `syndicate status`
// see it (Go deviation, services spec §0: never silently ignored). Serve
// is that boot, once. Names arrive as plain values (scripts strip their
// positions when they assert); the position of a request, or of the part
// of it that is wrong, comes from the position side table of package
// preserves (PosOf).

// Requests describes the requests of one service label.
type Requests[T any] struct {
	// Label is the label of the service names (`<LABEL …>`).
	Label preserves.Symbol
	// Parse checks a name and extracts what the service needs from it;
	// an error means the name is malformed.
	Parse func(name preserves.Value) (T, error)
	// Malformed is the warning logged for a name Parse rejects.
	Malformed string
	// NoState: the service reports no state at all (http-static-files,
	// §2.5), so a malformed name is only warned about.
	NoState bool
	// LogName, if set, is how log lines name the service of a well-formed
	// request (default: the name itself).
	LogName func(name preserves.Value, spec T) string
	// Boot runs the service of one well-formed request in a worker actor
	// of its own, named Worker(req), supervised with policy Always
	// (§2.3): a crashing worker is reported `failed` and restarted, with
	// Supervise's delays. The worker lives as long as the request.
	Boot func(t *dataspace.Turn, req Request[T]) error
	// Worker names the worker actor (default: `<LABEL NAME>`, WorkerName
	// of Label and the request's name).
	Worker    func(req Request[T]) string
	Supervise SuperviseOptions
	// Run, for a service that wants more than one supervised worker,
	// runs instead in the facet of the request itself, which stops when
	// the request is retracted; an error crashes the service's actor.
	Run func(t *dataspace.Turn, req Request[T]) error
}

// WorkerName is the usual worker actor name `<LABEL NAME>`.
func WorkerName(label preserves.Symbol, name preserves.Value) string {
	return preserves.Show(preserves.NewRecord(label, name))
}

// Request is one well-formed request.
type Request[T any] struct {
	Name preserves.Value // the service name, as asserted
	Spec T               // what Parse made of it
	Log  zerolog.Logger  // env.Logger naming the service
	// Degrade, in Boot, is the worker's degrade capability (Supervise):
	// an assertion there reports the service `failed` while the worker
	// lives, without a crash loop.
	Degrade *dataspace.Ref
}

// Serve observes the requests of r in env.Config (see Requests).
func Serve[T any](t *dataspace.Turn, env Env, r Requests[T]) {
	p := pattern.Rec(service.LabelRunService, pattern.Bind{Pattern: pattern.Rec(r.Label)})
	t.During(env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		name := caps[0]
		spec, err := r.Parse(name)
		if err != nil {
			ev := env.Logger.Warn().Str("service", preserves.Show(name)).Err(err)
			if pos := ErrorPos(err, name); pos.IsValid() {
				ev = ev.Str("pos", pos.String()) // where a script asked
			}
			ev.Msg(r.Malformed)
			if !r.NoState {
				t.Assert(env.Config, ServiceState(name, StateFailed))
			}
			return nil
		}
		logName := preserves.Show(name)
		if r.LogName != nil {
			logName = r.LogName(name, spec)
		}
		req := Request[T]{Name: name, Spec: spec, Log: env.Logger.With().Str("service", logName).Logger()}
		if r.Run != nil {
			return r.Run(t, req)
		}
		worker := WorkerName(r.Label, name)
		if r.Worker != nil {
			worker = r.Worker(req)
		}
		Supervise(t, env, name, Always, worker, func(t *dataspace.Turn, degrade *dataspace.Ref) error {
			req := req
			req.Degrade = degrade
			return r.Boot(t, req)
		}, r.Supervise)
		return nil
	})
}

// ErrorPos is the source position of what err (a failed parse of v)
// rejects: the position a *schema.ParseError found for the failing part,
// else where v itself was written; the zero Pos when neither is known.
func ErrorPos(err error, v preserves.Value) preserves.Pos {
	var pe *schema.ParseError
	if errors.As(err, &pe) {
		if p := pe.Deepest().Pos; p.IsValid() {
			return p
		}
	}
	return preserves.PosOf(v)
}

// ErrNotCapability: a service name's field that must be a capability is
// not one.
var ErrNotCapability = errors.New("not a capability")

// CapabilityName is the Parse of names `<LABEL #:CAP>` with exactly one
// field (the gatekeeper's, the HTTP router's): parse is the generated
// parser of the name, field picks CAP from its result.
func CapabilityName[T any](parse func(preserves.Value) (T, error), field func(T) any) func(preserves.Value) (*dataspace.Ref, error) {
	return func(name preserves.Value) (*dataspace.Ref, error) {
		req, err := parse(name)
		if err == nil {
			err = internalservices.Exact(name, 1)
		}
		if err != nil {
			return nil, err
		}
		r, ok := field(req).(*dataspace.Ref)
		if !ok || r == nil {
			return nil, fmt.Errorf("%s: field 0: %w", preserves.Show(name), ErrNotCapability)
		}
		return r, nil
	}
}
