package externalservices

// Hand-written beside the generated code: the elaboration of a
// DaemonProcessSpec (services spec §5.2) into the Spec the daemon service
// runs, with our extension keys (docs/protocol.md "Extra daemon-spec
// keys", "Readiness"). It is the one definition of the daemon spec: the
// daemon service elaborates with ParseSpec at run time, and `--check`
// (script/validate) runs CheckSpec on the literal parts of a script's
// value, so the two cannot disagree.
//
// The generated parsers decide the shape: a value that ParseDaemonProcessSpec
// rejects is not a spec (class ErrNotASpec), and a dictionary field that the
// schema's @invalid alternatives catch (dir, clearEnv, env, readyOnStart,
// restart, protocol, and our extension keys, whose shapes are defined in
// syndicateGo.prs beside our other records: stopTimeout, the restart
// limits, readiness, readyTimeout, watchdog) is an invalid field
// (ErrInvalidField), as §5.3 wants. What a schema cannot say (environment
// names, ranges, combinations of keys) is checked here, on the parsed
// values; where a parser fails, a few lines say which part is wrong. Every problem is a
// *schema.ParseError carrying its class and the position of the part that
// is wrong.
//
// Unknown parts (schema.Wildcard, a script variable seen by the checker)
// are accepted wherever they stand, as the generated parsers accept them.

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"

	sg "github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
)

// Defaults of the elaborated spec.
const (
	DefaultStopTimeout  = 5 * time.Second  // SIGTERM to SIGKILL (§5.8)
	DefaultReadyTimeout = 90 * time.Second // systemd's DefaultTimeoutStartSec
	// MaxNotificationFD bounds N of <notification-fd N> (the child gets
	// N-2 extra descriptor slots).
	MaxNotificationFD = 255
)

// specKeys are the keys of the dictionary form: the reference's
// FullDaemonProcess and our extensions. Other keys are unknown.
var specKeys = []string{
	"argv", "dir", "clearEnv", "env", "readyOnStart", "restart", "protocol",
	"stopTimeout", "restartDelay", "restartMaxDelay", "restartWindow", "restartLimit",
	"readiness", "readyTimeout", "watchdog",
	// (cgroup before groups: "cgroups" means the first.)
	"user", "group", "cgroup", "groups", "umask", "limits", "noNewPrivileges", "capabilities", "envFile",
	"schedule", "catchUp",
	"listen", "start",
}

// The classes of the problems of a daemon spec (test with errors.Is). The
// services spec (§5.3) treats the first two differently: a value that is
// not a DaemonProcessSpec leaves the daemon never ready, a spec with an
// invalid field crashes its worker. An unknown key is only a warning at
// run time (the reference ignores it) and an error for `--check`.
var (
	ErrNotASpec     = errors.New("daemon: invalid process specification")
	ErrInvalidField = errors.New("daemon: invalid process configuration")
	ErrUnknownKey   = errors.New("daemon: unknown key in a process specification")
)

// Spec is an elaborated DaemonProcessSpec: every default filled in.
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
	// Readiness is how the process signals readiness (extension keys
	// readiness, readyTimeout, watchdog).
	Readiness Readiness
	// Limits holds the optional restart keys of the dictionary form
	// (extensions, ignored by the reference); the zero value means the
	// reference's fixed delays.
	Limits Limits
	// Exec are the controls the exec helper applies (restrict.go).
	Exec ExecControls
	// Cgroup are the limits of the daemon's cgroup.
	Cgroup CgroupLimits
	// EnvFiles are read at every start, in order, after Env.
	EnvFiles []EnvFile
	// Schedule, when set, makes the spec a scheduled one-shot: run at
	// each time of the schedule (schedule.go).
	Schedule *Schedule
	// Listen are the sockets the server binds for the daemon and passes
	// as fds 3… (socket activation, listen.go); OnDemand (`start:
	// on-demand`) starts the process only at the first connection.
	Listen   []transport.Address
	OnDemand bool
	// Unknown are the messages about the keys of the dictionary form that
	// no version of the daemon service reads, each with a "did you mean".
	Unknown []string
}

// EnvChange is one entry of the `env` dictionary, applied in order after
// clearEnv: Remove deletes Name, otherwise Name is set to Value.
type EnvChange struct {
	Name   string
	Value  string
	Remove bool
}

