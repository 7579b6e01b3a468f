//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// BenchmarkStartup measures the time from exec to the first script's
// effects being visible (its log message printed by the logger actor), and
// reports p50/p99 over b.N starts.
//
//	go test -tags e2e -run '^$' -bench Startup -benchtime 30x ./cmd/syndicate-server/
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "first.pr"), []byte(`<first-script-ran>
$log ! <log "-" {line: "first script"}>
`), 0o644); err != nil {
		b.Fatal(err)
	}
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		begin := time.Now()
		cmd, out := startBenchServer(b, "-c", dir)
		for !strings.Contains(out.String(), "first script") {
			if time.Since(begin) > 10*time.Second {
				b.Fatalf("no output: %s", out.String())
			}
			time.Sleep(100 * time.Microsecond)
		}
		samples = append(samples, time.Since(begin))
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkIdleRSS runs the shipped configuration until its daemons are up
// and reports the server's resident memory.
//
//	go test -tags e2e -run '^$' -bench IdleRSS -benchtime 3x ./cmd/syndicate-server/
func BenchmarkIdleRSS(b *testing.B) {
	var total float64
	for i := 0; i < b.N; i++ {
		cmd, out := startBenchServer(b, "-c", "../../etc/syndicate")
		begin := time.Now()
		for !strings.Contains(out.String(), "heartbeat daemon is ready") {
			if time.Since(begin) > 10*time.Second {
				b.Fatalf("shipped config did not come up: %s", out.String())
			}
			time.Sleep(time.Millisecond)
		}
		// Let start-up garbage settle before reading VmRSS.
		time.Sleep(500 * time.Millisecond)
		total += procStatus(b, cmd.Process.Pid, "VmRSS")
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	b.ReportMetric(total/float64(b.N), "RSS-MB")
}

// stopOnFailure makes sure a server started by a benchmark never outlives it,
// even when the benchmark fails before stopping it: the whole process group
// is killed at cleanup (a no-op when it already exited).
// startBenchServer starts the server for a benchmark with JSON logs on
// its stderr (returned) and no admin socket, in a process group of its
// own that is killed when the benchmark ends.
func startBenchServer(b *testing.B, args ...string) (*exec.Cmd, *testutil.Buffer) {
	b.Helper()
	out := &testutil.Buffer{}
	cmd := exec.Command(serverBin, append([]string{"--no-banner", "--log-format", "json", "--admin-socket", "-"}, args...)...)
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stopOnFailure(b, cmd)
	return cmd, out
}

func stopOnFailure(b *testing.B, cmd *exec.Cmd) {
	b.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}
