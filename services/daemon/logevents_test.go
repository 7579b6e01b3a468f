package daemon

import (
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// eventLines is the lifecycle lines of daemon id, as text.
func (h *harness) eventLines(id string) []string {
	var out []string
	for _, l := range h.logLines(id, services.SourceServer) {
		if s, ok := l.line.(preserves.String); ok {
			out = append(out, string(s))
		}
	}
	return out
}

func (h *harness) waitEvent(id, prefix string) {
	h.tb.Helper()
	eventually(h.tb, func() bool {
		for _, l := range h.eventLines(id) {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}, "a lifecycle line %q of %s (have %q)", prefix, id, h.eventLines(id))
}

// Issue 26 item 3: the lifecycle of a daemon goes to its log stream as
// the server's lines (source server), beside its output.
func TestLifecycleEventsInLogStream(t *testing.T) {
	h, _ := bootDaemons(t, Options{})
	_, unspec := require(h, "d", pv(t, `"echo up; sleep 0.2; exit 3"`))
	h.waitEvent("d", "declared: ")
	h.waitEvent("d", "spawned ")
	h.waitEvent("d", "exited: exit status: 3")
	h.waitEvent("d", "restarting in ")
	h.waitEvent("d", "ready")
	for _, l := range h.logLines("d", services.SourceServer) {
		if strings.HasPrefix(string(l.line.(preserves.String)), "spawned ") && pidOf(t, l) <= 0 {
			t.Errorf("spawn without pid: %+v", l)
		}
	}
	h.send(h.env.Config, services.RestartService(dname("d")))
	h.waitEvent("d", "restart requested")
	respec := h.assert(preserves.Rec("daemon", preserves.Symbol("d"), pv(t, `"exec sleep 100"`)))
	unspec[0]()
	h.waitEvent("d", "spec changed: ")
	h.waitEvent("d", "spec withdrawn: ")
	// Whether the old spec's process still ran when its spec went depends
	// on timing; the new one runs until stopped, so withdrawing it is sure
	// to stop a process.
	h.waitEvent("d", `spawned ["sh" "-c" "exec sleep 100"]`)
	respec()
	h.waitEvent("d", "stopped: ")
	for _, l := range h.output("d") {
		if strings.Contains(string(l.line.(preserves.String)), "spawned") {
			t.Errorf("a lifecycle line marked as the daemon's: %+v", l)
		}
	}
}

// Issue 22: the notification fd is closed once the daemon signalled, so
// writing to it again fails at once instead of blocking for ever once
// the pipe is full (200 KB here; a pipe holds 64 KB).
func TestNotificationFDClosedAfterReady(t *testing.T) {
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "trap '' PIPE; echo >&3; i=0; while [ $i -lt 100000 ]; do echo x >&3 || break; i=$((i+1)); done; echo past-ready; exec sleep 100", readiness: <notification-fd 3>}`))
	h.waitHas(state("d", services.StateReady), true)
	eventually(t, func() bool {
		for _, l := range h.output("d") {
			if l.line == preserves.String("past-ready\n") {
				return true
			}
		}
		return false
	}, "the daemon writing past its notification fd (output %+v)", h.output("d"))
}