// ReadinessKind says how a process signals readiness.
type ReadinessKind uint8

const (
	ReadyAtStart  ReadinessKind = iota // readyOnStart, or a script/peer asserts it
	ReadyFD                            // s6 notification fd
	ReadySDNotify                      // systemd sd_notify
	ReadyListen                        // a TCP port or Unix socket accepts connections
)

var readinessKindNames = [...]string{"start", "notification-fd", "sd-notify", "listen"}

func (k ReadinessKind) String() string {
	if int(k) < len(readinessKindNames) {
		return readinessKindNames[k]
	}
	return "ReadinessKind(" + strconv.Itoa(int(k)) + ")"
}

// Readiness is the parsed readiness declaration of a spec.
type Readiness struct {
	Kind    ReadinessKind
	FD      int    // ReadyFD
	Network string // ReadyListen: "tcp" or "unix"
	Address string // ReadyListen: host:port or path
	// Timeout bounds the time from spawn to ready; 0 waits for ever.
	Timeout time.Duration
	// Watchdog is the sd-notify watchdog interval; 0 is none.
	Watchdog time.Duration
}

// Limits are the restart keys (restartDelay, restartMaxDelay,
// restartLimit, restartWindow; services/daemon/limits.go applies them).
// The zero value means none is set.
type Limits struct {
	Delay    time.Duration // restartDelay, if HasDelay
	MaxDelay time.Duration // restartMaxDelay, if HasMaxDelay
	Limit    int           // restartLimit, if HasLimit
	Window   time.Duration // restartWindow; 0 = unbounded

	HasDelay, HasMaxDelay, HasLimit bool
}

// IsZero reports whether no restart key was given.
func (l Limits) IsZero() bool { return !l.HasDelay && !l.HasMaxDelay && !l.HasLimit && l.Window == 0 }

// ParseSpec parses and elaborates a DaemonProcessSpec, as the daemon
// service runs it. The error, when not nil, is a *schema.ParseError of
// class ErrNotASpec (preferred), ErrRestrictingKey (next: a misspelt
// restriction fails closed, restrict.go) or ErrInvalidField: the first
// found. Unknown keys that restrict nothing are not errors; their messages
// are in Spec.Unknown. An unknown user or group is not an error either
// (ErrUnknownIdentity, for `--check`).
func ParseSpec(v preserves.Value) (*Spec, error) { return ParseSpecAt(v, preserves.Pos{}) }

// ParseSpecAt is ParseSpec of v written at `at`: the place its parent
// knows for it (preserves.FieldPos of `<daemon ID SPEC>`), which an atom
// or an empty sequence cannot carry itself. A zero `at` means v's own.
func ParseSpecAt(v preserves.Value, at preserves.Pos) (*Spec, error) {
	s, problems := elaborate(v, at)
	var first *schema.ParseError
	for _, p := range problems {
		switch {
		case p.Class == ErrNotASpec:
			return nil, p
		case p.Class == ErrRestrictingKey && (first == nil || first.Class != ErrRestrictingKey):
			first = p
		case first == nil && p.Class == ErrInvalidField:
			first = p
		}
	}
	if first != nil {
		return nil, first
	}
	return s, nil
}

// CheckSpec returns every problem of v, in the order found, each a
// *schema.ParseError of class ErrNotASpec, ErrInvalidField or
// ErrUnknownKey: what `--check` reports. It is the elaboration ParseSpec
// performs, so v is valid for one exactly when it is for the other
// (unknown keys aside).
func CheckSpec(v preserves.Value) []*schema.ParseError {
	return CheckSpecAt(v, preserves.Pos{})
}

// CheckSpecAt is CheckSpec of v written at `at` (see ParseSpecAt).
func CheckSpecAt(v preserves.Value, at preserves.Pos) []*schema.ParseError {
	_, problems := elaborate(v, at)
	return problems
}

// ParseDaemonName parses a daemon service name, `<daemon ID>`, and
// returns its ID. The name is exact: a longer one (`<daemon ID X>`) would
// start a second supervisor of ID's specs.
func ParseDaemonName(v preserves.Value) (preserves.Value, error) {
	if r, ok := preserves.Unwrap(v).(*preserves.Record); ok && len(r.Fields) != 1 && preserves.Equal(r.Label, preserves.Symbol("daemon")) {
		return nil, &schema.ParseError{Pos: preserves.PosOf(v), Msg: fmt.Sprintf("a daemon service is named <daemon ID>, with one field, not %d (the spec goes in a separate <daemon ID SPEC> assertion)", len(r.Fields))}
	}
	d, err := ParseDaemonService(v)
	return d.Id, err
}

