// Package trace writes the runtime's causal trace (services spec §1.6) to
// a file: one trace.prs TraceEntry per line, in Preserves text syntax.
//
// A Writer is a dataspace.Tracer. The runtime calls Trace on actor
// goroutines with the actor's turn lock held, so Trace only offers the
// record to a bounded channel and returns: when the channel is full, or
// the records waiting hold more than MaxPendingActions actions in all (the
// disk cannot keep up), the record is dropped and counted, never waited
// for. Both bounds matter: a few turns of a large fan-out can pin as much
// memory as thousands of small ones. One goroutine renders records (Entry), buffers the text and flushes
// it at least every FlushInterval (100 ms by default), so a trace read
// while the server runs is at most that stale. Dropped records and write
// errors are reported on the logger, not in the trace, whose every line
// stays a TraceEntry. Tracing is best-effort diagnostics: nothing here can
// block, slow down beyond the rendering cost, or crash the runtime.
package trace

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// ErrClosed is returned by Close when the writer was already closed.
var ErrClosed = errors.New("trace: writer closed")

// Defaults of Options.
const (
	DefaultBuffer            = 1 << 14
	DefaultFlushInterval     = 100 * time.Millisecond
	DefaultMaxPendingActions = 1 << 20
)

// Options tunes a Writer; the zero value is usable.
type Options struct {
	// Logger receives reports of dropped records and write errors.
	Logger zerolog.Logger
	// Buffer is how many records may wait for the writer goroutine before
	// new ones are dropped (DefaultBuffer if <= 0).
	Buffer int
	// MaxPendingActions bounds the actions (plus one per record) held by
	// waiting records (DefaultMaxPendingActions if <= 0).
	MaxPendingActions int64
	// FlushInterval bounds how long written text stays buffered
	// (DefaultFlushInterval if <= 0).
	FlushInterval time.Duration
}

// Writer renders trace records to an io.Writer. Trace is safe for
// concurrent use; Close once when done.
type Writer struct {
	out    *bufio.Writer
	closer io.Closer // the file, for NewFileWriter
	log    zerolog.Logger
	every  time.Duration

	ch     chan *dataspace.TraceRecord
	quit   chan struct{}
	done   chan struct{}
	closed atomic.Bool

	dropped    atomic.Uint64
	written    atomic.Uint64
	pending    atomic.Int64 // weight of queued records
	maxPending int64

	closeOnce sync.Once
	err       error // first write error; written by the writer goroutine, read after done
}

// NewFileWriter creates (or truncates) the file at path and returns a
// Writer appending trace entries to it. The file is closed by Close.
func NewFileWriter(path string, opts Options) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := NewWriter(f, opts)
	w.closer = f
	return w, nil
}

// NewWriter returns a Writer writing to out (not closed by Close).
func NewWriter(out io.Writer, opts Options) *Writer {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxPendingActions <= 0 {
		opts.MaxPendingActions = DefaultMaxPendingActions
	}
	w := &Writer{
		out:   bufio.NewWriterSize(out, 64<<10),
		log:   opts.Logger,
		every: opts.FlushInterval,
		ch:    make(chan *dataspace.TraceRecord, opts.Buffer),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),

		maxPending: opts.MaxPendingActions,
	}
	go w.loop()
	return w
}

// Trace queues r for writing, or drops it (counted) if the queue is full.
// After Close it does nothing. It never blocks.
func (w *Writer) Trace(r *dataspace.TraceRecord) {
	if w.closed.Load() {
		return
	}
	n := weight(r)
	if w.pending.Add(n) <= w.maxPending {
		select {
		case w.ch <- r:
			return
		default:
		}
	}
	w.pending.Add(-n)
	w.dropped.Add(1)
}

// weight is what a queued record counts against MaxPendingActions.
func weight(r *dataspace.TraceRecord) int64 {
	if r.Turn != nil {
		return 1 + int64(len(r.Turn.Actions))
	}
	return 1
}

// Dropped returns how many records were dropped because the writer could
// not keep up (or after a write error).
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Written returns how many entries have been written so far.
func (w *Writer) Written() uint64 { return w.written.Load() }

// Close writes every record queued before it, flushes, closes the file
// (NewFileWriter) and returns the first write or close error. Records
// traced after Close are ignored.
func (w *Writer) Close() error {
	err := ErrClosed
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		close(w.quit)
		<-w.done
		err = w.err
		if w.closer != nil {
			if cerr := w.closer.Close(); err == nil {
				err = cerr
			}
		}
	})
	return err
}

// loop is the writer goroutine.
func (w *Writer) loop() {
	defer close(w.done)
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	var reported uint64 // drops already reported
	dirty := false
	for {
		select {
		case r := <-w.ch:
			w.write(r)
			dirty = true
		case <-tick.C:
			if dirty {
				w.flush()
				dirty = false
			}
			reported = w.reportDrops(reported)
		case <-w.quit:
			// Trace refuses new records once closed is set, so this drains
			// what was queued before Close (and at most a few racing sends).
		drain:
			for {
				select {
				case r := <-w.ch:
					w.write(r)
				default:
					break drain
				}
			}
			w.flush()
			w.reportDrops(reported)
			return
		}
	}
}

func (w *Writer) write(r *dataspace.TraceRecord) {
	w.pending.Add(-weight(r))
	if w.err != nil {
		w.dropped.Add(1)
		return
	}
	err := preserves.WriteText(w.out, Entry(r), preserves.WriterOptions{})
	if err == nil {
		err = w.out.WriteByte('\n')
	}
	if err != nil {
		w.fail(err)
		return
	}
	w.written.Add(1)
}

func (w *Writer) flush() {
	if w.err == nil {
		if err := w.out.Flush(); err != nil {
			w.fail(err)
		}
	}
}

// fail records the first write error; from then on records are dropped.
func (w *Writer) fail(err error) {
	w.err = err
	w.log.Error().Err(err).Msg("trace: cannot write the trace file; tracing stops")
}

func (w *Writer) reportDrops(reported uint64) uint64 {
	if n := w.dropped.Load(); n != reported {
		w.log.Warn().Uint64("dropped", n-reported).Uint64("dropped_total", n).Msg("trace: records dropped (the trace writer could not keep up, or could not write)")
		return n
	}
	return reported
}

var _ dataspace.Tracer = (*Writer)(nil)
