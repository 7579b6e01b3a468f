package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/status"
)

// What a daemon says of itself over sd_notify (STATUS=, asserted by the
// daemon service as <status-text NAME TEXT>) is shown by status: in the
// REASON column when there is no reason, in the NAME view, and in JSON.
func TestStatusShowsStatusText(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon db>>")
	s.assert(t, "<service-state <daemon db> ready>")
	s.assert(t, `<status-text <daemon db> "accepting connections">`)
	var out string
	waitFor(t, "status text", func() bool {
		_, out, _ = cliRun(t, "--admin", s.path, "status")
		return strings.Contains(out, `"accepting connections"`)
	})
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "<daemon db>") {
			line = l
		}
	}
	require.True(t, strings.HasSuffix(strings.TrimSpace(line), `"accepting connections"`), out)

	code, js, errs := cliRun(t, "--admin", s.path, "status", "--json")
	require.Equal(t, 0, code, errs)
	var svcs []status.Service
	require.NoError(t, json.Unmarshal([]byte(js), &svcs))
	require.Len(t, svcs, 1)
	require.Equal(t, []string{"accepting connections"}, svcs[0].StatusText)

	_, detail, _ := cliRun(t, "--admin", s.path, "status", "<daemon db>")
	require.Contains(t, detail, `"accepting connections"`)
}

// Status reads our extension records leniently (syndicateGo.prs makes
// their keys optional): an older or newer server's process-status without
// some keys, a service-info with ill-typed keys, and an output line the
// schema rejects among good ones are shown as far as they make sense.
func TestStatusToleratesPartialRecords(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon old>>")
	s.assert(t, "<process-status <daemon old> {pid: 7 extra: #t}>")
	s.assert(t, `<service-info <daemon old> {restarts: "two" recent: 1 reason: "one reason"}>`)
	s.assert(t, `<service-output <daemon old> [{at: 1 line: "bad"} {at: "2026-11-25T03:00:00Z" stream: stdout line: "good"}]>`)
	var svcs []status.Service
	waitFor(t, "the partial records", func() bool {
		_, js, _ := cliRun(t, "--admin", s.path, "status", "--json", "<daemon old>")
		svcs = nil
		return json.Unmarshal([]byte(js), &svcs) == nil && len(svcs) == 1 && len(svcs[0].Processes) == 1 &&
			len(svcs[0].Reasons) == 1 && len(svcs[0].Output) == 1
	})
	require.Equal(t, int64(7), svcs[0].Processes[0].PID)
	require.Zero(t, svcs[0].Processes[0].Restarts)
	require.True(t, svcs[0].Processes[0].Since.IsZero())
	require.Equal(t, 0, svcs[0].Restarts)
	require.Equal(t, 0, svcs[0].Recent, "recent ≤ restarts, which did not parse")
	require.Equal(t, []string{"one reason"}, svcs[0].Reasons)
	require.Equal(t, "good", svcs[0].Output[0].Line)
	require.Equal(t, "stdout", svcs[0].Output[0].Stream)
}
