//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkFactsMemory measures what a small assertion costs the server
// (issue 28 item 3): a config file asserting 300,000 `<x N>` is dropped
// into an idle server's config directory, then removed. It reports the
// resident memory per fact once the file is processed (RSS above idle,
// divided by the facts), the peak (VmHWM) over that steady figure, and
// the RSS 10 s after the file is gone over the idle RSS (also for
// anonymous memory alone). It ignores b.N.
//
//	go test -tags e2e -run '^$' -bench FactsMemory -benchtime 1x ./cmd/syndicate-server/
//
// FACTS overrides the count; WIRE_HOLD=30s holds the server that long
// once loaded and again once settled after the removal, to profile it
// (SYNDICATE_PPROF). Memory figures
// are meant without -race.
func BenchmarkFactsMemory(b *testing.B) {
	facts := 300_000
	if s := os.Getenv("FACTS"); s != "" {
		fmt.Sscan(s, &facts)
	}
	dir := b.TempDir()
	var sb strings.Builder
	for i := range facts {
		fmt.Fprintf(&sb, "<x %d>\n", i)
	}
	r := start(b, "--log-format", "json", "-c", dir)
	pid := r.cmd.Process.Pid
	wait := func(what string, cond func() bool) {
		deadline := time.Now().Add(120 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("server running", func() bool { return r.stderr.Has(`"message":"server running"`) })
	// Settling periods are part of the measure: the server returns idle
	// heap to the system every 2 s (memory.go).
	time.Sleep(3 * time.Second)
	idle := procStatus(b, pid, "VmRSS")
	idleAnon := procStatus(b, pid, "RssAnon")

	path := filepath.Join(dir, "facts.pr")
	if err := os.WriteFile(path+".tmp~", []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	begin := time.Now()
	if err := os.Rename(path+".tmp~", path); err != nil {
		b.Fatal(err)
	}
	wait("the facts processed", func() bool { return r.stderr.Has(`"path":"`+path+`"`, `"message":"processed"`) })
	loaded := time.Since(begin)
	// The dataspace takes the facts after the script's turn, and the
	// server returns the garbage of loading every 2 s: steady is when RSS
	// has moved by less than 2% for 3 s.
	steady := settledRSS(b, pid)
	peak := procStatus(b, pid, "VmHWM")
	if d, err := time.ParseDuration(os.Getenv("WIRE_HOLD")); err == nil {
		fmt.Fprintln(os.Stderr, "holding", d)
		time.Sleep(d) // time to profile the server (see SYNDICATE_PPROF)
	}

	if err := os.Remove(path); err != nil {
		b.Fatal(err)
	}
	wait("the facts removed", func() bool { return r.stderr.Has(`"path":"`+path+`"`, `"message":"removed"`) })
	time.Sleep(10 * time.Second)
	after := procStatus(b, pid, "VmRSS")
	afterAnon := procStatus(b, pid, "RssAnon")
	settled := settledRSS(b, pid)
	if d, err := time.ParseDuration(os.Getenv("WIRE_HOLD")); err == nil {
		fmt.Fprintln(os.Stderr, "holding after the removal", d)
		time.Sleep(d)
	}
	r.stop(b)

	b.ReportMetric((steady-idle)*(1<<20)/float64(facts), "B/fact")
	b.ReportMetric(steady, "steady-RSS-MB")
	b.ReportMetric(peak/steady, "peak/steady")
	b.ReportMetric(idle, "idle-RSS-MB")
	b.ReportMetric(after/idle, "after-removal/idle")
	b.ReportMetric(settled/idle, "settled-after-removal/idle")
	// Anonymous memory only: the program's own pages that the run read
	// in (the compiler's, say) are file-backed and not the server's heap.
	b.ReportMetric(afterAnon/idleAnon, "anon-after-removal/idle")
	b.ReportMetric(loaded.Seconds(), "load-s")
}

// settledRSS waits (up to a minute) until pid's RSS has moved by less than
// 2% over 3 s, and returns it in MB.
func settledRSS(b *testing.B, pid int) float64 {
	var last []float64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		last = append(last, procStatus(b, pid, "VmRSS"))
		if n := len(last); n >= 7 {
			lo, hi := last[n-7], last[n-7]
			for _, v := range last[n-7:] {
				lo, hi = min(lo, v), max(hi, v)
			}
			if hi-lo < 0.02*hi {
				return last[n-1]
			}
		}
	}
	return last[len(last)-1]
}
