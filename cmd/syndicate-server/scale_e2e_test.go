//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// scaleServices is the number of services of TestE2ETenThousandServices.
const scaleServices = 10_000

// TestE2ETenThousandServices: issue 23 item 4 as an operator meets it.
// A configuration of 10,000 files, each requiring one milestone (as the
// issue's report had them), plus one daemon that prints a line; every
// admin command that enumerates services works through it: status
// (table, --json, --all, one NAME, a pattern), dump (all, a pattern),
// observe, logs (all, one), analyze (blame, critical-chain, plot,
// graph). Before issue 23 the
// server sent all initial matches of a subscription in one packet, which
// the client refused past 262,144 values ("packet holds more than …"),
// so dump failed from 1,000 services and status from 10,000.
//
// Milestones are cheap (no process each), so the test shows what the
// admin path costs, not what forking costs. The client runs with a
// generous --timeout: a loaded CI machine must not turn a slow first
// answer into a failure.
func TestE2ETenThousandServices(t *testing.T) {
	client := buildClient(t)
	dir := t.TempDir()
	sock, cfg := filepath.Join(dir, "admin.sock"), filepath.Join(dir, "config")
	require.NoError(t, os.MkdirAll(cfg, 0o755))
	for i := range scaleServices {
		require.NoError(t, os.WriteFile(filepath.Join(cfg, fmt.Sprintf("m%d.pr", i)),
			fmt.Appendf(nil, "<require-service <milestone m%d>>\n", i), 0o644))
	}
	writeFile(t, filepath.Join(cfg, "talker.pr"), `<require-service <daemon talker>>
<daemon talker {argv: ["sh" "-c" "echo hello-from-talker; exec sleep 600"], readyOnStart: #t}>
`)
	r := start(t, "-c", cfg, "--admin-socket", sock)

	c := scaleCLI{client: client, sock: sock}
	cli, statusJSON, ready := c.run, c.statusJSON, scaleReady
	// Cheap polls (one service) until the last file's service is up, then
	// the whole status until every one is.
	began := time.Now()
	eventually(t, 3*time.Minute, "the last milestone to be ready", func() bool {
		return strings.Contains(cli(t, "dump", "<service-state <milestone m9999> ready>"), "ready")
	})
	eventually(t, 3*time.Minute, "every service to be ready", func() bool {
		return ready(statusJSON(t)) == scaleServices+1
	})
	t.Logf("every service ready after %v", time.Since(began).Round(time.Millisecond))

	tests := scaleChecks(c)
	// The commands are independent clients: run them side by side, as
	// operators and scripts would.
	t.Run("commands", func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				tc.check(t)
				t.Logf("%v", time.Since(began).Round(time.Millisecond))
			})
		}
	})
	require.Equal(t, 0, r.stop(t))
	require.NotContains(t, r.stderr.String(), `"level":"error"`)
}

// scaleCLI runs the client against the scale test's server.
type scaleCLI struct{ client, sock string }

// run runs `syndicate ARGS…` and returns its output; it must succeed.
func (c scaleCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.client, append([]string{"--admin", c.sock, "--timeout", "2m"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "syndicate %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// scaleSvc is the part of a `status --json` row the test reads.
type scaleSvc struct {
	Name     string   `json:"name"`
	Required bool     `json:"required"`
	States   []string `json:"states"`
}

func (c scaleCLI) statusJSON(t *testing.T, args ...string) []scaleSvc {
	var out []scaleSvc
	require.NoError(t, json.Unmarshal([]byte(c.run(t, append([]string{"status", "--json"}, args...)...)), &out))
	return out
}

// scaleMilestones counts the milestones among ss.
func scaleMilestones(ss []scaleSvc) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s.Name, "<milestone ") {
			n++
		}
	}
	return n
}

// scaleReady counts the required services of ss that are ready.
func scaleReady(ss []scaleSvc) int {
	n := 0
	for _, s := range ss {
		if s.Required && slices.Contains(s.States, "ready") {
			n++
		}
	}
	return n
}

