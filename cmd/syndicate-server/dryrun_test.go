package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// TestDryRunReport: the report lists the running services dependencies
// first with their states and commands, the waiting ones with what they
// need, the cycle among them once, and the failed ones; it leaves out the
// states of the server's own services, and exits 1.
func TestDryRunReport(t *testing.T) {
	m := &dryRunModel{StatusModel: services.NewStatusModel(display), commands: map[string]map[string]int{}}
	d := func(name string) preserves.Value { return preserves.Rec("daemon", preserves.Symbol(name)) }
	builtin := services.BuiltinName("x")
	for _, v := range []preserves.Value{builtin, d("web"), d("db")} {
		services.Count(m.Running, m.Key(v), 1)
	}
	for _, v := range []preserves.Value{d("a"), d("b"), d("db")} {
		services.Count(m.Required, m.Key(v), 1)
	}
	state := func(name preserves.Value, st string) { services.Count2(m.States, m.Key(name), st, 1) }
	state(d("db"), "started")
	state(d("db"), "ready")
	state(d("web"), "started")
	state(d("web"), "failed")
	state(builtin, "failed")
	dep := func(depender, dependee string) {
		a := services.Awaited{Text: "<service-state <daemon " + dependee + "> ready>", Service: "<daemon " + dependee + ">", State: "ready"}
		services.Count2(m.Deps, m.Key(d(depender)), a, 1)
	}
	dep("web", "db")
	dep("a", "b")
	dep("b", "a")
	services.Count2(m.Deps, m.Key(d("a")), services.Awaited{Text: `<file "/x">`}, 1)
	services.Count2(m.commands, m.Key(d("db")), commandText(preserves.String("run-db")), 1)

	var out bytes.Buffer
	require.Equal(t, 1, m.report(&out))
	require.Equal(t, `dry run: 3 service(s) would run, dependencies first:
  <builtin x>
  <daemon db>  [ready started]
      command: "sh" "-c" "run-db"
  <daemon web>  [failed started]
waiting (required, not running):
  <daemon a>  needs <file "/x">, <service-state <daemon b> ready>
  <daemon b>  needs <service-state <daemon a> ready>
dependency cycle: <daemon a> → <daemon b> → <daemon a>
would fail: <daemon web>
dry run: 1 service(s) would fail, 2 would wait for ever
`, out.String())
}
