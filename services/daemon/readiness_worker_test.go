package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// readinessSpec is the dictionary spec of the helper daemon running steps,
// with extra keys (Preserves text) such as `readiness: sd-notify`.
func readinessSpec(t *testing.T, keys string, steps ...string) preserves.Value {
	t.Helper()
	argv := []string{os.Args[0], "-test.run=^$", "--"}
	argv = append(argv, steps...)
	var quoted []string
	for _, a := range argv {
		quoted = append(quoted, fmt.Sprintf("%q", a))
	}
	return pv(t, fmt.Sprintf(`{argv: [%s], env: {GO_WANT_HELPER_PROCESS: "readiness"}, stopTimeout: 2, %s}`,
		strings.Join(quoted, " "), keys))
}

// sd_notify end to end: the daemon is not ready until READY=1, its
// STATUS= text is asserted for status, RELOADING=1 and STOPPING=1 are
// states, and STOPPING=1 withdraws ready.
func TestDaemonSDNotifyEndToEnd(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	dir := t.TempDir()
	goReady, goReload, goStop := filepath.Join(dir, "ready"), filepath.Join(dir, "reload"), filepath.Join(dir, "stop")
	require(h, "n", readinessSpec(t, "readiness: sd-notify, readyTimeout: 60",
		"notify:STATUS=warming up", "wait-file:"+goReady, "mainpid-child",
		`notify:READY=1\nSTATUS=serving`, "wait-file:"+goReload,
		"notify:RELOADING=1", "wait-file:"+goStop,
		`notify:READY=1`, "notify:STOPPING=1"))
	name := dname("n")
	h.waitHas(StatusText(name, "warming up"), true)
	h.settle()
	if h.has(state("n", services.StateReady)) {
		t.Fatal("ready before READY=1")
	}
	touch(t, goReady)
	h.waitHas(state("n", services.StateReady), true)
	h.waitHas(StatusText(name, "serving"), true)
	h.waitHas(StatusText(name, "warming up"), false)
	// MAINPID= names a second process: status shows both.
	testutil.WaitFor(t, "two process statuses", func() bool { return len(h.processStatuses(t, "n")) == 2 })
	touch(t, goReload)
	h.waitHas(state("n", StateReloading), true)
	touch(t, goStop)
	h.waitHas(state("n", StateStopping), true)
	h.waitHas(state("n", StateReloading), false)
	h.waitHas(state("n", services.StateReady), false)
	for _, msg := range []string{"daemon reloading", "daemon reloaded", "daemon stopping"} {
		if !h.warns.Has(msg) {
			t.Errorf("no log %q", msg)
		}
	}
}

// infoSays reports whether a <service-info NAME …> of daemon id mentions
// text (what `syndicate status` shows as last exit and reason).
func (h *harness) infoSays(id, text string) bool {
	for _, v := range h.rec.Present() {
		r, ok := v.(*preserves.Record)
		if ok && r.Label == services.LabelServiceInfo && len(r.Fields) == 2 && preserves.Equal(r.Fields[0], dname(id)) &&
			strings.Contains(preserves.FormatText(r.Fields[1]), text) {
			return true
		}
	}
	return false
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A missed watchdog restarts the daemon and the log says why.
func TestDaemonWatchdogRestarts(t *testing.T) {
	parallel(t)
	h, clock := bootDaemons(t, Options{})
	require(h, "w", readinessSpec(t, "readiness: sd-notify, watchdog: 0.3, restart: on-error", "notify:READY=1"))
	testutil.WaitFor(t, "a watchdog restart", func() bool {
		return h.warns.Has(`"level":"error"`, "watchdog timeout: no WATCHDOG=1 within 300ms", `"next":"restart"`)
	})
	// Ready again after the restart: asserted a second time (the mirror
	// may still hold the first ready when the restart delay is taken).
	testutil.WaitFor(t, "the restarted process ready again", func() bool {
		return len(clock.got()) >= 1 && h.countHistory("+"+preserves.FormatText(state("w", services.StateReady))) >= 2
	})
	// status's LAST EXIT says why.
	testutil.WaitFor(t, "the status info naming the watchdog", func() bool {
		return h.infoSays("w", "watchdog timeout: no WATCHDOG=1 within 300ms")
	})
	if h.countHistory("+"+preserves.FormatText(state("w", services.StateReady))) < 2 {
		t.Errorf("ready was not withdrawn and re-asserted across the restart")
	}
}

// The failure cases under restart never: the daemon reports failed and the
// log names the cause.
func TestDaemonReadinessFailures(t *testing.T) {
	parallel(t)
	sock := filepath.Join(t.TempDir(), "never.sock")
	for _, tc := range []struct{ id, keys, cause string }{
		{"nofd", "readiness: <notification-fd 3>, readyTimeout: 0.3", "no readiness (a newline on fd 3) within 300ms"},
		{"nonotify", "readiness: sd-notify, readyTimeout: 0.3", "no readiness (READY=1 on $NOTIFY_SOCKET) within 300ms"},
		{"nosock", fmt.Sprintf("readiness: <unix %q>, readyTimeout: 0.3", sock), "unix " + sock + " accepting connections"},
		{"nodog", "readiness: sd-notify, watchdog: 0.3", "watchdog timeout"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			h, _ := bootDaemons(t, Options{})
			steps := []string{"say:up"}
			if tc.id == "nodog" {
				steps = append(steps, "notify:READY=1")
			}
			require(h, tc.id, readinessSpec(t, tc.keys+", restart: never", steps...))
			h.waitHas(state(tc.id, services.StateFailed), true)
			if !h.warns.Has(tc.cause, "giving up") {
				t.Errorf("no log naming %q: %q", tc.cause, h.warns.Lines())
			}
			// status's REASON says why.
			testutil.WaitFor(t, "the status info naming the cause", func() bool { return h.infoSays(tc.id, tc.cause) })
			if tc.id != "nodog" && h.everHad(state(tc.id, services.StateReady)) {
				t.Error("was ready")
			}
		})
	}
}

// The s6 and listening protocols make the daemon ready through the
// service, like readyOnStart does.
func TestDaemonFDAndListenReady(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	sock := filepath.Join(t.TempDir(), "d.sock")
	require(h, "fd", readinessSpec(t, "readiness: <notification-fd 7>", "fd:7"))
	require(h, "ln", readinessSpec(t, fmt.Sprintf("readiness: <unix %q>", sock), "listen:unix:"+sock))
	h.waitHas(state("fd", services.StateReady), true)
	h.waitHas(state("ln", services.StateReady), true)
}
