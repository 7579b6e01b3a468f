package validate

import (
	"errors"
	"slices"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// The schema rules, one function per schema definition. Each takes a value
// with positions (from value) and reports at the most specific position.

// label returns the record's label symbol and fields, if v is a record with
// a symbol label.
func label(v preserves.Value) (string, []preserves.Value, bool) {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return "", nil, false
	}
	s, ok := preserves.Unwrap(r.Label).(preserves.Symbol)
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
// service runs; nil for the names checked here (daemon, milestone).
var builtinNames = map[string]func(preserves.Value) error{
	"daemon": nil, "milestone": nil,
	"config-watcher":    wrap(internalservices.ParseConfigWatcher),
	"relay-listener":    wrap(transport.ParseRelayListener),
	"gatekeeper":        exact(1, internalservices.ParseGatekeeper),
	"http-router":       exact(1, internalservices.ParseHttpRouter),
	"http-static-files": func(v preserves.Value) error { _, _, err := internalservices.StaticFiles(v); return err },
	"debt-reporter":     wrap(internalservices.DebtPeriod),
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
			v.daemonSpec(fields[1])
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
				f = preserves.Unwrap(f).(*preserves.Record).Fields[0]
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
	at := val
	if d.Pos.IsValid() {
		at = &preserves.Annotated{Pos: d.Pos, Item: preserves.Bool(false)}
	}
	v.errorf(at, "%s: %s", what, d.Msg)
	return false
}

// arity reports (and returns false) when fields does not have n elements.
func (v *validator) arity(at preserves.Value, l string, fields []preserves.Value, n int, shape string) bool {
	if len(fields) == n {
		return true
	}
	v.errorf(at, "%s: expected %s, not %d field(s)", l, shape, len(fields))
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
	case l == "daemon" && len(f) != 1:
		v.errorf(name, "daemon: a daemon service is named <daemon ID>, with one field, not %d (the spec goes in a separate <daemon ID SPEC> assertion)", len(f))
	case l == "milestone" && len(f) != 1:
		v.errorf(name, "milestone: expected <milestone NAME>, not %d field(s)", len(f))
	}
}

func (v *validator) str(x preserves.Value, what string) bool {
	if isUnknown(x) {
		return true
	}
	if _, ok := preserves.Unwrap(x).(preserves.String); !ok {
		v.errorf(x, "%s must be a string, not %s", what, render(x))
		return false
	}
	return true
}

// daemonSpec checks a DaemonProcessSpec.
func (v *validator) daemonSpec(spec preserves.Value) {
	if isUnknown(spec) {
		return
	}
	switch x := preserves.Unwrap(spec).(type) {
	case preserves.String:
		return
	case preserves.Sequence:
		v.commandLine(spec, "daemon")
		return
	case *preserves.Record:
		if l, f, ok := label(spec); ok && l == "one-shot" {
			if v.arity(spec, "one-shot", f, 1, "<one-shot COMMAND>") {
				v.commandLine(f[0], "one-shot")
			}
			return
		}
	case *preserves.Dictionary:
		v.fullSpec(spec, x)
		return
	}
	v.errorf(spec, "daemon: the spec must be a command string, [PROGRAM ARG ...], <one-shot COMMAND> or a dictionary, not %s", render(spec))
}

// commandLine checks a CommandLine: a shell string, or a non-empty sequence
// of strings.
func (v *validator) commandLine(c preserves.Value, what string) {
	if isUnknown(c) {
		return
	}
	switch x := preserves.Unwrap(c).(type) {
	case preserves.String:
	case preserves.Sequence:
		if len(x) == 0 {
			v.errorf(c, "%s: the command line is empty: it needs at least a program", what)
			return
		}
		for i, el := range x {
			if isUnknown(el) {
				continue
			}
			if _, ok := preserves.Unwrap(el).(preserves.String); !ok {
				if i == 0 {
					v.errorf(el, "%s: the program must be a string, not %s", what, render(el))
				} else {
					v.errorf(el, "%s: argument %d must be a string, not %s", what, i, render(el))
				}
			}
		}
	default:
		v.errorf(c, "%s: the command line must be a shell string or [PROGRAM ARG ...], not %s", what, render(c))
	}
}

