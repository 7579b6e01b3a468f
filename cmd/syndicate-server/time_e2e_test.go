//go:build e2e

package main

import (
	"encoding/json"
	"path/filepath"
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
