package logger

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// BenchmarkDaemonLines pushes daemon-like `<log …>` records through the log
// dataspace to the logger with a log directory, in batches charged to an
// account and paced by it, as the daemon service does. ns/op is per line.
func BenchmarkDaemonLines(b *testing.B) {
	// The directory first: cleanups run last-registered first, so the
	// system (and the logger's file writer) stops before it is removed.
	dir := b.TempDir()
	sys := dataspacetest.NewSystem(b, dataspace.Options{Logger: zerolog.New(zerolog.NewTestWriter(b))})
	var env services.Env
	var fr dataspace.FacetRef
	ready, booted := make(chan struct{}), make(chan struct{})
	sys.Spawn("logger", func(t *dataspace.Turn) error {
		env = services.Env{Config: t.Create(dataspace.NewDataspace()), Log: t.Create(dataspace.NewDataspace()), Logger: zerolog.Nop()}
		t.PreventInertCheck()
		close(booted)
		return BootWith(t, env, Options{Dir: dir, FileSize: 1 << 30})
	})
	<-booted
	sys.Spawn("daemon", func(t *dataspace.Turn) error {
		fr = t.FacetRef()
		t.PreventInertCheck()
		close(ready)
		return nil
	})
	<-ready
	name := preserves.Rec("daemon", preserves.Symbol("bench"))
	acct := dataspace.NewAccount()
	const batch = 300
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		ts := preserves.String(time.Now().UTC().Format(time.RFC3339Nano))
		_ = acct.Wait(context.Background(), 0)
		if !fr.ActivateAccount(acct, func(t *dataspace.Turn) error {
			for j := i; j < i+batch && j < b.N; j++ {
				t.Message(env.Log, preserves.NewRecord(preserves.Symbol("log"), ts, preserves.NewDictionary(
					preserves.DictEntry{Key: services.LogKeyLine, Value: preserves.String(fmt.Sprintf("line %08d of the benchmark stream, with short text\n", j))},
					preserves.DictEntry{Key: services.LogKeyPid, Value: preserves.Int(4242)},
					preserves.DictEntry{Key: services.LogKeyService, Value: name},
					preserves.DictEntry{Key: services.LogKeySource, Value: services.SourceDaemon},
					preserves.DictEntry{Key: services.LogKeyStream, Value: preserves.Symbol("stdout")},
				)))
			}
			return nil
		}) {
			b.Fatal("the sending actor is gone")
		}
	}
	_ = acct.Wait(context.Background(), 0)
}

// BenchmarkDaemonOutput is the short way of daemon output (direct.go):
// reads of about 16 kB of short lines handed to the logger with a log
// directory rotated at 1 MB, as the daemon service does while nobody
// observes the log, paced by the account. ns/op is wall time per line and
// swings with the disk's fsyncs; cpu-ns/line is the process's user and
// system time per line, the file writer's goroutine included (the issue 28
// row), and -cpuprofile shows where it goes.
func BenchmarkDaemonOutput(b *testing.B) {
	dir := b.TempDir()
	sk, err := NewSink(Options{Dir: dir, FileSize: 1 << 20, FileCount: 10}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sk.Close)
	bootLogger(b, Options{Sink: sk})
	for d := sk.direct.Load(); d == nil || d.watched.Load(); d = sk.direct.Load() {
		time.Sleep(time.Millisecond) // a benchmark's set-up, not a test's synchronisation
	}
	name := preserves.Rec("daemon", preserves.Symbol("bench"))
	const batch = 290 // lines in a 16 kB read
	reads := make([]string, 64)
	for r := range reads {
		var sb strings.Builder
		for j := 0; j < batch; j++ {
			fmt.Fprintf(&sb, "line %08d of the benchmark stream, with short text\n", r*batch+j)
		}
		reads[r] = sb.String()
	}
	acct := dataspace.NewAccount()
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		// What the daemon service does per read: one copy of its text,
		// one slice of lines.
		all, at := strings.Clone(reads[(i/batch)%len(reads)]), time.Now()
		lines := make([]services.OutputLine, min(batch, b.N-i))
		for j := range lines {
			k := strings.IndexByte(all, '\n') + 1
			lines[j] = services.OutputLine{Time: at, Pid: 4242, Stream: services.StreamStdout, Text: all[:k]}
			all = all[k:]
		}
		_ = acct.Wait(context.Background(), 0)
		if !sk.DaemonOutput(acct, name, lines) {
			b.Fatal("the short way is closed")
		}
	}
	_ = acct.Wait(context.Background(), 0)
	sk.Close() // everything written
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/line")
}

// cpuTime is the process's user and system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