// scaleCheck is one admin command of the scale test, with its check.
type scaleCheck struct {
	name  string
	check func(t *testing.T)
}

// scaleChecks are the admin commands the scale test runs once every
// service is ready.
func scaleChecks(c scaleCLI) []scaleCheck {
	cli, statusJSON := c.run, c.statusJSON
	milestones, ready := scaleMilestones, scaleReady
	client, sock := c.client, c.sock
	milestoneRow := regexp.MustCompile(`(?m)^<milestone m\d+>\s`)
	return []scaleCheck{
		{"status", func(t *testing.T) {
			out := cli(t, "status")
			require.Equal(t, scaleServices, len(milestoneRow.FindAllString(out, -1)))
			require.Contains(t, out, "<daemon talker>")
		}},
		{"status --json", func(t *testing.T) {
			ss := statusJSON(t)
			require.Equal(t, scaleServices, milestones(ss))
			require.Equal(t, scaleServices+1, ready(ss))
		}},
		{"status --all", func(t *testing.T) {
			out := cli(t, "status", "--all")
			require.Equal(t, scaleServices, len(milestoneRow.FindAllString(out, -1)))
			require.Contains(t, out, "<builtin timeline>", "--all lists the server's own services too")
		}},
		{"status NAME", func(t *testing.T) {
			out := cli(t, "status", "m4242")
			require.Contains(t, out, "<milestone m4242>\n")
			require.Regexp(t, `state:\s+started,ready`, out)
			out = cli(t, "status", "talker")
			require.Contains(t, out, "hello-from-talker", "the detail view shows the daemon's output")
		}},
		{"status PATTERN", func(t *testing.T) {
			ss := statusJSON(t, "<milestone _>")
			require.Equal(t, scaleServices, milestones(ss))
			require.Len(t, ss, scaleServices, "the pattern selects the milestones only")
		}},
		{"dump", func(t *testing.T) {
			out := cli(t, "dump")
			require.Equal(t, scaleServices+1, strings.Count(out, "<require-service "))
			require.Contains(t, out, "<require-service <milestone m9999>>")
		}},
		{"dump PATTERN", func(t *testing.T) {
			out := cli(t, "dump", "<service-state <milestone _> ready>")
			require.Equal(t, scaleServices, strings.Count(out, "\n"))
		}},
		{"observe", func(t *testing.T) {
			out := &testutil.Buffer{}
			obs := exec.Command(client, "--admin", sock, "--timeout", "2m", "observe", "<run-service <milestone _>>")
			obs.Stdout, obs.Stderr = out, out
			require.NoError(t, obs.Start())
			defer func() { obs.Process.Signal(syscall.SIGINT); obs.Wait() }()
			eventually(t, 3*time.Minute, "observe to print every milestone", func() bool {
				return strings.Count(out.String(), "+ <run-service <milestone ") == scaleServices
			})
		}},
		{"logs", func(t *testing.T) {
			require.Contains(t, cli(t, "logs"), "hello-from-talker")
			require.Contains(t, cli(t, "logs", "talker"), "hello-from-talker")
		}},
		{"analyze blame", func(t *testing.T) {
			out := cli(t, "analyze", "blame")
			require.Equal(t, scaleServices, strings.Count(out, "<milestone m"), "every service's history is recorded")
		}},
		{"analyze critical-chain", func(t *testing.T) {
			require.Contains(t, cli(t, "analyze", "critical-chain", "m77"), "<milestone m77>")
		}},
		{"analyze plot", func(t *testing.T) {
			out := cli(t, "analyze", "plot")
			require.Contains(t, out[:min(len(out), 200)], "<svg")
			require.Contains(t, out, "m9999")
		}},
		{"analyze graph", func(t *testing.T) {
			require.Contains(t, cli(t, "analyze", "graph"), "m9999")
		}},
	}
}
