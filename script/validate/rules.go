package validate

import (
	"errors"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// The schema rules, one function per schema definition. Each takes a value
// with positions (from value) and reports at the most specific position.

// label returns the record's label symbol and fields, if v is a record with
// a symbol label.
func label(v preserves.Value) (string, []preserves.Value, bool) {
	r, ok := v.(*preserves.Record)
	if !ok {
		return "", nil, false
	}
	s, ok := r.Label.(preserves.Symbol)
	if !ok {
		return "", nil, false
	}
	return string(s), r.Fields, true
}

// requests are the service requests (service.prs), by label, each checked
// by its generated parser.
var requests = map[string]func(preserves.Value) error{
	"require-service": wrap(service.ParseRequireService),
	"run-service":     wrap(service.ParseRunService),
	"restart-service": wrap(service.ParseRestartService),
	"service-state":   wrap(service.ParseServiceState),
	"service-object":  wrap(service.ParseServiceObject),
	"depends-on":      wrap(service.ParseServiceDependency),
}

// builtinNames are the built-in service names (services spec §2.7, plus
// the framework's milestones), by label, each checked by the parser the
// service runs; nil for the name checked here (milestone).
var builtinNames = map[string]func(preserves.Value) error{
	"milestone":         nil,
	"daemon":            wrap(externalservices.ParseDaemonName),
	"config-watcher":    wrap(internalservices.ParseConfigWatcher),
	"relay-listener":    wrap(transport.ParseRelayListener),
	"gatekeeper":        exact(1, internalservices.ParseGatekeeper),
	"http-router":       exact(1, internalservices.ParseHttpRouter),
	"http-static-files": func(v preserves.Value) error { _, _, err := internalservices.StaticFiles(v); return err },
	"debt-reporter":     wrap(internalservices.DebtPeriod),
	"timer-driver":      exact(1, syndicatego.ParseTimerDriver),
}

// declaration checks one asserted or sent value.
func (v *validator) declaration(val preserves.Value) {
	l, fields, ok := label(val)
	if !ok {
		return
	}
	if parse, ok := requests[l]; ok {
		v.parsed(val, l, parse)
	} else {
		switch {
		case l == "daemon" && len(fields) == 2:
			v.daemonSpec(fields[1], preserves.FieldPos(val.(*preserves.Record), 1))
		case l == "daemon" && len(fields) > 2:
			v.errorf(val, "daemon: expected <daemon ID SPEC> (or the service name <daemon ID>), not %d fields", len(fields))
		case l != "daemon":
			v.serviceName(val)
		}
		return
	}
	// The service names inside a parsed service request.
	for _, f := range fields {
		if l == "depends-on" {
			if d, _, ok := label(f); ok && d == "service-state" {
				f = f.(*preserves.Record).Fields[0]
			}
		}
		v.serviceName(f)
		if l != "depends-on" {
			break
		}
	}
}

// wrap adapts a generated parser to parsed.
func wrap[T any](parse func(preserves.Value) (T, error)) func(preserves.Value) error {
	return func(x preserves.Value) error { _, err := parse(x); return err }
}

// exact is wrap for a service name that takes exactly n fields, as the
// service requires (internalservices.Exact).
func exact[T any](n int, parse func(preserves.Value) (T, error)) func(preserves.Value) error {
	return func(x preserves.Value) error {
		if _, err := parse(x); err != nil {
			return err
		}
		return internalservices.Exact(x, n)
	}
}

// parsed runs a generated parser (the one the service runs) on val, its
// unknown parts schema wildcards, and reports its error at the part that
// is wrong.
func (v *validator) parsed(val preserves.Value, what string, parse func(preserves.Value) error) bool {
	err := parse(val)
	if err == nil {
		return true
	}
	var pe *schema.ParseError
	if !errors.As(err, &pe) {
		v.errorf(val, "%s: %v", what, err)
		return false
	}
	d := pe.Deepest()
	at := preserves.PosOf(val)
	if d.Pos.IsValid() {
		at = d.Pos
	}
	v.add(at, d, "%s: %s", what, d.Msg)
	return false
}

// serviceName checks a service name that has the shape of a built-in
// service; any other value is a legal (user-defined) name.
func (v *validator) serviceName(name preserves.Value) {
	l, f, ok := label(name)
	parse, builtin := builtinNames[l]
	switch {
	case !ok || !builtin:
	case parse != nil:
		v.parsed(name, l, parse)
	case l == "milestone" && len(f) != 1:
		v.errorf(name, "milestone: expected <milestone NAME>, not %d field(s)", len(f))
	}
}

// daemonSpec checks a DaemonProcessSpec with the elaboration the daemon
// service performs (externalservices.CheckSpec, its unknown parts
// wildcards): every problem it finds, an unknown key included, is an
// error here, carrying the problem's class.
func (v *validator) daemonSpec(spec preserves.Value, at preserves.Pos) {
	for _, p := range externalservices.CheckSpecAt(spec, at) {
		v.add(p.Pos, p, "%s", p.Msg)
		if errors.Is(p, externalservices.ErrUnknownIdentity) {
			// A user or group an earlier one-shot may create: at run
			// time its absence is a cannot-start reason.
			v.errs[len(v.errs)-1].Warning = true
		}
	}
}
