package services

import (
	"errors"
	"strings"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// LabelBuiltin labels the service names of the server's built-in services:
// `<builtin gatekeeper>`, `<builtin daemons>`, … (see [RunBuiltin]).
const LabelBuiltin = preserves.Symbol("builtin")

// BuiltinName returns `<builtin name>`.
func BuiltinName(name string) preserves.Value {
	return preserves.NewRecord(LabelBuiltin, preserves.Symbol(name))
}

// IsBuiltin reports whether v is a `<builtin NAME>` service name.
func IsBuiltin(v preserves.Value) bool {
	r, ok := v.(*preserves.Record)
	return ok && r.Label == LabelBuiltin
}

// RunBuiltin runs one built-in service (the gatekeeper, the daemon
// supervisors, the config watchers, …) in a worker actor of its own, named
// name, under a supervisor with policy Always living in the active facet
// (services spec §2.3). The worker runs boot, then asserts
// `<service-state <builtin name> ready>`; the supervisor reports `started`,
// `failed` and `complete`. When the worker crashes (a panic, or an error
// from any of its turns) the failure is logged by [ReportFailure], the
// state becomes `failed`, and a fresh worker boots after the usual delay:
// everything the old one asserted is gone, and the assertions it observed
// are replayed to the new one. The message `<restart-service <builtin
// name>>` stops the worker normally, so that a fresh one starts.
//
// boot must create everything outside values reach in the worker actor,
// so that nothing from a script or a peer is handled by the caller.
func RunBuiltin(t *dataspace.Turn, env Env, name string, boot func(t *dataspace.Turn, env Env) error, opts SuperviseOptions) {
	sn := BuiltinName(name)
	Supervise(t, env, sn, Always, name, func(t *dataspace.Turn, _ *dataspace.Ref) error {
		if err := boot(t, env); err != nil {
			return err
		}
		// A built-in service runs until the server stops, even while it
		// has nothing to watch; `<restart-service <builtin NAME>>`
		// replaces its worker.
		t.PreventInertCheck()
		StopOnRestart(t, env, sn)
		t.Assert(env.Config, ServiceState(sn, StateReady))
		return nil
	}, opts)
}

// ReportFailure logs the failure of service name's worker at error level:
// the error, and for a crash the offending value (the assertion or message
// being delivered, abbreviated), the first source position found in it
// (`file:line:col`, when a script asserted it), and the Go frame that
// panicked. The full stack goes to debug level.
func ReportFailure(log zerolog.Logger, name preserves.Value, err error) {
	ev := log.Error().Str("service", preserves.Show(name)).Err(err)
	var pe *dataspace.PanicError
	if errors.As(err, &pe) {
		if pe.Event != nil {
			ev = ev.Str("value", preserves.Show(pe.Event))
			if pos, ok := preserves.FirstPos(pe.Event); ok {
				ev = ev.Str("pos", pos.String())
			}
		}
		if frame := panicFrame(pe.Stack); frame != "" {
			ev = ev.Str("at", frame)
		}
		log.Debug().Str("service", preserves.Show(name)).Bytes("stack", pe.Stack).Msg("service worker stack")
	}
	ev.Msg("service worker failed")
}

// FailureSummary is the one-line reason a failed worker shows in
// `syndicate status`: the error and, for a crash, the offending value and
// its source position.
func FailureSummary(err error) string {
	msg := err.Error()
	var pe *dataspace.PanicError
	if errors.As(err, &pe) && pe.Event != nil {
		msg += " (handling " + preserves.Show(pe.Event)
		if pos, ok := preserves.FirstPos(pe.Event); ok {
			msg += " from " + pos.String()
		}
		msg += ")"
	}
	return preserves.ShowString(msg)
}

// panicFrame picks the first frame of a panicking goroutine's stack below
// the runtime's panic machinery and any Must… helper (whose caller is the
// one that trusted a value it should not have): the Go file:line to blame.
func panicFrame(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	seenPanic := false
	for i := 0; i+1 < len(lines); i++ {
		fn := lines[i]
		if strings.HasPrefix(fn, "panic(") || strings.HasPrefix(fn, "runtime.gopanic") || strings.HasPrefix(fn, "runtime.panic") {
			seenPanic = true
			continue
		}
		if !seenPanic || strings.HasPrefix(fn, "\t") || strings.HasPrefix(fn, "runtime.") || strings.Contains(fn, ".Must") {
			continue
		}
		loc := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndex(loc, " +0x"); j >= 0 {
			loc = loc[:j]
		}
		return loc
	}
	return ""
}
