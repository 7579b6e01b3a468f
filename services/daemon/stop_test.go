package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// trapSpec is a daemon that appends "NAME" to file when it gets SIGTERM,
// after pause seconds, and exits.
func trapSpec(t *testing.T, name, file, pause string) preserves.Value {
	// Ready only once the trap is set (s6 readiness on fd 3): counted
	// ready at spawn, a SIGTERM could beat the trap and kill the shell
	// silently.
	return pv(t, `{argv: "trap 'sleep `+pause+`; echo `+name+` >> `+file+`; exit 0' TERM; echo >&3; echo $$; while :; do sleep 0.02; done", readiness: <notification-fd 3>}`)
}

func fileWords(t *testing.T, file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// TestStopDependentsFirst: when a dependee restarts, its dependents
// (directly and not) are stopped before it, and every stop is
// logged with its duration and whether SIGKILL was needed.
func TestStopDependentsFirst(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	file := filepath.Join(t.TempDir(), "order")
	// app → cache → db; the dependee's TERM handler is instant, the
	// dependents' are slow, so a parallel stop would write db first.
	h.assert(preserves.Rec("daemon", preserves.Symbol("db"), trapSpec(t, "db", file, "0")))
	h.assert(preserves.Rec("daemon", preserves.Symbol("cache"), trapSpec(t, "cache", file, "0.2")))
	h.assert(preserves.Rec("daemon", preserves.Symbol("app"), trapSpec(t, "app", file, "0.3")))
	h.assert(services.DependsOn(dname("app"), state("cache", services.StateReady)))
	h.assert(services.DependsOn(dname("cache"), state("db", services.StateReady)))
	h.assert(services.RequireService(dname("app")))
	h.waitHas(state("app", services.StateReady), true)
	// Each prints its pid once its TERM trap is set.
	h.waitOutput("db", 1)
	h.waitOutput("cache", 1)
	h.waitOutput("app", 1)
	h.send(h.env.Config, services.RestartService(dname("db")))
	eventually(t, func() bool { return len(fileWords(t, file)) == 3 }, "three stops: %q", fileWords(t, file))
	if got := strings.Join(fileWords(t, file), " "); got != "app cache db" {
		t.Errorf("stop order %q, want dependents first", got)
	}
	if !h.warns.Has("process stopped", `"sigkill":false`, `"took"`, "waitedForDependents") {
		t.Errorf("stop not logged with its duration: %q", h.warns.Lines())
	}
}

// TestShutdownStopsDependentsFirst: the same order when the whole system
// shuts down, and a process that ignores SIGTERM is logged as killed.
func TestShutdownStopsDependentsFirst(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	file := filepath.Join(t.TempDir(), "order")
	h.assert(preserves.Rec("daemon", preserves.Symbol("db"), trapSpec(t, "db", file, "0")))
	h.assert(preserves.Rec("daemon", preserves.Symbol("app"), trapSpec(t, "app", file, "0.3")))
	h.assert(preserves.Rec("daemon", preserves.Symbol("stubborn"),
		pv(t, `{argv: "trap '' TERM; echo >&3; echo $$; while :; do sleep 0.02; done", readiness: <notification-fd 3>, stopTimeout: 0.2}`)))
	h.assert(services.DependsOn(dname("app"), state("db", services.StateReady)))
	h.assert(services.RequireService(dname("app")))
	h.assert(services.RequireService(dname("stubborn")))
	h.waitHas(state("app", services.StateReady), true)
	h.waitHas(state("stubborn", services.StateReady), true)
	// Each prints its pid once its TERM trap is set.
	h.waitOutput("db", 1)
	h.waitOutput("app", 1)
	h.waitOutput("stubborn", 1)
	ctxShutdown(t, h)
	if got := strings.Join(fileWords(t, file), " "); got != "app db" {
		t.Errorf("stop order %q, want app db\n%s", got, strings.Join(h.warns.Lines(), "\n"))
	}
	if !h.warns.Has("process stopped with SIGKILL", `"sigkill":true`, "<daemon stubborn>") {
		t.Errorf("escalation not logged: %q", h.warns.Lines())
	}
}

// TestOutputWhileStoppingIsKept: what a process prints after SIGTERM,
// and an unterminated last line, reach the log when the process is
// stopped by a restart and by its requirement going.
func TestOutputWhileStoppingIsKept(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	spec := pv(t, `{argv: "trap 'sleep 0.2; echo goodbye; printf unterminated; exit 0' TERM; echo hello; while :; do sleep 0.02; done", readyOnStart: #t}`)
	unrequire, _ := require(h, "d", spec)
	h.waitHas(state("d", services.StateReady), true)
	count := func(text string) int {
		n := 0
		for _, l := range h.output("d") {
			if s, ok := l.line.(preserves.String); ok && strings.TrimSuffix(string(s), "\n") == text {
				n++
			}
		}
		return n
	}
	eventually(t, func() bool { return count("hello") == 1 }, "trap set")
	h.send(h.env.Config, services.RestartService(dname("d")))
	eventually(t, func() bool { return count("goodbye") == 1 && count("unterminated") == 1 },
		"output while stopping on restart: %v", h.output("d"))
	eventually(t, func() bool { return count("hello") == 2 }, "restarted")
	// The new process started only once the old one was gone.
	var order []string
	for _, l := range h.output("d") {
		if s, ok := l.line.(preserves.String); ok {
			order = append(order, strings.TrimSuffix(string(s), "\n"))
		}
	}
	last := -1
	for k, line := range order {
		if line == "hello" {
			last = k
		}
	}
	if i := slices.Index(order, "unterminated"); i < 0 || last < i {
		t.Errorf("the restarted process overlapped the old one: %q", order)
	}
	unrequire()
	eventually(t, func() bool { return count("goodbye") == 2 && count("unterminated") == 2 },
		"output while stopping on retraction: %v", h.output("d"))
}

func TestStopOrderWaitIsBounded(t *testing.T) {
	parallel(t)
	// Ten times faster: the bound, 50 ms + stopSlack, passes in 205 ms.
	o := newStopOrder(newFastClock(10))
	o.dependency("<daemon app>", "<daemon db>", +1)
	app := o.up("<daemon app>", 50*time.Millisecond)
	o.up("<daemon db>", time.Second)
	began := time.Now()
	waited, late := o.waitDependents("<daemon db>")
	if len(late) != 1 || late[0] != "<daemon app>" || waited < 50*time.Millisecond || time.Since(began) > 10*time.Second {
		t.Errorf("waited %v for %v", waited, late)
	}
	if w, late := o.waitDependents("<daemon app>"); w != 0 || late != nil {
		t.Errorf("app has no dependents, waited %v for %v", w, late)
	}
	o.down("<daemon app>", app)
	if w, late := o.waitDependents("<daemon db>"); late != nil || w > time.Second {
		t.Errorf("after app stopped: waited %v for %v", w, late)
	}
}

func TestStopOrderIgnoresDependentsStartedLater(t *testing.T) {
	parallel(t)
	o := newStopOrder(RealClock)
	o.dependency("<daemon app>", "<daemon db>", +1)
	app := o.up("<daemon app>", time.Minute)
	w := o.snapshot("<daemon db>")
	// The old app goes and a new one starts (a restart): db need not
	// wait for the new one.
	o.up("<daemon app>", time.Minute)
	o.down("<daemon app>", app)
	if waited, late := o.await(w); late != nil || waited > 10*time.Second {
		t.Errorf("waited %v for %v", waited, late)
	}
	if w := o.snapshot("<daemon db>"); len(w.procs) != 1 {
		t.Errorf("the new app is a dependent of later stops: %v", w.procs)
	}
}

// TestRemovingUnreadyDaemonNeverReady: removing the declaration and the
// requirement of a daemon that never became ready (what deleting its file
// does) does not assert ready on the way out.
func TestRemovingUnreadyDaemonNeverReady(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	unrequire, unspec := require(h, "d", pv(t, `{argv: "echo $$; exec sleep 100", readyOnStart: #f}`))
	h.waitOutput("d", 1)
	h.waitHas(state("d", services.StateStarted), true)
	// The declaration goes first (it reaches the worker before the
	// requirement's withdrawal stops it).
	unspec[0]()
	h.settle()
	unrequire()
	h.waitHas(state("d", services.StateStarted), false)
	h.settle()
	if h.everHad(state("d", services.StateReady)) {
		t.Error("ready asserted while the daemon was being removed")
	}
}
