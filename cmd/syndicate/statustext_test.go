package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin"
)

// What a daemon says of itself over sd_notify (STATUS=, asserted by the
// daemon service as <status-text NAME TEXT>) is shown by status: in the
// REASON column when there is no reason, in the NAME view, and in JSON.
func TestStatusShowsStatusText(t *testing.T) {
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
	var svcs []service
	require.NoError(t, json.Unmarshal([]byte(js), &svcs))
	require.Len(t, svcs, 1)
	require.Equal(t, []string{"accepting connections"}, svcs[0].StatusText)

	_, detail, _ := cliRun(t, "--admin", s.path, "status", "<daemon db>")
	require.Contains(t, detail, `"accepting connections"`)
}
