package daemon

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
//
// While nothing but the logger observes the log dataspace, a batch takes
// the short way instead (services.LogDirect, issue 28): one activation of
// the logger, charged to the same account, with no `<log …>` message per
// line; the logger makes the same events of it.

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
	// One copy of the batch's texts, as one string whose parts the lines
	// are: the read buffer they point into is reused once we return.
	n := 0
	for _, l := range batch {
		n += len(l.Text)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, l := range batch {
		sb.Write(l.Text)
	}
	all := sb.String()
	for _, l := range batch[max(0, len(batch)-TailLines):] {
		d.hist.line(l) // copies the few it keeps
	}
	if acct.Debt() > 0 {
		outputWaiting.Add(1)
		_ = acct.Wait(ctx, 0)
		outputWaiting.Add(-1)
	}
	lp := outputLinesPool.Get().(*[]services.OutputLine)
	defer func() {
		if cap(*lp) <= 4096 { // a read of 16k empty lines is not kept
			clear(*lp) // the pool pins no text
			outputLinesPool.Put(lp)
		}
	}()
	lines := slices.Grow((*lp)[:0], len(batch))[:len(batch)]
	*lp = lines
	for i, l := range batch {
		at := l.Time
		if at.IsZero() {
			at = d.s.clock.Now()
		}
		lines[i] = services.OutputLine{Time: at, Pid: l.Pid, Stream: streamSymbol[l.Stream], Text: all[:len(l.Text)]}
		all = all[len(l.Text):]
	}
	// The short way while nobody but the logger looks (issue 28).
	if d.env.LogDirect != nil && d.env.LogDirect.DaemonOutput(acct, d.name, lines) {
		return
	}
	if !d.s.out.ActivateAccount(acct, func(t *dataspace.Turn) error {
		// The lines of one read share their timestamp and pid: make
		// those values once.
		var ts, pid preserves.Value
		var at time.Time
		lastPid := -1
		for _, l := range lines {
			if ts == nil || !l.Time.Equal(at) {
				at = l.Time
				ts = preserves.String(script.Timestamp(at))
			}
			if l.Pid != lastPid {
				lastPid, pid = l.Pid, l.PidValue()
			}
			t.Message(d.env.Log, logRecord(l, d.name, ts, pid))
		}
		return nil
	}) {
		// The service itself is stopping (server shutdown): the log
		// actor may be gone, so the lines go straight to the output's
		// writers, else to the server's log.
		for _, l := range lines {
			if d.env.LogLate != nil {
				d.env.LogLate(logRecord(l, d.name, preserves.String(script.Timestamp(l.Time)), l.PidValue()))
				continue
			}
			d.log.Warn().Str("stream", string(l.Stream)).Int("pid", l.Pid).Str("line", l.Text).Msg("daemon output")
		}
	}
}

func logRecord(l services.OutputLine, service, timestamp, pid preserves.Value) preserves.Value {
	// In key order already, so that NewDictionary has nothing to sort.
	return preserves.NewRecord(services.LabelLog, timestamp, preserves.NewDictionary(
		preserves.DictEntry{Key: services.LogKeyLine, Value: l.LineValue()},
		preserves.DictEntry{Key: services.LogKeyPid, Value: pid},
		preserves.DictEntry{Key: services.LogKeyService, Value: service},
		preserves.DictEntry{Key: services.LogKeySource, Value: services.SourceDaemon},
		preserves.DictEntry{Key: services.LogKeyStream, Value: l.Stream},
	))
}

// outputLinesPool holds the slices outputBatch hands its lines over in:
// every taker is done with the slice when its call returns (the logger's
// turn and the messages' turn run before ActivateAccount returns, and
// keep only the texts), so it is reused rather than allocated per read.
var outputLinesPool = sync.Pool{New: func() any { return new([]services.OutputLine) }}

// streamSymbol names each stream in the $log vocabulary.
var streamSymbol = [...]preserves.Symbol{Stdout: services.StreamStdout, Stderr: services.StreamStderr}
