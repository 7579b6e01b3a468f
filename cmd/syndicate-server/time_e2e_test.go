//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// logLine is one `$log` line the server printed as JSON.
type logLine struct {
	Time time.Time `json:"time"`
	Line string    `json:"line"`
}

// linesWith returns the logged lines starting with prefix, in order.
func linesWith(r *running, prefix string) []logLine {
	var out []logLine
	for _, l := range r.stderr.Lines() {
		var ll logLine
		if json.Unmarshal([]byte(l), &ll) == nil && strings.HasPrefix(ll.Line, prefix) {
			out = append(out, ll)
		}
	}
	return out
}

// The timer driver from a script, as a user meets it: periodic ticks
// counted over 3 s, later-than a past and a future time (`deadline`), and
// a set-timer cleared before it expires while another one expires.
func TestE2ETimerDriver(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config")
	writeFile(t, filepath.Join(cfg, "timer.pr"), `
$log ! <log "-" {line: "t: start"}>
?? <periodic-tick 0.5> [ $log ! <log "-" {line: "t: tick"}> ]
? <later-than 1.0> [ $log ! <log "-" {line: "t: past"}> ]
let ?t = deadline 1.5
? <later-than $t> [ $log ! <log "-" {line: "t: future"}> ]
# Messages to a driver that does not observe them yet would be lost.
? <service-state <builtin timer> ready> [
  ! <set-timer cleared 1.0 relative>
  ! <set-timer kept 1 relative>
  ! <set-timer cleared 0 clear>
]
?? <timer-expired ?l _> [ let ?m = join " " ["t: expired" $l] $log ! <log "-" {line: $m}> ]
`)
	r := start(t, "-c", cfg)

	eventually(t, 10*time.Second, "the script to start", func() bool { return len(linesWith(r, "t: start")) == 1 })
	begin := linesWith(r, "t: start")[0].Time
	eventually(t, 10*time.Second, "later-than of a past time", func() bool { return len(linesWith(r, "t: past")) == 1 })
	eventually(t, 10*time.Second, "later-than of a future time", func() bool { return len(linesWith(r, "t: future")) == 1 })
	require.GreaterOrEqual(t, linesWith(r, "t: future")[0].Time.Sub(begin), 1400*time.Millisecond,
		"later-than asserted before its time")

	// Ticks over 3 s: a 0.5 s tick gives 6; allow a loaded machine a
	// little slack, but never a burst.
	eventually(t, 10*time.Second, "a first tick", func() bool { return len(linesWith(r, "t: tick")) > 0 })
	from := len(linesWith(r, "t: tick"))
	window := time.Now().Add(3 * time.Second)
	eventually(t, 10*time.Second, "3 s to pass", func() bool { return time.Now().After(window) })
	ticks := len(linesWith(r, "t: tick")) - from
	require.InDelta(t, 6, ticks, 1, "ticks in 3 s")

	eventually(t, 10*time.Second, "the kept timer to expire", func() bool { return len(linesWith(r, "t: expired")) > 0 })
	var expired []string
	for _, l := range linesWith(r, "t: expired") {
		expired = append(expired, l.Line)
	}
	require.Equal(t, []string{"t: expired kept"}, expired, "the cleared timer expired")
	require.Equal(t, 0, r.stop(t))
}

// statusOf returns the `status --json` entry of one service.
func statusOf(t *testing.T, client, sock, name string) map[string]any {
	out, _ := exec.Command(client, "--admin", sock, "status", "--json").Output()
	var list []map[string]any
	if json.Unmarshal(out, &list) != nil {
		return nil
	}
	for _, s := range list {
		if s["name"] == name {
			return s
		}
	}
	return nil
}

// A scheduled one-shot: `@every 1s` whose job takes 1.5 s runs every
// other second, never twice at once, and the status counts the skipped
// times and shows the last and next runs; the daemon is ready between runs.
func TestE2EScheduleSkipsWhileRunning(t *testing.T) {
	t.Parallel()
	client := buildClient(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "job.pr"), fmt.Sprintf(`<require-service <daemon job>>
<daemon job {
  argv: ["sh" "-c" "cd %s; [ -e running ] && echo >> overlap; touch running; sleep 1.5; rm running; echo >> runs"]
  schedule: "@every 1s"
}>
`, dir))
	r := start(t, "-c", cfg, "--admin-socket", sock)
	runs := func() int { b, _ := os.ReadFile(filepath.Join(dir, "runs")); return strings.Count(string(b), "\n") }
	eventually(t, 20*time.Second, "two runs", func() bool { return runs() >= 2 })
	var st map[string]any
	eventually(t, 10*time.Second, "the status of the runs", func() bool {
		st = statusOf(t, client, sock, "<daemon job>")
		skipped, _ := st["skippedRuns"].(float64)
		return skipped >= 1 && st["lastRun"] != nil && st["nextRun"] != nil
	})
	require.Contains(t, st["states"], "ready", "ready between runs")
	require.Equal(t, "exit status: 0", st["lastExit"])
	require.False(t, fileExists(filepath.Join(dir, "overlap")), "two runs at once")
	out, err := exec.Command(client, "--admin", sock, "status").Output()
	require.NoError(t, err)
	require.Regexp(t, `<daemon job> .*next run in \d+s; last run \d+s ago, (took [0-9.]+m?s|running); \d+ skipped`, string(out))
	require.Equal(t, 0, r.stop(t))
}

// catchUp with --state-dir: a run missed while the server was down (the
// kept last run is two years old; the schedule is yearly) runs once at
// start-up; without a missed run, nothing runs at start-up.
func TestE2EScheduleCatchUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "job.pr"), fmt.Sprintf(`<require-service <daemon yearly>>
<daemon yearly {argv: ["sh" "-c" "echo >> %s/runs"], schedule: "0 0 1 1 *", catchUp: #t}>
`, dir))
	r := start(t, "-c", cfg, "--state-dir", state)
	var kept []string
	eventually(t, 10*time.Second, "the schedule's state file", func() bool {
		// Not its ".tmp" (written, then renamed over it): rewriting that
		// one left the real file at the present, and nothing to catch up
		// (seen under load in CI).
		all, _ := filepath.Glob(filepath.Join(state, "schedules", "*"))
		kept = slices.DeleteFunc(all, func(f string) bool { return strings.HasSuffix(f, ".tmp") })
		return len(kept) == 1
	})
	require.Equal(t, 0, r.stop(t))
	require.False(t, fileExists(filepath.Join(dir, "runs")), "ran at start-up with nothing missed")

	twoYearsAgo := time.Now().AddDate(-2, 0, 0).UTC().Format(time.RFC3339Nano)
	require.NoError(t, os.WriteFile(kept[0], []byte(twoYearsAgo), 0o644))
	r = start(t, "-c", cfg, "--state-dir", state)
	eventually(t, 10*time.Second, "the caught-up run", func() bool { return fileExists(filepath.Join(dir, "runs")) })
	require.Equal(t, 0, r.stop(t))
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, err)
	require.Equal(t, "\n", string(b), "caught up once")
}
