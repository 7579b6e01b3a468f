package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin"
)

func benchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := cliRun(t, append(args, "--json", "--quiet")...)
	require.Equal(t, 0, code, errs)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

func requireOrdered(t *testing.T, m map[string]any) {
	t.Helper()
	p50, p90, p99, mx := m["p50_us"].(float64), m["p90_us"].(float64), m["p99_us"].(float64), m["max_us"].(float64)
	require.True(t, p50 > 0 && p50 <= p90 && p90 <= p99 && p99 <= mx, "quantiles %v %v %v %v", p50, p90, p99, mx)
}

// Every message every publisher sends reaches every subscriber, and the
// result says how fast.
func TestBenchPubSub(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	m := benchJSON(t, "--admin", s.path, "bench", "pubsub", "--pub", "2", "--sub", "3", "--per-turn", "4", "--size", "100", "--duration", "300ms")
	sent, received := int64(m["sent"].(float64)), int64(m["received"].(float64))
	require.Positive(t, sent)
	require.Zero(t, sent%4, "whole turns of 4")
	require.Equal(t, 3*sent, received)
	require.Equal(t, m["expected"], m["received"])
	require.Positive(t, m["msg_per_s"].(float64))
	require.InDelta(t, m["msg_per_s"].(float64)*100/1e6, m["mb_per_s"].(float64), 1e-6)
	requireOrdered(t, m)
	// Nothing published is left behind in the config dataspace.
	code, out, _ := cliRun(t, "--admin", s.path, "dump", "<syndicate-bench _ _ _>")
	require.Equal(t, 0, code)
	require.Empty(t, out)
}

// Live progress goes to stderr once a second, the result to stdout.
func TestBenchProgressAndText(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	code, out, errs := cliRun(t, "--admin", s.path, "bench", "pubsub", "--duration", "1500ms")
	require.Equal(t, 0, code, errs)
	// About a second in, or later on a loaded machine.
	require.Regexp(t, `(?m)^\s+\d+\.\ds  sent \S+  received \S+  \(\S+ msg/s received\)$`, errs)
	require.Regexp(t, `(?m)^  received +\d+ msgs in \S+s  \S+ msg/s  \S+ MB/s$`, out)
	require.Regexp(t, `(?m)^  latency   p50 \S+  p90 \S+  p99 \S+  max \S+`, out)
	require.NotContains(t, out, "MISSING")
}

func TestBenchReqRep(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	m := benchJSON(t, "--admin", s.path, "bench", "reqrep", "--n", "300", "--warmup", "20")
	require.Equal(t, 300.0, m["round_trips"])
	require.Positive(t, m["round_trips_per_s"].(float64))
	requireOrdered(t, m)
	code, out, errs := cliRun(t, "--admin", s.path, "bench", "reqrep", "--n", "100", "--warmup", "0", "--quiet")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "client → server → responder → server → client")
	require.Regexp(t, `(?m)^ +\S+ – \S+ +#+ +\d+$`, out, "a histogram")
}

// The admin socket's peer credentials name the server (here this very
// process), whose memory is read before and after.
func TestBenchIdleSessions(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	m := benchJSON(t, "--admin", s.path, "bench", "idle", "--sessions", "30", "--settle", "0s")
	require.Equal(t, 30.0, m["sessions"])
	require.Equal(t, float64(os.Getpid()), m["server_pid"])
	require.Positive(t, m["rss_before_kb"].(float64))
	require.Positive(t, m["rss_after_kb"].(float64))
	require.Contains(t, m, "rss_per_session_kb")
}

// Through a relay listener and a sturdy ref instead of the admin socket.
func TestBenchThroughRelayListener(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, admin.Options{})
	addr, ref := relayListener(t, s)
	m := benchJSON(t, "--connect", addr, "--ref", ref, "bench", "reqrep", "--n", "50", "--warmup", "5")
	require.Equal(t, addr, m["server"])
	requireOrdered(t, m)
	m = benchJSON(t, "--connect", addr, "--ref", ref, "bench", "idle", "--sessions", "10", "--settle", "0s")
	require.Equal(t, float64(os.Getpid()), m["server_pid"], "a Unix listener's peer credentials")
	m = benchJSON(t, "--connect", addr, "--ref", ref, "bench", "pubsub", "--duration", "100ms", "--sub", "0")
	require.Positive(t, m["sent"].(float64))
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "frob"},
		{"bench", "pubsub", "--pub", "0"},
		{"bench", "pubsub", "--size", "-1"},
		{"bench", "reqrep", "--n", "0"},
		{"bench", "idle", "--sessions", "0"},
		{"bench", "idle", "extra"},
	} {
		code, _, errs := cliRun(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, errs)
		require.True(t, strings.HasPrefix(errs, "syndicate: "), errs)
	}
}
