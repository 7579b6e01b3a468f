package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin"
)

// Issue 22: nothing a daemon prints controls the operator's terminal.
// A hostile daemon's output, status text and name reach `status`,
// `status NAME`, `status --json` and `dump`: no command prints an escape
// character, a C1 control or a bidirectional override raw.
func TestHostileTextNeverRaw(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<require-service <daemon e>>")
	s.assert(t, "<run-service <daemon e>>")
	s.assert(t, "<service-state <daemon e> started>")
	s.assert(t, `<service-output <daemon e> [{at: "2026-01-01T10:00:00Z", stream: stdout, line: "x\u001b]0;PWNED\u0007\u001b[2J"} {at: "2026-01-01T10:00:01Z", stream: stdout, line: "csi \u009b2J nel \u0085 rlo \u202eevil"}]>`)
	s.assert(t, `<status-text <daemon e> "st \u001b[31m \u202e">`)
	s.assert(t, `<hostile "\u001b[2J \u009b \u202e">`)
	raw := []string{"\x1b", "\x07", "\u009b", "\u0085", "\u202e"}
	var out string
	waitFor(t, "the detail view", func() bool {
		_, out, _ = cliRun(t, "--admin", s.path, "status", "<daemon e>")
		return strings.Contains(out, "PWNED") && strings.Contains(out, "evil")
	})
	for _, args := range [][]string{{"status", "<daemon e>"}, {"status"}, {"status", "--json"}, {"dump"}} {
		_, out, errs := cliRun(t, append([]string{"--admin", s.path}, args...)...)
		for _, r := range raw {
			if args[len(args)-1] == "--json" && r > "\x7f" {
				continue // JSON escapes C0; other text stays text for jq
			}
			require.NotContains(t, out+errs, r, "%v printed %q raw:\n%s", args, r, out)
		}
	}
	_, out, _ = cliRun(t, "--admin", s.path, "status", "<daemon e>")
	require.Contains(t, out, `"x\u001b]0;PWNED\u0007\u001b[2J"`, "quoted visibly")
	require.Contains(t, out, `\u202e`)
}
