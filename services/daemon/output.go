package daemon

import (
	"context"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/services"
)

// Daemon output back-pressure (issue 12 §6). The pipe readers hand over
// the lines of each read as one batch; outputBatch publishes a batch as
// `<log …>` messages in one turn charged to the spec's account, after
// waiting until everything published before has been handled by every
// recipient (the logger writing it out, any script observing $log). So
// output is read no faster than the log takes it: when the log falls
// behind, the reader stops reading and the daemon blocks on its pipe, as
// under s6-log, and the server holds at most two reads' worth of any
// process's output whatever it prints.

// outputWaiting counts the readers waiting for the log right now (tests
// see back-pressure happen through it).
var outputWaiting atomic.Int64

// outputBatch is the event "a process printed these lines" (the lines of
// one read of one pipe). The lines are kept in the tail for the status and
// logged from the daemon service's own facet, not the worker's nor the
// spec's, so that what a process prints while it is being stopped (restart,
// retraction, file removal) still reaches the log. Once ctx is done (the
// pipes are being cut after the exit) it publishes without waiting.
func (d *daemonRun) outputBatch(ctx context.Context, acct *dataspace.Account, batch []Line) {
	for _, l := range batch {
		d.hist.line(l)
	}
	if acct.Debt() > 0 {
		outputWaiting.Add(1)
		_ = acct.Wait(ctx, 0)
		outputWaiting.Add(-1)
	}
	if !d.s.out.ActivateAccount(acct, func(t *dataspace.Turn) error {
		// The lines of one read share their timestamp and pid: make
		// those values once.
		var ts, pid preserves.Value
		var at time.Time
		lastPid := -1
		for _, l := range batch {
			if ts == nil || !l.Time.Equal(at) {
				at = l.Time
				if at.IsZero() {
					at = d.s.clock.Now()
				}
				ts = preserves.String(script.Timestamp(at))
			}
			if l.Pid != lastPid {
				lastPid, pid = l.Pid, pidValue(l.Pid)
			}
			t.Message(d.env.Log, logRecord(l, d.name, ts, pid))
		}
		return nil
	}) {
		// The service itself is stopping (server shutdown): the log
		// actor may be gone, so the lines go straight to the output's
		// writers, else to the server's log.
		for _, l := range batch {
			if d.env.LogLate != nil {
				at := l.Time
				if at.IsZero() {
					at = d.s.clock.Now()
				}
				d.env.LogLate(logRecord(l, d.name, preserves.String(script.Timestamp(at)), pidValue(l.Pid)))
				continue
			}
			d.log.Warn().Str("stream", l.Stream.String()).Int("pid", l.Pid).Str("line", string(l.Text)).Msg("daemon output")
		}
	}
}

func pidValue(pid int) preserves.Value {
	if pid > 0 {
		return preserves.Int(pid)
	}
	return preserves.Symbol("unknown")
}

func logRecord(l Line, service, timestamp, pid preserves.Value) preserves.Value {
	var line preserves.Value
	if utf8.Valid(l.Text) {
		line = preserves.String(l.Text)
	} else {
		line = preserves.ByteString(l.Text)
	}
	// In key order already, so that NewDictionary has nothing to sort.
	return preserves.NewRecord(services.LabelLog, timestamp, preserves.NewDictionary(
		preserves.DictEntry{Key: services.LogKeyLine, Value: line},
		preserves.DictEntry{Key: services.LogKeyPid, Value: pid},
		preserves.DictEntry{Key: services.LogKeyService, Value: service},
		preserves.DictEntry{Key: services.LogKeySource, Value: services.SourceDaemon},
		preserves.DictEntry{Key: services.LogKeyStream, Value: streamSymbol[l.Stream]},
	))
}

// streamSymbol names each stream in the $log vocabulary.
var streamSymbol = [...]preserves.Symbol{Stdout: services.StreamStdout, Stderr: services.StreamStderr}