// envNameProblem says what is wrong with an environment variable name
// given to a daemon, or "" when nothing is: an empty name, or one
// containing `=`, would reach the child as a different variable.
func envNameProblem(name string) string {
	switch {
	case name == "":
		return "env: an empty variable name"
	case slices.Contains([]byte(name), '='):
		name = preserves.ShowString(name)
		return "env: variable name " + name + " contains '=' (it would reach the program as " + name + "=VALUE, a different variable)"
	case slices.Contains([]byte(name), 0):
		return "env: variable name contains a NUL byte"
	}
	return ""
}

// elaboration collects the spec and its problems.
type elaboration struct {
	s        Spec
	problems []*schema.ParseError
	d        *preserves.Dictionary // the dictionary form
	top      preserves.Pos         // where the spec was written, if known
}

// Problems name the place of the part that is wrong (at): a part's own
// position, or the one its parent remembers for it (preserves.ItemPos,
// in), or failing both the nearest enclosing one: values a script
// asserts are plain, their positions kept aside.

func (e *elaboration) fail(class error, at preserves.Pos, format string, args ...any) {
	e.problems = append(e.problems, &schema.ParseError{Pos: at, Msg: fmt.Sprintf(format, args...), Class: class})
}

func (e *elaboration) invalid(at preserves.Pos, format string, args ...any) {
	e.fail(ErrInvalidField, at, format, args...)
}

// in is the position of item i of parent (numbered as preserves.ItemPos
// numbers them), else outer.
func in(parent preserves.Value, i int, outer preserves.Pos) preserves.Pos {
	if p := preserves.ItemPos(parent, i); p.IsValid() {
		return p
	}
	return outer
}

// keyPos is the position of the value at key of the dictionary form.
func (e *elaboration) keyPos(key string) preserves.Pos {
	if p := preserves.EntryPos(e.d, preserves.Symbol(key)); p.IsValid() {
		return p
	}
	return e.top
}

func elaborate(v preserves.Value, at preserves.Pos) (*Spec, []*schema.ParseError) {
	if !at.IsValid() {
		at = preserves.PosOf(v)
	}
	e := &elaboration{s: Spec{ReadyOnStart: true, Restart: RestartPolicyAlways, StopTimeout: DefaultStopTimeout}, top: at}
	if d, ok := preserves.Unwrap(v).(*preserves.Dictionary); ok {
		e.full(v, d)
		return &e.s, e.problems
	}
	spec, _ := ParseDaemonProcessSpec(v)
	switch x := spec.(type) {
	case DaemonProcessSpecSimple:
		e.s.Argv = argv(x.Value)
	case DaemonProcessSpecOneShot:
		e.s.Argv = argv(x.Setup)
		e.s.ReadyOnStart, e.s.Restart, e.s.OneShot = false, RestartPolicyOnError, true
	default:
		e.notASpec(v)
	}
	return &e.s, e.problems
}

// notASpec says why v, not a dictionary, is not a DaemonProcessSpec.
func (e *elaboration) notASpec(v preserves.Value) {
	r, _ := preserves.Unwrap(v).(*preserves.Record)
	switch {
	case r != nil && preserves.Equal(r.Label, preserves.Symbol("one-shot")) && len(r.Fields) == 0:
		e.fail(ErrNotASpec, e.top, "one-shot: expected <one-shot COMMAND>, not 0 field(s)")
	case r != nil && preserves.Equal(r.Label, preserves.Symbol("one-shot")):
		e.commandLine(r.Fields[0], in(r, 1, e.top), "one-shot")
	case isSeq(v):
		e.commandLine(v, e.top, "daemon")
	}
	if len(e.problems) == 0 { // none of the cases above: say what a spec is
		e.fail(ErrNotASpec, e.top, "daemon: the spec must be a command string, [PROGRAM ARG ...], <one-shot COMMAND> or a dictionary, not %s", schema.Show(v))
	}
}

func isSeq(v preserves.Value) bool {
	_, ok := preserves.Unwrap(v).(preserves.Sequence)
	return ok
}