// fullSpec checks a dictionary daemon spec (FullDaemonProcess plus our
// extension keys).
func (v *validator) fullSpec(spec preserves.Value, d *preserves.Dictionary) {
	get := func(key string) (preserves.Value, preserves.Value, bool) {
		for _, e := range d.Entries() {
			if s, ok := preserves.Unwrap(e.Key).(preserves.Symbol); ok && string(s) == key {
				return e.Key, e.Value, true
			}
		}
		return nil, nil, false
	}
	for _, e := range d.Entries() {
		k, ok := preserves.Unwrap(e.Key).(preserves.Symbol)
		if !ok {
			v.errorf(e.Key, "daemon: spec keys are symbols, not %s", render(e.Key))
			continue
		}
		if !slices.Contains(DaemonSpecKeys, string(k)) {
			v.errorf(e.Key, "%s", UnknownKeyMessage(string(k)))
		}
	}
	if _, argv, ok := get("argv"); ok {
		v.commandLine(argv, "argv")
	} else {
		v.errorf(spec, "daemon: the spec dictionary has no argv (the command to run)")
	}
	if _, x, ok := get("dir"); ok {
		v.str(x, "dir")
	}
	for _, k := range []string{"clearEnv", "readyOnStart"} {
		if _, x, ok := get(k); ok && !isUnknown(x) {
			if _, ok := preserves.Unwrap(x).(preserves.Bool); !ok {
				v.errorf(x, "%s must be #t or #f, not %s", k, render(x))
			}
		}
	}
	if _, x, ok := get("env"); ok && !isUnknown(x) {
		env, ok := preserves.Unwrap(x).(*preserves.Dictionary)
		if !ok {
			v.errorf(x, "env must be a dictionary of variables to strings (or #f to remove), not %s", render(x))
		} else {
			for _, e := range env.Entries() {
				switch k := preserves.Unwrap(e.Key).(type) {
				case preserves.String:
					if p := EnvNameProblem(string(k)); p != "" {
						v.errorf(e.Key, "%s", p)
					}
				case preserves.Symbol:
					if p := EnvNameProblem(string(k)); p != "" {
						v.errorf(e.Key, "%s", p)
					}
				default:
					v.errorf(e.Key, "env: variable name %s must be a string or a symbol", render(e.Key))
				}
				if isUnknown(e.Value) {
					continue
				}
				switch val := preserves.Unwrap(e.Value).(type) {
				case preserves.String:
				case preserves.Bool:
					if val {
						v.errorf(e.Value, "env: the value of %s must be a string, or #f to remove it, not #t", render(e.Key))
					}
				default:
					v.errorf(e.Value, "env: the value of %s must be a string, or #f to remove it, not %s", render(e.Key), render(e.Value))
				}
			}
		}
	}
	if _, x, ok := get("restart"); ok {
		v.parsed(x, "restart", wrap(externalservices.ParseRestartPolicy))
	}
	if _, x, ok := get("protocol"); ok {
		v.parsed(x, "protocol", wrap(externalservices.ParseProtocol))
	}
	for _, k := range []string{"stopTimeout", "restartDelay", "restartMaxDelay", "restartWindow"} {
		if _, x, ok := get(k); ok && !isUnknown(x) {
			if !nonNegativeNumber(x) {
				v.errorf(x, "%s must be a non-negative number of seconds, not %s", k, render(x))
			}
		}
	}
	v.readiness(get)
	if _, x, ok := get("restartLimit"); ok && !isUnknown(x) {
		if n, ok := preserves.Unwrap(x).(preserves.Int); !ok || n < 0 {
			v.errorf(x, "restartLimit must be a non-negative integer, not %s", render(x))
		}
	}
}

func nonNegativeNumber(x preserves.Value) bool {
	switch n := preserves.Unwrap(x).(type) {
	case preserves.Int:
		return n >= 0
	case preserves.Double:
		f := n.Float64()
		return f >= 0 && f == f && f <= 1e15
	}
	return false
}
