package validate

import (
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
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

// builtinNames are the labels of built-in service names (services spec §2.7,
// plus the framework's milestones).
var builtinNames = map[string]bool{
	"daemon": true, "config-watcher": true, "relay-listener": true, "gatekeeper": true,
	"milestone": true, "http-static-files": true, "http-router": true, "debt-reporter": true,
}

// declaration checks one asserted or sent value.
func (v *validator) declaration(val preserves.Value) {
	l, fields, ok := label(val)
	if !ok {
		return
	}
	switch l {
	case "require-service", "run-service", "restart-service":
		if v.arity(val, l, fields, 1, "<"+l+" NAME>") {
			v.serviceName(fields[0])
		}
	case "service-state":
		if v.arity(val, l, fields, 2, "<service-state NAME STATE>") {
			v.serviceName(fields[0])
		}
	case "service-object":
		if v.arity(val, l, fields, 2, "<service-object NAME OBJECT>") {
			v.serviceName(fields[0])
		}
	case "depends-on":
		if !v.arity(val, l, fields, 2, "<depends-on DEPENDER <service-state DEPENDEE STATE>>") {
			return
		}
		v.serviceName(fields[0])
		dep := fields[1]
		if isUnknown(dep) {
			return
		}
		dl, dfields, ok := label(dep)
		if !ok || dl != "service-state" || len(dfields) != 2 {
			v.errorf(dep, "depends-on: the dependee must be <service-state NAME STATE>, not %s", render(dep))
			return
		}
		v.serviceName(dfields[0])
	case "daemon":
		switch len(fields) {
		case 1: // a service name on its own: nothing more to check
		case 2:
			v.daemonSpec(fields[1])
		default:
			v.errorf(val, "daemon: expected <daemon ID SPEC> (or the service name <daemon ID>), not %d fields", len(fields))
		}
	default:
		if builtinNames[l] {
			v.serviceName(val)
		}
	}
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
	if !ok || !builtinNames[l] {
		return
	}
	switch l {
	case "daemon":
		if len(f) != 1 {
			v.errorf(name, "daemon: a daemon service is named <daemon ID>, with one field, not %d (the spec goes in a separate <daemon ID SPEC> assertion)", len(f))
		}
	case "milestone":
		v.arity(name, l, f, 1, "<milestone NAME>")
	case "config-watcher":
		if !v.arity(name, l, f, 2, "<config-watcher PATH ENV>") {
			return
		}
		v.str(f[0], "config-watcher: the path")
		if env := f[1]; !isUnknown(env) {
			d, ok := preserves.Unwrap(env).(*preserves.Dictionary)
			if !ok {
				v.errorf(env, "config-watcher: the environment must be a dictionary with symbol keys, not %s", render(env))
				return
			}
			for _, e := range d.Entries() {
				if _, ok := preserves.Unwrap(e.Key).(preserves.Symbol); !ok {
					v.errorf(e.Key, "config-watcher: environment key %s is not a symbol", render(e.Key))
				}
			}
		}
	case "relay-listener":
		if len(f) != 2 && len(f) != 3 {
			v.errorf(name, "relay-listener: expected <relay-listener <tcp HOST PORT> GATEKEEPER [HTTPD]> or <relay-listener <unix PATH> GATEKEEPER>, not %d field(s)", len(f))
			return
		}
		v.transportAddress(f[0], len(f) == 3)
		v.capability(f[1], "relay-listener: the gatekeeper")
		if len(f) == 3 {
			v.capability(f[2], "relay-listener: the httpd context")
		}
	case "gatekeeper":
		if v.arity(name, l, f, 1, "<gatekeeper BINDSPACE>") {
			v.capability(f[0], "gatekeeper: the bind space")
		}
	case "http-router":
		if v.arity(name, l, f, 1, "<http-router HTTPD>") {
			v.capability(f[0], "http-router: the httpd context")
		}
	case "http-static-files":
		if v.arity(name, l, f, 2, "<http-static-files DIR N>") {
			v.str(f[0], "http-static-files: the directory")
			if x := f[1]; !isUnknown(x) {
				if _, ok := preserves.Unwrap(x).(preserves.Int); !ok {
					v.errorf(x, "http-static-files: the path prefix length must be an integer, not %s", render(x))
				}
			}
		}
	case "debt-reporter":
		if v.arity(name, l, f, 1, "<debt-reporter SECONDS>") {
			if x := f[0]; !isUnknown(x) {
				if _, ok := preserves.Unwrap(x).(preserves.Double); !ok {
					v.errorf(x, "debt-reporter: the interval must be a double (e.g. 1.0), not %s", render(x))
				}
			}
		}
	}
}

// transportAddress checks `<tcp HOST PORT>` or `<unix PATH>` (tcp only when
// tcpOnly, for a listener with an httpd).
func (v *validator) transportAddress(a preserves.Value, tcpOnly bool) {
	if isUnknown(a) {
		return
	}
	l, f, ok := label(a)
	switch {
	case ok && l == "tcp":
		if !v.arity(a, l, f, 2, `<tcp "HOST" PORT>`) {
			return
		}
		v.str(f[0], "tcp: the host")
		if p := f[1]; !isUnknown(p) {
			n, ok := preserves.Unwrap(p).(preserves.Int)
			switch {
			case !ok:
				v.errorf(p, "tcp: the port must be an integer, not %s", render(p))
			case n < 0 || n > 65535:
				v.errorf(p, "tcp: port %d is out of range 0-65535", int64(n))
			}
		}
	case ok && l == "unix" && !tcpOnly:
		if v.arity(a, l, f, 1, `<unix "PATH">`) {
			v.str(f[0], "unix: the path")
		}
	case tcpOnly:
		v.errorf(a, "relay-listener: a listener with an httpd needs a <tcp HOST PORT> address, not %s", render(a))
	default:
		v.errorf(a, "relay-listener: the address must be <tcp \"HOST\" PORT> or <unix \"PATH\">, not %s", render(a))
	}
}

// capability checks a field the schema wants embedded: in a script that is
// always a variable (`$gatekeeper`), never a literal; in a value checked
// with Declaration, an embedded value.
func (v *validator) capability(x preserves.Value, what string) {
	if _, ok := preserves.Unwrap(x).(*preserves.Embedded); ok {
		return // a capability, or (in a script) a variable
	}
	v.errorf(x, "%s must be a capability (a variable such as $gatekeeper), not %s", what, render(x))
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

// Allowed symbols of the enumerated keys.
var (
	restartPolicies = []string{"always", "on-error", "all", "never"}
	protocols       = []string{"none", "application/syndicate", "text/syndicate"}
)

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
				switch preserves.Unwrap(e.Key).(type) {
				case preserves.String, preserves.Symbol:
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
	v.enum(get, "restart", "a restart policy", restartPolicies)
	v.enum(get, "protocol", "a protocol", protocols)
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

func (v *validator) enum(get func(string) (preserves.Value, preserves.Value, bool), key, what string, allowed []string) {
	_, x, ok := get(key)
	if !ok || isUnknown(x) {
		return
	}
	if s, ok := preserves.Unwrap(x).(preserves.Symbol); ok {
		for _, a := range allowed {
			if string(s) == a {
				return
			}
		}
	}
	v.errorf(x, "%s: %s is not %s (%s)", key, render(x), what, strings.Join(allowed, ", "))
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