// argv elaborates a CommandLine: a string S runs `sh -c S`; an array runs
// its first element with the rest as arguments.
func argv(c CommandLine) []string {
	switch x := c.(type) {
	case CommandLineShell:
		return []string{"sh", "-c", x.Value}
	case CommandLineFull:
		return append([]string{x.Value.Program}, x.Value.Args...)
	}
	return nil
}

// commandLine elaborates c, a CommandLine written at `at`, or says why it
// is not one (the spec is then not a spec).
func (e *elaboration) commandLine(c preserves.Value, at preserves.Pos, what string) []string {
	if cl, err := ParseCommandLine(c); err == nil {
		return argv(cl)
	}
	seq, ok := preserves.Unwrap(c).(preserves.Sequence)
	switch {
	case !ok:
		e.fail(ErrNotASpec, at, "%s: the command line must be a shell string or [PROGRAM ARG ...], not %s", what, schema.Show(c))
	case len(seq) == 0:
		e.fail(ErrNotASpec, at, "%s: the command line is empty: it needs at least a program", what)
	}
	for i, el := range seq {
		switch _, err := schema.AsString(el); {
		case err == nil:
		case i == 0:
			e.fail(ErrNotASpec, in(c, i, at), "%s: the program must be a string, not %s", what, schema.Show(el))
		default:
			e.fail(ErrNotASpec, in(c, i, at), "%s: argument %d must be a string, not %s", what, i, schema.Show(el))
		}
	}
	return nil
}

// full elaborates the dictionary form. A missing or malformed argv means
// the value is not a spec at all; every other field only fails
// elaboration. Every field is checked, so that `--check` reports all.
func (e *elaboration) full(v preserves.Value, d *preserves.Dictionary) {
	e.d = d
	if x, ok := e.get("argv"); ok {
		e.s.Argv = e.commandLine(x, e.keyPos("argv"), "argv")
	} else {
		e.fail(ErrNotASpec, e.top, "daemon: the spec dictionary has no argv (the command to run)")
	}
	for i, en := range d.Entries() {
		k, ok := preserves.Unwrap(en.Key).(preserves.Symbol)
		if !ok {
			e.fail(ErrUnknownKey, in(d, 2*i, e.top), "daemon: spec keys are symbols, not %s", schema.Show(en.Key))
		} else if !slices.Contains(specKeys, string(k)) {
			near := schema.Suggest(string(k), specKeys)
			if slices.Contains(restrictingKeys, near) {
				// Fail closed: running it would drop a restriction.
				e.fail(ErrRestrictingKey, in(d, 2*i, e.top), "unknown key %s in a daemon spec (did you mean %s?): not run, since the restriction it may mean would not be in force", preserves.ShowString(string(k)), near)
				continue
			}
			e.fail(ErrUnknownKey, in(d, 2*i, e.top), "unknown key %s in a daemon spec%s", preserves.ShowString(string(k)), schema.DidYouMean(string(k), specKeys))
			e.s.Unknown = append(e.s.Unknown, e.problems[len(e.problems)-1].Msg)
		}
	}
	if f, ok := field[ProcessDirPresent](e, v, "dir", ParseProcessDir, mustBe("dir must be a string")); ok {
		e.s.Dir = f.Dir
	}
	if f, ok := field[ClearEnvPresent](e, v, "clearEnv", ParseClearEnv, mustBe("clearEnv must be #t or #f")); ok {
		e.s.ClearEnv = f.ClearEnv
	}
	if f, ok := field[ReadyOnStartPresent](e, v, "readyOnStart", ParseReadyOnStart, mustBe("readyOnStart must be #t or #f")); ok {
		e.s.ReadyOnStart = f.ReadyOnStart
	}
	if f, ok := field[ProcessEnvPresent](e, v, "env", ParseProcessEnv, mustBe("env must be a dictionary of variables to strings (or #f to remove)")); ok {
		e.env(f)
	}
	if f, ok := field[RestartFieldPresent](e, v, "restart", ParseRestartField, enum("restart", ParseRestartPolicy)); ok {
		e.s.Restart = f.Restart
	}
	if f, ok := field[ProtocolFieldPresent](e, v, "protocol", ParseProtocolField, enum("protocol", ParseProtocol)); ok {
		e.s.Protocol = f.Protocol
	}
	if f, ok := field[sg.StopTimeoutFieldPresent](e, v, "stopTimeout", sg.ParseStopTimeoutField, mustBe(secondsMsg("stopTimeout"))); ok {
		e.seconds("stopTimeout", f.StopTimeout, &e.s.StopTimeout, nil)
	}
	e.readiness(v)
	e.limits(v)
	e.restricting(v)
	e.schedule(v)
	e.listen(v)
}

