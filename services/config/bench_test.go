package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// reportLatencies adds p50/p99/max metrics (in milliseconds) to b.
func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(f float64) float64 {
		i := int(f * float64(len(lat)-1))
		return float64(lat[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
}

// BenchmarkWatcherWriteToChange measures the watcher layer alone: from a
// write of a script (os.WriteFile, i.e. truncate + write) to the batch
// carrying its new content being delivered.
//
//	go test -run '^$' -bench WatcherWriteToChange -benchtime 200x ./services/config/
func BenchmarkWatcherWriteToChange(b *testing.B) {
	root := b.TempDir()
	p := filepath.Join(root, "bench.pr")
	w, err := NewWatcher(root, WatchOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Scan(); err != nil {
		b.Fatal(err)
	}
	got := make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(cs []Change) bool {
			for _, c := range cs {
				if !c.Removed {
					got <- string(c.Src)
				}
			}
			return true
		})
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want := fmt.Sprintf("<bench %d>", i)
		start := time.Now()
		if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
			b.Fatal(err)
		}
		for s := range got {
			if s == want {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	reportLatencies(b, lat)
}

// BenchmarkWriteToAssertion measures the whole service: from writing a
// script to its assertion being visible to an observer of the config
// dataspace (watcher, compile, VM, dataspace routing). Two write styles:
// os.WriteFile (truncate + write) and an editor's atomic save (temporary
// file renamed over the script).
//
//	go test -run '^$' -bench WriteToAssertion -benchtime 200x ./services/config/
func BenchmarkWriteToAssertion(b *testing.B) {
	for _, mode := range []string{"plain", "atomic"} {
		b.Run(mode, func(b *testing.B) {
			dir := tempRoot(b)
			p := filepath.Join(dir, "bench.pr")
			w := newWorld(b, testOptions())
			w.rec.mu.Lock()
			w.rec.notify = make(chan string, 1024)
			w.rec.mu.Unlock()
			w.startWatcher(dir)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				want := fmt.Sprintf("<bench %d>", i)
				start := time.Now()
				if mode == "atomic" {
					writeAtomic(b, p, want)
				} else if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
					b.Fatal(err)
				}
				timeout := time.After(5 * time.Second)
			wait:
				for {
					select {
					case s := <-w.rec.notify:
						if s == want {
							break wait
						}
					case <-timeout:
						b.Fatalf("%s never asserted", want)
					}
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			if os.Getenv("CONFIG_BENCH_DUMP") != "" {
				for i, l := range lat {
					if l > 20*time.Millisecond {
						b.Logf("write %d: %v", i, l)
					}
				}
			}
			reportLatencies(b, lat)
		})
	}
}

// BenchmarkFullRescan measures the periodic backstop over an unchanged tree
// of 50 directories × 10 scripts (stat, read and hash every file).
//
//	go test -run '^$' -bench FullRescan ./services/config/
func BenchmarkFullRescan(b *testing.B) {
	root := b.TempDir()
	for d := 0; d < 50; d++ {
		for f := 0; f < 10; f++ {
			p := filepath.Join(root, fmt.Sprintf("d%02d", d), fmt.Sprintf("f%02d.pr", f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(fmt.Sprintf("<script %d %d>", d, f)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	w, err := NewWatcher(root, WatchOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if cs, _ := w.Scan(); len(cs) != 500 {
		n := len(cs)
		b.Fatalf("initial scan found %d scripts", n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if cs, _ := w.Scan(); len(cs) != 0 {
			b.Fatalf("unchanged tree reported %d changes", len(cs))
		}
	}
}
