package daemon

import (
	"errors"
	"fmt"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/services"
)

// Lifecycle events in the service's log stream (issue 26 item 3): spawn
// with pid, exit with status or signal, back-off delay, restart
// requested, spec changed, readiness, stop, watchdog. Each is a `<log …>`
// message to the log dataspace with `source: server` (services.
// SourceServer) and `event: NAME`, so `syndicate logs NAME`, the console
// and the service's --log-dir file show them beside its output, marked
// `syndicate:` where a daemon line has its stream; no process and no
// script can make such a line (scripts' `$log` stamps `source: script`).
// The server's own diagnostic log keeps its records as well.

// Lifecycle event names (the `event` key).
const (
	logEvDeclared    = "declared"
	logEvSpecChanged = "spec-changed"
	logEvWithdrawn   = "spec-withdrawn"
	logEvSpawned     = "spawned"
	logEvReady       = "ready"
	logEvExited      = "exited"
	logEvBackoff     = "backoff"
	logEvGaveUp      = "gave-up"
	logEvWatchdog    = "watchdog"
	logEvRestart     = "restart-requested"
	logEvStopped     = "stopped"
	logEvUnrequired  = "no-longer-required"
)

var (
	keyEvent = preserves.Symbol("event")
	keyDelay = preserves.Symbol("delay_ms")
)

// logEventRecord is the `<log …>` message of one event; pid 0 leaves the
// pid out.
func (d *daemonRun) logEventRecord(pid int, event, line string, extra ...preserves.DictEntry) preserves.Value {
	entries := append([]preserves.DictEntry{
		{Key: services.LogKeyLine, Value: preserves.String(line)},
		{Key: services.LogKeyService, Value: d.name},
		{Key: services.LogKeySource, Value: services.SourceServer},
		{Key: keyEvent, Value: preserves.Symbol(event)},
	}, extra...)
	if pid != 0 {
		entries = append(entries, preserves.DictEntry{Key: services.LogKeyPid, Value: preserves.Int(pid)})
	}
	ts := preserves.String(script.Timestamp(d.s.clock.Now()))
	return preserves.NewRecord(services.LabelLog, ts, preserves.NewDictionary(entries...))
}

// logEvent logs an event from the active turn.
func (d *daemonRun) logEvent(t *dataspace.Turn, pid int, event, line string, extra ...preserves.DictEntry) {
	t.Message(d.env.Log, d.logEventRecord(pid, event, line, extra...))
}

// logEventAsync logs an event from any goroutine: through the service's
// facet, or straight to the writers once the service is stopping.
func (d *daemonRun) logEventAsync(pid int, event, line string, extra ...preserves.DictEntry) {
	rec := d.logEventRecord(pid, event, line, extra...)
	if !d.s.out.ActivateNow(func(t *dataspace.Turn) error {
		t.Message(d.env.Log, rec)
		return nil
	}) && d.env.LogLate != nil {
		d.env.LogLate(rec)
	}
}

// exitEvent is the event of a process exit and what follows it.
func (r *specRun) exitEvent(t *dataspace.Turn, e Exit, next Next) {
	d := r.w.d
	switch {
	case d.s.dryRun:
		return
	case errors.Is(e.Failure, ErrWatchdog):
		d.logEvent(t, e.Pid, logEvWatchdog, "watchdog: "+e.String())
	case e.SpawnErr != nil:
		d.logEvent(t, 0, logEvExited, "cannot start: "+e.String())
	default:
		d.logEvent(t, e.Pid, logEvExited, "exited: "+e.String())
	}
	switch next.Action {
	case ActRestart:
		d.logEvent(t, 0, logEvBackoff, "restarting in "+next.Delay.Round(time.Millisecond).String(),
			preserves.DictEntry{Key: keyDelay, Value: preserves.Int(next.Delay.Milliseconds())})
	case ActGiveUp:
		d.logEvent(t, 0, logEvGaveUp, "giving up (restart policy or limit)")
	}
}

// stopEvent is the event "a process we stopped is gone".
func (r *specRun) stopEvent(e Exit) {
	line := "stopped: " + e.String()
	if st := e.Stop; st != nil {
		line += fmt.Sprintf(" after %v", st.Took.Round(time.Millisecond))
		if st.Killed {
			line += " (SIGKILL: its stop timeout passed)"
		}
	}
	r.w.d.logEventAsync(e.Pid, logEvStopped, line)
}