func (e *elaboration) get(key string) (preserves.Value, bool) { return e.d.Get(preserves.Symbol(key)) }

// field runs the generated parser of an optional field of the dictionary
// form, whose alternatives are present (P), invalid and absent, and
// returns the present alternative; an invalid one is reported with msg.
func field[P, F any](e *elaboration, v preserves.Value, key string, parse func(preserves.Value) (F, error), msg func(preserves.Value) string) (P, bool) {
	f, _ := parse(v)
	p, ok := any(f).(P)
	if x, has := e.get(key); has && !ok {
		e.invalid(e.keyPos(key), "%s", msg(x))
	}
	return p, ok
}

// mustBe is the message of a field of the wrong kind.
func mustBe(what string) func(preserves.Value) string {
	return func(x preserves.Value) string { return what + ", not " + schema.Show(x) }
}

// enum is the message of a field that is not one of the literals of an
// enum: its generated parser's.
func enum[T any](key string, parse func(preserves.Value) (T, error)) func(preserves.Value) string {
	return func(x preserves.Value) string {
		_, err := parse(x)
		var pe *schema.ParseError
		if errors.As(err, &pe) {
			return key + ": " + pe.Deepest().Msg
		}
		return key + ": " + schema.Show(x)
	}
}

// env elaborates the env dictionary.
func (e *elaboration) env(f ProcessEnvPresent) {
	x, _ := e.get("env")
	envAt := e.keyPos("env")
	ed, _ := schema.AsDict(x) // its entries, in the order of f.Env
	for i, en := range ed.Entries() {
		var name string
		switch k := f.Env[i].Key.(type) {
		case EnvVariableString:
			name = k.Value
		case EnvVariableSymbol:
			name = string(k.Value)
		default:
			e.invalid(in(ed, 2*i, envAt), "env: variable name %s must be a string or a symbol", schema.Show(en.Key))
		}
		if _, bad := f.Env[i].Key.(EnvVariableInvalid); !bad {
			if p := envNameProblem(name); p != "" {
				e.invalid(in(ed, 2*i, envAt), "%s", p)
			}
		}
		switch val := f.Env[i].Value.(type) {
		case EnvValueSet:
			e.s.Env = append(e.s.Env, EnvChange{Name: name, Value: val.Value})
		case EnvValueRemove:
			e.s.Env = append(e.s.Env, EnvChange{Name: name, Remove: true})
		default:
			e.invalid(in(ed, 2*i+1, envAt), "env: the value of %s must be a string, or #f to remove it, not %s", schema.Show(en.Key), schema.Show(en.Value))
		}
	}
}

func secondsMsg(key string) string { return key + " must be a non-negative number of seconds" }

// seconds elaborates n, the Seconds given for key, into dst; has, when
// not nil, records that it was given. The schema says it is a number;
// that it is not negative is said here.
func (e *elaboration) seconds(key string, n sg.Seconds, dst *time.Duration, has *bool) {
	x, _ := e.get(key)
	if schema.IsWildcard(x) {
		return
	}
	if !durationOf(n, dst) {
		e.invalid(e.keyPos(key), "%s, not %s", secondsMsg(key), schema.Show(x))
		return
	}
	if has != nil {
		*has = true
	}
}

// durationOf reads a non-negative number of seconds into dst.
func durationOf(n sg.Seconds, dst *time.Duration) bool {
	var f float64
	switch n := n.(type) {
	case sg.SecondsInt:
		f, _ = new(big.Float).SetInt(n.Value).Float64()
	case sg.SecondsDouble:
		f = n.Value
	default:
		return false
	}
	if math.IsNaN(f) || f < 0 || f > float64(math.MaxInt64)/float64(time.Second) {
		return false
	}
	*dst = time.Duration(f * float64(time.Second))
	return true
}

