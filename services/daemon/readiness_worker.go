package daemon

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The worker's side of the readiness protocols (readiness.go): what a
// running process's notifications do to the daemon's assertions. All of
// them are made in the process facet, so they end with the process.
//
//	ready (any protocol)  the process counts as ready (as readyOnStart does)
//	RELOADING=1           <service-state NAME reloading> until READY=1
//	STOPPING=1            the process no longer counts as ready;
//	                      <service-state NAME stopping> until it exits
//	STATUS=TEXT           <status-text NAME "TEXT">, shown by `syndicate status`
//	MAINPID=N             logged, and a second <process-status NAME {pid: N …}>
//	                      while it is not the started process (supervision
//	                      still follows the started process and its group)

// Extra states a daemon may report besides those of §2.
var (
	StateReloading = preserves.Symbol("reloading")
	StateStopping  = preserves.Symbol("stopping")
)

// StatusText returns `<status-text name "text">` (syndicatego.StatusText).
func StatusText(name preserves.Value, text string) preserves.Value {
	return syndicatego.StatusText{ServiceName: name, Text: text}.ToValue()
}

// notifyState is what one running process has said over sd_notify.
type notifyState struct {
	reloading, stopping, status, mainPID dataspace.Handle
}

// readinessEvents adds the readiness callbacks to ev.
func (r *specRun) readinessEvents(ev Events) Events {
	ev.Ready = func(int) {
		r.fr.ActivateNow(func(t *dataspace.Turn) error { r.becameReady(t); return nil })
	}
	ev.Notify = func(pid int, n Notification) {
		r.procRef.ActivateNow(func(t *dataspace.Turn) error { r.notified(t, pid, n); return nil })
	}
	ev.Warn = func(pid int, msg string) {
		r.w.d.log.Warn().Int("pid", pid).Msg(msg)
	}
	return ev
}

// notified is the event "the process sent an sd_notify datagram"; it runs
// in the process facet.
func (r *specRun) notified(t *dataspace.Turn, pid int, n Notification) {
	w := r.w
	cfg, name := w.d.env.Config, w.d.name
	ns := &r.notify
	if n.HasStatus {
		t.Update(&ns.status, cfg, StatusText(name, n.Status))
	}
	if n.Reloading && ns.reloading == 0 {
		w.d.log.Info().Int("pid", pid).Msg("daemon reloading")
		t.Update(&ns.reloading, cfg, services.ServiceState(name, StateReloading))
	}
	if n.Ready && ns.reloading != 0 {
		w.d.log.Info().Int("pid", pid).Msg("daemon reloaded")
		t.Update(&ns.reloading, cfg, nil)
	}
	if n.Stopping && ns.stopping == 0 {
		w.d.log.Info().Int("pid", pid).Msg("daemon stopping")
		t.Update(&ns.stopping, cfg, services.ServiceState(name, StateStopping))
		w.tally.specDown(&r.st)
		w.rec.Kick(t)
	}
	if n.MainPID != 0 {
		w.d.log.Info().Int("pid", pid).Int("mainpid", n.MainPID).Msg("daemon main process")
		var ps preserves.Value // nil: the started process is the main one
		if n.MainPID != pid {
			ps = ProcessStatus(name, n.MainPID, 0, w.d.s.clock.Now())
		}
		t.Update(&ns.mainPID, cfg, ps)
	}
}
