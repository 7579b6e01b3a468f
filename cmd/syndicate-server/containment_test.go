package main

import (
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// crashyBuiltin is a built-in service with issue 12's bug: it lifts a value
// from outside with MustLift, which panics on sets.
var crashyBuiltin = builtin{"crashy", func(t *dataspace.Turn, env services.Env) error {
	t.OnMessage(env.Config, pattern.Rec(preserves.Symbol("boom"), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		pattern.MustLift(caps[0])
		return nil
	})
	return nil
}}

// TestBuiltinCrashContained (issue 12, containment by structure): in a
// full server, a built-in service that crashes is logged with its name,
// the offending value and its script position, is reported failed, and
// restarts; the server and the other services keep working.
func TestBuiltinCrashContained(t *testing.T) {
	h := startInproc(t, func(s *server) { s.extraBuiltins = []builtin{crashyBuiltin} })
	name := services.BuiltinName("crashy")
	states := dataspacetest.NewRecorder()
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.Assert(h.s.env.Config, dataspace.Observe(pattern.Rec(service.LabelServiceState, pattern.MustLift(name), pattern.Capture()), t.Create(states)))
		return nil
	})
	testutil.WaitFor(t, "crashy ready", func() bool { return states.Count("+"+"[ready]") == 1 })

	set := &preserves.Annotated{Pos: preserves.Pos{File: "boom.pr", Line: 2, Col: 5}, Item: preserves.NewSet(preserves.Int(1))}
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.Message(h.s.env.Config, preserves.NewRecord(preserves.Symbol("boom"), set))
		return nil
	})
	testutil.WaitFor(t, "the crash report", func() bool {
		return h.log.has(`"service":"<builtin crashy>"`) && h.log.has(`"pos":"boom.pr:2:5"`) && h.log.has(`"value":"[#{1}]"`)
	})
	testutil.WaitFor(t, "failed, then ready again", func() bool { return states.Count("+"+"[failed]") == 1 && states.Count("+"+"[ready]") == 2 })
	if h.s.top.Status() != dataspace.Running {
		t.Fatalf("the server stopped: %v", h.s.top.Err())
	}
	h.checkCanary(t)
}

// TestGatekeeperRestartKeepsResolves: the primordial gatekeeper is a
// forwarder, so a Resolve asserted before its worker is replaced is
// answered again by the next one (here the worker is replaced by
// `<restart-service <builtin gatekeeper>>`, as after a crash).
func TestGatekeeperRestartKeepsResolves(t *testing.T) {
	h := startInproc(t)
	answer := dataspacetest.NewRecorder()
	h.driver.Activate(func(t *dataspace.Turn) error {
		sr := caveat.Mint(preserves.String("canary"), h.key)
		t.Assert(h.s.env.Gatekeeper, preserves.NewRecord(preserves.Symbol("resolve"), sr.ToValue(), dataspace.Embed(t.Create(answer))))
		return nil
	})
	isOk := func(v preserves.Value) bool {
		r, ok := preserves.Unwrap(v).(*preserves.Record)
		return ok && r.Label == preserves.Symbol("ok")
	}
	testutil.WaitFor(t, "the first answer", func() bool { return answer.Find(isOk) })
	h.driver.Activate(func(t *dataspace.Turn) error {
		t.Message(h.s.env.Config, services.RestartService(services.BuiltinName("gatekeeper")))
		return nil
	})
	testutil.WaitFor(t, "an answer from the new gatekeeper", func() bool {
		asserted := 0
		for _, e := range answer.History() {
			if strings.HasPrefix(e, "+") {
				asserted++
			}
		}
		return asserted == 2 && answer.Find(isOk)
	})
	h.checkAlive(t, "a gatekeeper restart")
	h.checkCanary(t)
}