// limits elaborates the restart keys. A key of the wrong type is an
// invalid field (§5.3: the worker crashes), like stopTimeout.
func (e *elaboration) limits(v preserves.Value) {
	l := &e.s.Limits
	if f, ok := field[sg.RestartDelayFieldPresent](e, v, "restartDelay", sg.ParseRestartDelayField, mustBe(secondsMsg("restartDelay"))); ok {
		e.seconds("restartDelay", f.RestartDelay, &l.Delay, &l.HasDelay)
	}
	if f, ok := field[sg.RestartMaxDelayFieldPresent](e, v, "restartMaxDelay", sg.ParseRestartMaxDelayField, mustBe(secondsMsg("restartMaxDelay"))); ok {
		e.seconds("restartMaxDelay", f.RestartMaxDelay, &l.MaxDelay, &l.HasMaxDelay)
	}
	if f, ok := field[sg.RestartWindowFieldPresent](e, v, "restartWindow", sg.ParseRestartWindowField, mustBe(secondsMsg("restartWindow"))); ok {
		e.seconds("restartWindow", f.RestartWindow, &l.Window, nil)
	}
	const limitMsg = "restartLimit must be a non-negative integer"
	f, ok := field[sg.RestartLimitFieldPresent](e, v, "restartLimit", sg.ParseRestartLimitField, mustBe(limitMsg))
	if x, _ := e.get("restartLimit"); !ok || schema.IsWildcard(x) {
		return
	}
	if n := f.RestartLimit; n.Sign() < 0 || !n.IsInt64() || n.Int64() > math.MaxInt32 {
		x, _ := e.get("restartLimit")
		e.invalid(e.keyPos("restartLimit"), "%s, not %s", limitMsg, schema.Show(x))
		return
	}
	l.Limit, l.HasLimit = int(f.RestartLimit.Int64()), true
}

// readiness elaborates readiness, readyTimeout and watchdog, and checks
// readyOnStart against them.
func (e *elaboration) readiness(v preserves.Value) {
	x, ok := e.get("readiness")
	if !ok {
		for _, k := range []string{"readyTimeout", "watchdog"} {
			if _, ok := e.get(k); ok {
				e.invalid(e.keyPos(k), "%s needs a readiness protocol (a readiness key)", k)
			}
		}
		return
	}
	known := !schema.IsWildcard(x)
	if known {
		switch f, _ := sg.ParseReadinessField(v); f := f.(type) {
		case sg.ReadinessFieldPresent:
			e.readinessProtocol(f.Readiness, x, e.keyPos("readiness"))
		default:
			e.badReadiness(x, e.keyPos("readiness"))
		}
	}
	if y, ok := e.get("readyOnStart"); ok && preserves.Unwrap(y) == preserves.Bool(true) {
		e.invalid(e.keyPos("readyOnStart"), "readyOnStart: #t contradicts the readiness protocol (the daemon is ready when it says so)")
	}
	r := &e.s.Readiness
	e.s.ReadyOnStart = false
	r.Timeout = DefaultReadyTimeout
	if f, ok := field[sg.ReadyTimeoutFieldPresent](e, v, "readyTimeout", sg.ParseReadyTimeoutField, mustBe(secondsMsg("readyTimeout"))); ok {
		e.seconds("readyTimeout", f.ReadyTimeout, &r.Timeout, nil)
	}
	const dogMsg = "watchdog must be a positive number of seconds"
	f, ok := field[sg.WatchdogFieldPresent](e, v, "watchdog", sg.ParseWatchdogField, mustBe(dogMsg))
	if y, _ := e.get("watchdog"); !ok || schema.IsWildcard(y) {
		return
	}
	var d time.Duration
	switch ok := durationOf(f.Watchdog, &d); {
	case !ok || d <= 0:
		y, _ := e.get("watchdog")
		e.invalid(e.keyPos("watchdog"), "%s, not %s", dogMsg, schema.Show(y))
	case known && r.Kind != ReadySDNotify:
		e.invalid(e.keyPos("watchdog"), "watchdog needs readiness: sd-notify (WATCHDOG=1 is an sd_notify message)")
	default:
		r.Watchdog = d
	}
}

const readinessShapes = `<notification-fd N>, sd-notify, <tcp PORT>, <tcp "HOST" PORT> or <unix "PATH">`

