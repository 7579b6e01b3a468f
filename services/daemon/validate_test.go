package daemon

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/compile"
	"github.com/syndicate-go/syndicate/script/vm"
	"github.com/syndicate-go/syndicate/services"
)

// runScript runs src as the config watcher does (compiled with positions)
// in the harness's driver facet, with $config bound.
func (h *harness) runScript(file, src string) {
	h.tb.Helper()
	prog, err := compile.CompileFileOptions(file, []byte(src), compile.Options{Positions: true})
	if err != nil {
		h.tb.Fatal(err)
	}
	h.driver.Activate(func(t *dataspace.Turn) error {
		_, err := vm.Run(t, prog, map[string]preserves.Value{"config": dataspace.Embed(h.env.Config)}, zerolog.Nop())
		return err
	})
}

// Operator issue "Validated service requests": a malformed spec or name
// asserted by a script is a warning naming the value and its file:line:col,
// and the daemon reports failed; the states are those of the plain name.
func TestMalformedFromScriptNamesPosition(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	h.runScript("/etc/syndicate/bad.pr", `<require-service <daemon d>>
<daemon d 42>
<require-service <daemon e>>
<daemon e {argv: "x", restart: sometimes}>
<require-service <daemon>>
<require-service <daemon ok>>
<daemon ok "exec sleep 100">
`)
	h.waitHas(state("d", services.StateFailed), true)
	h.waitHas(state("e", services.StateFailed), true)
	h.waitHas(services.ServiceState(preserves.Rec("daemon"), services.StateFailed), true)
	h.waitHas(state("ok", services.StateReady), true)
	for _, want := range [][]string{
		{"invalid process specification", `"spec":"42"`, `"pos":"/etc/syndicate/bad.pr:2:11"`},
		{"invalid process configuration", `"pos":"/etc/syndicate/bad.pr:4:11"`, "bad.pr:4:32", "sometimes"},
		{"malformed daemon service name", `"service":"<daemon>"`, `"pos":"/etc/syndicate/bad.pr:5:18"`},
	} {
		if !h.warns.Has(append(want, `"level":"warn"`)...) {
			t.Errorf("no warning with %q in %q", want, h.warns.Lines())
		}
	}
	// The state assertions carry no positions: rendered, they are the
	// plain values, and Preserves equality with the plain name holds.
	if !h.everHad(state("ok", services.StateReady)) {
		t.Error("history does not show the plain name")
	}
}

// Several <daemon ID SPEC> for one ID stay legal: they are several
// processes, and one bad spec among good ones fails the daemon while the
// good ones run.
func TestOneBadSpecAmongGood(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `"exec sleep 100"`), pv(t, `[]`))
	h.waitHas(state("d", services.StateFailed), true)
	eventually(t, func() bool { return len(h.processStatuses(t, "d")) == 1 }, "the good spec runs")
	if !h.warns.Has("invalid process specification", `"spec":"[]"`) {
		t.Errorf("no warning: %q", h.warns.Lines())
	}
}

// A daemon service name is exact, at run time as for --check
// (externalservices.ParseDaemonName): `<daemon d extra>` would otherwise
// start a second supervisor of d's specs.
func TestDaemonNameIsExact(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	h.runScript("/etc/syndicate/names.pr", `<require-service <daemon d extra>>
<daemon d "exec sleep 100">
`)
	long := preserves.Rec("daemon", preserves.Symbol("d"), preserves.Symbol("extra"))
	h.waitHas(services.ServiceState(long, services.StateFailed), true)
	if !h.warns.Has("malformed daemon service name", `"pos":"/etc/syndicate/names.pr:1:18"`, "not 2") {
		t.Errorf("no warning: %q", h.warns.Lines())
	}
	if n := len(h.processStatuses(t, "d")); n != 0 {
		t.Errorf("%d processes of d started for the malformed name", n)
	}
}
