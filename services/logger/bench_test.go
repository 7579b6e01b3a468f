package logger

import (
	"context"
	"fmt"
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
