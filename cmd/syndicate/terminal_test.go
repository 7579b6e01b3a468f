package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/timeline"
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

// hostileRaw are the characters no command may print raw: ESC, BEL, the
// C1 CSI and NEL, and the right-to-left override.
var hostileRaw = []string{"\x1b", "\x07", "\u009b", "\u0085", "\u202e"}

// hostileText is what a hostile daemon prints or is named.
const hostileText = `x\u001b]0;PWNED\u0007\u001b[2J csi \u009b2J nel \u0085 rlo \u202eevil`

// requireNoRaw fails when out holds a hostile character raw; JSON output
// keeps C1 and bidirectional characters as text (escaping C0).
func requireNoRaw(t *testing.T, what string, out string, json bool) {
	t.Helper()
	for _, r := range hostileRaw {
		if json && r > "\x7f" {
			continue
		}
		require.NotContains(t, out, r, "%s printed %q raw:\n%s", what, r, out)
	}
}

// The same for `observe`, `logs` (from the server's history and from
// the log directory, plain and --json) and `analyze` (every text view).
func TestHostileTextNeverRawObserveLogsAnalyze(t *testing.T) {
	t.Run("observe", func(t *testing.T) {
		s := newTestServer(t, admin.Options{})
		obs := startCLI("--admin", s.path, "observe", "<hostile ?>")
		s.assert(t, `<hostile "`+hostileText+`">`)
		waitFor(t, "the + line", func() bool { return strings.Contains(obs.out.String(), "PWNED") })
		require.Equal(t, 0, obs.stop(t))
		requireNoRaw(t, "observe", obs.out.String()+obs.err.String(), false)
	})
	t.Run("logs", func(t *testing.T) {
		s := newLogServer(t)
		e := preserves.Rec("daemon", preserves.String("e\u001b[2J"))
		s.line(e, "x\u001b]0;PWNED\u0007\u001b[2J csi \u009b2J nel \u0085 rlo \u202eevil \xff")
		for i := range 6 { // the hostile line leaves the history of 5
			s.line(e, fmt.Sprintf("plain %d", i))
		}
		waitFor(t, "the log directory", func() bool {
			matches, _ := filepath.Glob(filepath.Join(s.dir, "*", "current"))
			for _, m := range matches {
				if b, _ := os.ReadFile(m); strings.Contains(string(b), "plain 5") {
					return true
				}
			}
			return false
		})
		for _, args := range [][]string{{"logs", "-n", "7"}, {"logs", "--json", "-n", "7"}} {
			code, out, errs := cliRun(t, append([]string{"--admin", s.path}, args...)...)
			require.Equal(t, 0, code, errs)
			require.Contains(t, out, "PWNED", "%v shows the hostile line", args)
			requireNoRaw(t, fmt.Sprint(args), out+errs, args[1] == "--json")
		}
	})
	t.Run("analyze", func(t *testing.T) {
		s := newTestServer(t, admin.Options{})
		done := make(chan struct{})
		s.fr.Activate(func(t *dataspace.Turn) error {
			timeline.Boot(t, services.Env{Config: s.cfg})
			close(done)
			return nil
		})
		<-done
		name := `<daemon "` + hostileText + `">`
		s.assert(t, "<depends-on "+name+" <service-state <daemon db> ready>>")
		s.assert(t, "<require-service "+name+">")
		s.assert(t, "<service-state <daemon db> ready>")
		s.assert(t, "<service-state "+name+" ready>")
		waitFor(t, "the hostile service in the history", func() bool {
			_, out, _ := cliRun(t, "--admin", s.path, "analyze", "blame")
			return strings.Contains(out, "PWNED")
		})
		for _, args := range [][]string{{"blame"}, {"critical-chain"}, {"graph"}, {"plot"}, {"graph", "--svg"}, {"blame", "--json"}} {
			code, out, errs := cliRun(t, append([]string{"--admin", s.path, "analyze"}, args...)...)
			require.Equal(t, 0, code, errs)
			requireNoRaw(t, "analyze "+strings.Join(args, " "), out+errs, args[len(args)-1] == "--json")
		}
	})
}