func isTcpHost(p sg.ReadinessProtocol) bool {
	_, ok := p.(sg.ReadinessProtocolTcpHost)
	return ok
}

// badReadiness says why x, written at `at`, is not a ReadinessProtocol:
// which field of a known protocol has the wrong type, or that it is none.
func (e *elaboration) badReadiness(x preserves.Value, at preserves.Pos) {
	rec, _ := preserves.Unwrap(x).(*preserves.Record)
	var label preserves.Symbol
	n := 0
	if rec != nil {
		label, _ = preserves.Unwrap(rec.Label).(preserves.Symbol)
		n = len(rec.Fields)
	}
	switch {
	case label == "notification-fd" && n == 1:
		e.intIn(rec.Fields[0], in(rec, 1, at), 3, MaxNotificationFD, "notification-fd (0-2 are stdio)")
	case label == "tcp" && (n == 1 || n == 2):
		if n == 2 {
			e.str(rec.Fields[0], in(rec, 1, at), "tcp host")
		}
		e.intIn(rec.Fields[n-1], in(rec, n, at), 1, 65535, "tcp port")
	case label == "unix" && n == 1:
		e.str(rec.Fields[0], in(rec, 1, at), "unix socket path")
	default:
		e.invalid(at, "readiness: %s is not a readiness protocol (readiness must be %s)", schema.Show(x), readinessShapes)
	}
}

// str says that x, written at `at`, must be a string, if it is not.
func (e *elaboration) str(x preserves.Value, at preserves.Pos, what string) {
	if _, err := schema.AsString(x); err != nil {
		e.invalid(at, "%s must be a string, not %s", what, schema.Show(x))
	}
}

// readinessProtocol elaborates p, the readiness protocol x written at
// `at`: the schema gave its shape, the ranges are checked here (on x's
// fields, where a script variable may stand).
func (e *elaboration) readinessProtocol(p sg.ReadinessProtocol, x preserves.Value, at preserves.Pos) {
	r := &e.s.Readiness
	rec, _ := preserves.Unwrap(x).(*preserves.Record)
	// A record with more fields than its protocol has still parses (the
	// schema's records take extra fields); a readiness protocol is exact.
	arity := map[bool]int{true: 2, false: 1}[isTcpHost(p)]
	if rec != nil && len(rec.Fields) != arity {
		e.badReadiness(x, at)
		return
	}
	switch p := p.(type) {
	case sg.ReadinessProtocolSdNotify:
		r.Kind = ReadySDNotify
	case sg.ReadinessProtocolFd:
		fd := e.intIn(rec.Fields[0], in(rec, 1, at), 3, MaxNotificationFD, "notification-fd (0-2 are stdio)")
		r.Kind, r.FD = ReadyFD, fd
	case sg.ReadinessProtocolTcp:
		port := e.intIn(rec.Fields[0], in(rec, 1, at), 1, 65535, "tcp port")
		r.Kind, r.Network, r.Address = ReadyListen, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	case sg.ReadinessProtocolTcpHost:
		host := e.nonEmpty(rec.Fields[0], p.Host, in(rec, 1, at), "tcp host")
		port := e.intIn(rec.Fields[1], in(rec, 2, at), 1, 65535, "tcp port")
		r.Kind, r.Network, r.Address = ReadyListen, "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	case sg.ReadinessProtocolUnix:
		r.Kind, r.Network, r.Address = ReadyListen, "unix", e.nonEmpty(rec.Fields[0], p.Path, in(rec, 1, at), "unix socket path")
	}
}

// intIn elaborates x, written at `at`, an integer from lo to hi.
func (e *elaboration) intIn(x preserves.Value, at preserves.Pos, lo, hi int, what string) int {
	if schema.IsWildcard(x) {
		return lo
	}
	n, ok := preserves.Unwrap(x).(preserves.Int)
	if !ok || int64(n) < int64(lo) || int64(n) > int64(hi) {
		e.invalid(at, "%s must be an integer from %d to %d, not %s", what, lo, hi, schema.Show(x))
		return lo
	}
	return int(n)
}

// nonEmpty checks that s, the string x written at `at`, is not empty.
func (e *elaboration) nonEmpty(x preserves.Value, s string, at preserves.Pos, what string) string {
	if s == "" && !schema.IsWildcard(x) {
		e.invalid(at, "%s must not be empty", what)
	}
	return s
}
