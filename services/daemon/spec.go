package daemon

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/validate"
)

// Spec errors come in two classes because the services spec (§5.3) treats
// them differently: a value that is not a DaemonProcessSpec at all leaves the
// daemon's counters raised (never ready, never complete), whereas a spec that
// parses but carries an invalid field crashes the worker (supervisor back-off).
var (
	// ErrNotASpec: the value does not parse as a DaemonProcessSpec.
	ErrNotASpec = errors.New("daemon: invalid process specification")
	// ErrInvalidField: the value parses, but elaboration found an invalid
	// dir, clearEnv, env, readyOnStart, restart, protocol or stopTimeout.
	ErrInvalidField = errors.New("daemon: invalid process configuration")
)

// SpecError is the one error type of spec parsing. Pos is the position of the
// offending value when the value came from a script read with positions (the
// zero Pos otherwise), so the same code serves annotated and plain values.
type SpecError struct {
	Pos   preserves.Pos
	Msg   string
	Class error // ErrNotASpec or ErrInvalidField
}

func (e *SpecError) Error() string {
	if e.Pos.IsValid() {
		return fmt.Sprintf("%s: %s: %s", e.Pos, e.Class, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Msg)
}

func (e *SpecError) Unwrap() error { return e.Class }

// RestartPolicy is the per-process restart policy of §5.5, the enum
// generated from externalServices.prs (its String is the symbol).
type RestartPolicy = externalservices.RestartPolicy

const (
	RestartAlways  = externalservices.RestartPolicyAlways  // restart after 200 ms (exit 0) or 1 s (error)
	RestartOnError = externalservices.RestartPolicyOnError // complete on exit 0, restart after 1 s on error
	RestartAll     = externalservices.RestartPolicyAll     // complete on exit 0, crash the worker on error
	RestartNever   = externalservices.RestartPolicyNever   // complete whatever the exit
)

// Protocol says what the child's stdin/stdout carry (externalServices.prs).
type Protocol = externalservices.Protocol

const (
	ProtocolNone   = externalservices.ProtocolNone            // stdin /dev/null, stdout logged
	ProtocolBinary = externalservices.ProtocolBinarySyndicate // application/syndicate
	ProtocolText   = externalservices.ProtocolTextSyndicate   // text/syndicate
)

// EnvChange is one entry of the `env` dictionary, applied in order after
// clearEnv: Remove deletes Name, otherwise Name is set to Value.
type EnvChange struct {
	Name   string
	Value  string
	Remove bool
}

// DefaultStopTimeout is the grace period between SIGTERM and SIGKILL (§5.8).
const DefaultStopTimeout = 5 * time.Second

// Spec is an elaborated DaemonProcessSpec (§5.2): every default filled in.
type Spec struct {
	Argv         []string // Argv[0] is looked up in PATH when it has no slash
	Dir          string   // "" = the server's cwd
	ClearEnv     bool
	Env          []EnvChange
	ReadyOnStart bool
	Restart      RestartPolicy
	Protocol     Protocol
	StopTimeout  time.Duration
	// OneShot: the spec was written `<one-shot CMD>` (dry runs assume it
	// succeeds at once).
	OneShot bool
	// Readiness is how the process signals readiness (Go extension keys
	// readiness, readyTimeout, watchdog; readiness.go).
	Readiness Readiness
	// Limits holds the optional restart keys of the dictionary form (Go
	// extensions, ignored by the reference); the zero value means the
	// reference's fixed delays.
	Limits Limits
}

// ParseSpec parses and elaborates a DaemonProcessSpec. The error, when not
// nil, is a *SpecError of class ErrNotASpec or ErrInvalidField. Annotations
// (including positions) anywhere in v are looked through.
func ParseSpec(v preserves.Value) (*Spec, error) {
	top := v
	v = preserves.Unwrap(v)
	s := &Spec{ReadyOnStart: true, Restart: RestartAlways, StopTimeout: DefaultStopTimeout}
	switch x := v.(type) {
	case preserves.String, preserves.Sequence:
		argv, ok := commandLine(x)
		if !ok {
			return nil, notASpec(top, "a command line must be a string or a non-empty array of strings")
		}
		s.Argv = argv
		return s, nil
	case *preserves.Record:
		if preserves.Unwrap(x.Label) != preserves.Symbol("one-shot") || len(x.Fields) < 1 {
			return nil, notASpec(top, "expected a command line, <one-shot CMD> or a dictionary")
		}
		argv, ok := commandLine(x.Fields[0])
		if !ok {
			return nil, notASpec(x.Fields[0], "a command line must be a string or a non-empty array of strings")
		}
		s.Argv, s.ReadyOnStart, s.Restart, s.OneShot = argv, false, RestartOnError, true
		return s, nil
	case *preserves.Dictionary:
		if err := s.full(x, top); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, notASpec(top, "expected a command line, <one-shot CMD> or a dictionary")
}

// full fills s from the dictionary form. A missing or malformed argv means the
// value is not a spec at all; every other field only fails elaboration.
func (s *Spec) full(d *preserves.Dictionary, top preserves.Value) error {
	get := func(k string) (preserves.Value, bool) { return d.Get(preserves.Symbol(k)) }
	av, ok := get("argv")
	if !ok {
		return notASpec(top, "dictionary without argv")
	}
	argv, ok := commandLine(av)
	if !ok {
		return notASpec(av, "argv must be a string or a non-empty array of strings")
	}
	s.Argv = argv
	if x, ok := get("dir"); ok {
		str, ok := preserves.Unwrap(x).(preserves.String)
		if !ok {
			return invalid(x, "dir must be a string")
		}
		s.Dir = string(str)
	}
	if x, ok := get("clearEnv"); ok {
		b, ok := preserves.Unwrap(x).(preserves.Bool)
		if !ok {
			return invalid(x, "clearEnv must be a boolean")
		}
		s.ClearEnv = bool(b)
	}
	if x, ok := get("env"); ok {
		ed, ok := preserves.Unwrap(x).(*preserves.Dictionary)
		if !ok {
			return invalid(x, "env must be a dictionary")
		}
		for _, e := range ed.Entries() {
			var name string
			switch k := preserves.Unwrap(e.Key).(type) {
			case preserves.String:
				name = string(k)
			case preserves.Symbol:
				name = string(k)
			default:
				return invalid(e.Key, "env key must be a string or a symbol")
			}
			// An empty name, or one with `=`, would reach the child as
			// a different variable ("BAD=INJECT" as BAD=INJECT=x).
			if p := validate.EnvNameProblem(name); p != "" {
				return invalid(e.Key, p)
			}
			switch val := preserves.Unwrap(e.Value).(type) {
			case preserves.String:
				s.Env = append(s.Env, EnvChange{Name: name, Value: string(val)})
			case preserves.Bool:
				if val {
					return invalid(e.Value, "env value must be a string or #f")
				}
				s.Env = append(s.Env, EnvChange{Name: name, Remove: true})
			default:
				return invalid(e.Value, "env value must be a string or #f")
			}
		}
	}
	if x, ok := get("readyOnStart"); ok {
		b, ok := preserves.Unwrap(x).(preserves.Bool)
		if !ok {
			return invalid(x, "readyOnStart must be a boolean")
		}
		s.ReadyOnStart = bool(b)
	}
	if x, ok := get("restart"); ok {
		p, err := externalservices.ParseRestartPolicy(x)
		if err != nil {
			return invalid(x, "restart must be always, on-error, all or never")
		}
		s.Restart = p
	}
	if x, ok := get("protocol"); ok {
		p, err := externalservices.ParseProtocol(x)
		if err != nil {
			return invalid(x, "protocol must be none, application/syndicate or text/syndicate")
		}
		s.Protocol = p
	}
	if x, ok := get("stopTimeout"); ok {
		secs, ok := seconds(x)
		if !ok {
			return invalid(x, "stopTimeout must be a non-negative number of seconds")
		}
		s.StopTimeout = secs
	}
	if err := s.parseReadiness(get); err != nil {
		return err
	}
	return s.Limits.parse(get)
}

// commandLine elaborates a CommandLine: a string S runs `sh -c S`; an array
// runs its first element with the rest as arguments.
func commandLine(v preserves.Value) ([]string, bool) {
	switch x := preserves.Unwrap(v).(type) {
	case preserves.String:
		return []string{"sh", "-c", string(x)}, true
	case preserves.Sequence:
		if len(x) == 0 {
			return nil, false
		}
		argv := make([]string, len(x))
		for i, e := range x {
			s, ok := preserves.Unwrap(e).(preserves.String)
			if !ok {
				return nil, false
			}
			argv[i] = string(s)
		}
		return argv, true
	}
	return nil, false
}

// seconds reads a non-negative duration in seconds from an integer or double.
func seconds(v preserves.Value) (time.Duration, bool) {
	var f float64
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Int:
		f = float64(x)
	case preserves.Double:
		f = x.Float64()
	default:
		return 0, false
	}
	if math.IsNaN(f) || f < 0 || f > float64(math.MaxInt64)/float64(time.Second) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func notASpec(at preserves.Value, msg string) error {
	return &SpecError{Pos: preserves.PosOf(at), Msg: msg, Class: ErrNotASpec}
}

func invalid(at preserves.Value, msg string) error {
	return &SpecError{Pos: preserves.PosOf(at), Msg: msg, Class: ErrInvalidField}
}

// UnknownKeys lists the keys of a dictionary spec that no version of the
// daemon service reads (the reference ignores them; so do we, with a
// warning and a status reason), each with a "did you mean" suggestion.
func UnknownKeys(raw preserves.Value) []string {
	d, ok := preserves.Unwrap(raw).(*preserves.Dictionary)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range d.Entries() {
		k, ok := preserves.Unwrap(e.Key).(preserves.Symbol)
		if ok && !slices.Contains(validate.DaemonSpecKeys, string(k)) {
			out = append(out, validate.UnknownKeyMessage(string(k)))
		}
	}
	return out
}
