//go:build e2e

package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// Issue 22 item 2, as an operator meets it: a real daemon prints escape
// sequences, C1 controls (UTF-8 and bare), a right-to-left override and
// an invalid byte; the output of every command that shows it (status,
// status NAME, status --json, dump, logs, logs --json, observe) and of
// analyze is read byte by byte: no ESC, BEL, C1 control or
// bidirectional override reaches the terminal raw, and no command fails
// on the invalid byte.
func TestE2EHostileDaemonNeverReachesTheTerminal(t *testing.T) {
	t.Parallel()
	client := buildClient(t)
	dir := t.TempDir()
	sock, cfg, logs := filepath.Join(dir, "admin.sock"), filepath.Join(dir, "cfg"), filepath.Join(dir, "logs")
	// \033]0;…\007 sets the title, \033[2J clears; \302\233 and \302\205
	// are CSI and NEL in UTF-8, \233 bare; \342\200\256 is U+202E.
	writeFile(t, filepath.Join(cfg, "e.pr"), `<require-service <daemon e>>
<depends-on <daemon e> <service-state <daemon base> complete>>
<require-service <daemon base>>
<daemon base <one-shot "true">>
<daemon e "printf 'x\\033]0;PWNED\\007\\033[2J csi \\302\\2332J bare \\233 nel \\302\\205 rlo \\342\\200\\256evil \\377 end\\n'; exec sleep 300">
`)
	r := start(t, "-c", cfg, "--admin-socket", sock, "--log-dir", logs)
	cli := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, client, append([]string{"--admin", sock}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), exitCode(err)
	}
	eventually(t, 15*time.Second, "the hostile line in status NAME", func() bool {
		out, _ := cli("status", "<daemon e>")
		return strings.Contains(out, "PWNED") && strings.Contains(out, "end")
	})
	raw := []string{"\x1b", "\x07", "\u009b", "\u0085", "\u202e", "\x9b"}
	check := func(what, out string, json bool) {
		t.Helper()
		for _, c := range raw {
			if json && c > "\x7f" && c != "\x9b" {
				continue // JSON escapes C0; other text stays text for jq
			}
			require.NotContains(t, out, c, "%s printed %q raw:\n%q", what, c, out)
		}
	}
	for _, args := range [][]string{
		{"status"}, {"status", "<daemon e>"}, {"status", "--json"}, {"status", "--all"},
		{"dump"}, {"logs", "e"}, {"logs", "-n", "50"}, {"logs", "--json", "e"},
		{"analyze", "blame"}, {"analyze", "critical-chain", "<daemon e>"}, {"analyze", "graph"},
	} {
		out, code := cli(args...)
		require.Equal(t, 0, code, "%v: %s", args, out)
		check(strings.Join(args, " "), out, slices.Contains(args, "--json"))
		if args[0] == "logs" || len(args) > 1 && args[1] == "<daemon e>" {
			require.Contains(t, out, "PWNED", "%v shows the line", args)
		}
	}
	// observe runs until interrupted: until it has shown the output.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := exec.CommandContext(ctx, client, "--admin", sock, "observe", "<service-output <daemon e> ?>")
	var out testutil.Buffer
	obs.Stdout, obs.Stderr = &out, &out
	require.NoError(t, obs.Start())
	req := exec.Command(client, "--admin", sock, "assert", "<output-request <daemon e>>")
	require.NoError(t, req.Start())
	eventually(t, 15*time.Second, "observe to show the output", func() bool { return strings.Contains(out.String(), "PWNED") })
	req.Process.Kill()
	req.Wait()
	cancel()
	obs.Wait()
	check("observe", out.String(), false)
	require.Equal(t, 0, r.stop(t))
}
