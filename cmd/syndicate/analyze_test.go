package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/timeline"
	"github.com/syndicate-go/syndicate/services/timeline/analyze"
)

func TestAnalyzeAgainstServer(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	// A server that records nothing is told apart from an empty boot.
	code, _, errs := cliRun(t, "--admin", s.path, "analyze", "blame")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "keeps no service history")
	done := make(chan struct{})
	s.fr.Activate(func(t *dataspace.Turn) error {
		timeline.Boot(t, services.Env{Config: s.cfg})
		close(done)
		return nil
	})
	<-done
	s.assert(t, "<depends-on <daemon web> <service-state <daemon db> ready>>")
	s.assert(t, "<require-service <daemon web>>")
	s.assert(t, "<service-state <daemon db> started>")
	waitFor(t, "web waiting for db", func() bool {
		_, out, _ := cliRun(t, "--admin", s.path, "analyze", "blame")
		return strings.Contains(out, "<daemon web>") && strings.Contains(out, "<daemon db>")
	})
	s.assert(t, "<service-state <daemon db> ready>")
	waitFor(t, "web running", func() bool {
		_, out, _ := cliRun(t, "--admin", s.path, "analyze", "graph")
		return strings.Contains(out, `"<daemon web>" [fillcolor="#fdd835"`) // starting
	})
	s.assert(t, "<service-state <daemon web> ready>")
	var out string
	waitFor(t, "web ready", func() bool {
		var code int
		code, out, _ = cliRun(t, "--admin", s.path, "analyze", "critical-chain")
		return code == 0 && strings.Contains(out, "<daemon web> @")
	})
	require.Contains(t, out, "└─<daemon db> @", "db gated web")

	code, out, errs = cliRun(t, "--admin", s.path, "analyze", "critical-chain", "<daemon db>")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "\n<daemon db> @")

	code, out, errs = cliRun(t, "--admin", s.path, "analyze", "blame", "--json")
	require.Equal(t, 0, code, errs)
	var blame []analyze.JSONUnit
	require.NoError(t, json.Unmarshal([]byte(out), &blame), out)
	require.Len(t, blame, 2)
	require.Equal(t, "<daemon web>", blame[0].Name, "web waited for db: slowest from request")
	require.NotNil(t, blame[0].RequestToUp)
	require.Greater(t, *blame[0].RequestToUp, *blame[0].RunToUp)

	code, out, errs = cliRun(t, "--admin", s.path, "analyze", "critical-chain", "--json", "<daemon web>")
	require.Equal(t, 0, code, errs)
	var chain []analyze.JSONUnit
	require.NoError(t, json.Unmarshal([]byte(out), &chain), out)
	require.Len(t, chain, 2)
	require.Equal(t, "<daemon db>", chain[1].Name)
	require.Equal(t, 1, chain[1].Depth)
	require.LessOrEqual(t, *chain[1].UpAt, *chain[0].UpAt)

	code, out, errs = cliRun(t, "--admin", s.path, "analyze", "plot")
	require.Equal(t, 0, code, errs)
	// The pictures themselves are tested in services/timeline/analyze.
	require.Equal(t, 2, strings.Count(out, `<rect class="bar"`), "web, and db (required as web's dependee)")

	code, out, errs = cliRun(t, "--admin", s.path, "analyze", "graph", "--svg")
	require.Equal(t, 0, code, errs)
	require.Equal(t, 1, strings.Count(out, `<path class="edge"`))

	code, _, errs = cliRun(t, "--admin", s.path, "analyze", "critical-chain", "<daemon nosuch>")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "no service matches <daemon nosuch>")
	code, _, errs = cliRun(t, "--admin", s.path, "analyze", "sideways")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "unknown subcommand")
}

// The recorder may stamp a dependee's ready a hair after the run it
// caused (different actors): within chainSlack it still gates.
