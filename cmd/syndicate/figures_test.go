package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/status"
)

// answerFigures plays the daemon service's part (issue 24): while the
// client asserts <stats-request NAME>, the figures of NAME's process.
func answerFigures(t *testing.T, s *testServer, figures map[string]string) {
	done := make(chan struct{})
	s.fr.Activate(func(t *dataspace.Turn) error {
		t.During(s.cfg, pattern.Rec(syndicatego.LabelStatsRequest, pattern.Capture()), func(t *dataspace.Turn, c []preserves.Value) error {
			if f, ok := figures[preserves.FormatText(c[0])]; ok {
				v, _ := preserves.ParseText("<process-stats " + preserves.FormatText(c[0]) + " " + f + ">")
				t.Assert(s.cfg, v)
			}
			return nil
		})
		close(done)
		return nil
	})
	<-done
}

// `status NAME` and `status --json` ask for a running daemon's figures
// and show its memory and task count; the table has no room for them.
func TestStatusShowsMemoryAndTasks(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	answerFigures(t, s, map[string]string{
		"<daemon app>": `{pid: 42, memory: 13107200, tasks: 3}`,
		"<daemon db>":  `{pid: 43, memory: 2048, tasks: 1, oomKills: 2}`,
	})
	for _, name := range []string{"app", "db"} {
		s.assert(t, "<require-service <daemon "+name+">>")
		s.assert(t, "<run-service <daemon "+name+">>")
		s.assert(t, "<service-state <daemon "+name+"> ready>")
		s.assert(t, `<service-output <daemon `+name+`> []>`)
	}
	s.assert(t, `<process-status <daemon app> {pid: 42, restarts: 0, since: "2026-01-01T10:00:00Z"}>`)
	s.assert(t, `<process-status <daemon db> {pid: 43, restarts: 0, since: "2026-01-01T10:00:00Z"}>`)

	code, out, errs := cliRun(t, "--admin", s.path, "status", "<daemon app>")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `(?m)^  memory: +12\.5 MiB$`, out)
	require.Regexp(t, `(?m)^  tasks: +3$`, out)
	_, out, _ = cliRun(t, "--admin", s.path, "status", "<daemon db>")
	require.Regexp(t, `(?m)^  memory: +2\.0 KiB \(2 OOM kills\)$`, out)

	code, out, _ = cliRun(t, "--admin", s.path, "status", "--json")
	require.Equal(t, 0, code)
	var arr []status.Service
	require.NoError(t, json.Unmarshal([]byte(out), &arr), out)
	require.Len(t, arr, 2)
	for _, svc := range arr {
		require.Len(t, svc.Processes, 1, svc.Name)
		p := svc.Processes[0]
		require.NotNil(t, p.Memory, svc.Name)
		require.NotNil(t, p.Tasks, svc.Name)
		switch svc.Name {
		case "<daemon app>":
			require.Equal(t, int64(13107200), *p.Memory)
			require.Equal(t, int64(3), *p.Tasks)
		case "<daemon db>":
			require.Equal(t, int64(2), *p.OOMKills)
		}
	}

	_, out, _ = cliRun(t, "--admin", s.path, "status")
	require.NotContains(t, strings.ToLower(out), "mib", "the table has no memory column")
}
