//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// flapChild is /work/shared/anchors/flap-child.sh with hold 0 and no
// notification fd, inline so that the benchmark runs from a fresh
// clone: the same child cost (sh + date) as under s6-supervise.
const flapChild = `echo "S $(date +%s.%N)" >> starts.log; echo "E $(date +%s.%N)" >> starts.log; exit 1`

// BenchmarkDaemonRestartPaths is issue 24's restart latency through the
// exec helper beside the direct start: a daemon that exits at once with
// status 1 under a 10 ms restartDelay, timed from its last timestamp
// before the exit to its next start, as /work/shared/anchors/s6-restart.sh
// times s6-supervise (exit->start, net of the configured delay). The
// helper path is taken by a daemon with an exec control (umask); both
// run in a cgroup of their own where the machine has them.
//
//	go test -tags e2e -run '^$' -bench DaemonRestartPaths -benchtime 1x ./cmd/syndicate-server/
func BenchmarkDaemonRestartPaths(b *testing.B) {
	for _, c := range []struct{ name, keys string }{{"direct", ""}, {"helper", `umask: "022"`}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				d := restartDeltas(b, c.keys, 40)
				b.ReportMetric(ms(d[len(d)/2]), "net-p50-ms")
				b.ReportMetric(ms(d[len(d)*9/10]), "net-p90-ms")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// restartDeltas runs the flap child under a server until it has
// restarted n times and returns the exit->start delays net of the 10 ms
// restartDelay, sorted.
func restartDeltas(b *testing.B, keys string, n int) []time.Duration {
	dir := b.TempDir()
	script := fmt.Sprintf(`<require-service <daemon flap>>
<daemon flap {argv: ["/bin/sh" "-c" %q] dir: %q restartDelay: 0.01 restartMaxDelay: 0.01 restartLimit: 100000 restartWindow: 1 %s}>
`, flapChild, dir, keys)
	if err := os.WriteFile(filepath.Join(dir, "flap.pr"), []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd, _ := startBenchServer(b, "-c", filepath.Join(dir, "flap.pr"))
	var d []time.Duration
	// Restarts take long by design here (a loaded machine, the helper's
	// extra exec): a patience of its own.
	testutil.WaitForWithin(b, 2*time.Minute, "the restarts", func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "starts.log"))
		d = exitToStart(string(data))
		return len(d) >= n
	})
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	for i := range d {
		d[i] -= 10 * time.Millisecond
	}
	slices.Sort(d)
	return d
}

// exitToStart reads "S T" / "E T" lines (T in seconds since the epoch)
// and returns, for every E followed by an S, the time between them.
func exitToStart(log string) []time.Duration {
	var out []time.Duration
	var lastE float64
	for _, l := range strings.Split(log, "\n") {
		kind, t, ok := strings.Cut(l, " ")
		v, err := strconv.ParseFloat(t, 64)
		if !ok || err != nil {
			continue
		}
		switch kind {
		case "E":
			lastE = v
		case "S":
			if lastE != 0 {
				out = append(out, time.Duration((v-lastE)*float64(time.Second)))
			}
			lastE = 0
		}
	}
	return out
}
