//go:build e2e

package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// BenchmarkStatusBesideFacts: `syndicate status`, end to end (exec of
// the client, connection, subscriptions, first answer, table), against a
// server whose config dataspace holds N unrelated `<x I>` facts besides
// ten services (issue 23 item 5: within 2x of N = 10^3 at N = 10^6).
// One op is one status run; cpu-ms/op is the client's and the server's
// CPU time together, steadier than wall time on a shared machine.
//
//	go test -tags e2e -run '^$' -bench StatusBesideFacts -benchtime 20x ./cmd/syndicate-server/
func BenchmarkStatusBesideFacts(b *testing.B) {
	client := buildClient(b)
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			sock, cfg := filepath.Join(dir, "admin.sock"), filepath.Join(dir, "config")
			var services strings.Builder
			for i := range 10 {
				fmt.Fprintf(&services, "<require-service <milestone m%d>>\n", i)
			}
			writeFile(b, filepath.Join(cfg, "services.pr"), services.String())
			r := start(b, "-c", cfg, "--admin-socket", sock)
			s := holdFacts(b, sock, n)
			defer s.Close()
			status := func() {
				out, err := exec.Command(client, "--admin", sock, "--timeout", "2m", "status").CombinedOutput()
				if err != nil || !strings.Contains(string(out), "<milestone m9>") {
					b.Fatalf("status: %v\n%s", err, out)
				}
			}
			status() // warm: the server's first observer of each shape
			server := procCPU(b, r.cmd.Process.Pid)
			var clientCPU time.Duration
			b.ResetTimer()
			for range b.N {
				cmd := exec.Command(client, "--admin", sock, "--timeout", "2m", "status")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("status: %v\n%s", err, out)
				}
				clientCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.StopTimer()
			total := clientCPU + procCPU(b, r.cmd.Process.Pid) - server
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// holdFacts asserts n facts `<x I>` in the config dataspace through the
// admin socket, 1,000 per turn, and returns once the server has them all
// (a sync round trip); they are held until the session closes.
func holdFacts(b *testing.B, sock string, n int) *session.Session {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, fr, err := session.Start(ctx, session.Options{AdminSocket: sock, Timeout: time.Minute}, "facts",
		func(*dataspace.Turn, *dataspace.Ref) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 1000 {
		fr.Activate(func(t *dataspace.Turn) error {
			for j := i; j < min(i+1000, n); j++ {
				t.Assert(s.Cfg, preserves.Rec("x", preserves.Int(int64(j))))
			}
			return nil
		})
	}
	if err := s.Flush(ctx, fr); err != nil {
		b.Fatal(err)
	}
	return s
}
