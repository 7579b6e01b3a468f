package services

import (
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// TestDiagnoseUnservedAndCycle: a running service nothing reports a state
// for, and a dependency cycle, become warnings and status reasons after
// the grace period; the reason goes when the condition does.
func TestDiagnoseUnservedAndCycle(t *testing.T) {
	// A short grace: the conditions below last until the test ends them.
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		return BootWith(t, env, BootOptions{DiagnosisGrace: 200 * time.Millisecond})
	})
	typo := preserves.Rec("deamon", sym("x"))
	h.assert(RequireService(typo))
	a, b := preserves.Rec("daemon", sym("a")), preserves.Rec("daemon", sym("b"))
	h.assert(RequireService(a))
	h.assert(DependsOn(a, ServiceState(b, StateReady)))
	undep := h.assert(DependsOn(b, ServiceState(a, StateReady)))

	h.waitHas(ServiceInfo(typo, Info{Reasons: []string{"no built-in service and no script provides <deamon x> (nothing reports its state)"}}), true)
	h.waitHas(ServiceInfo(a, Info{Reasons: []string{"dependency cycle: <daemon a> → <daemon b> → <daemon a>"}}), true)
	h.waitHas(ServiceInfo(b, Info{Reasons: []string{"dependency cycle: <daemon b> → <daemon a> → <daemon b>"}}), true)
	if !h.warns.Has("dependency cycle: <daemon a> → <daemon b> → <daemon a>") || !h.warns.Has("no built-in service and no script provides <deamon x>") {
		t.Errorf("not logged: %q", h.warns.Lines())
	}
	// Breaking the cycle withdraws the reason.
	undep()
	h.waitHas(ServiceInfo(a, Info{Reasons: []string{"dependency cycle: <daemon a> → <daemon b> → <daemon a>"}}), false)
}
