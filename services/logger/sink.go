package logger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Sink is where service output goes: the console writer and the log
// directory's writer, each a goroutine of its own. The server makes it
// before the actor system and closes it after the system has shut down,
// so it outlives the logger actor (which feeds it, and may be restarted)
// and every daemon: what a daemon prints while it is being stopped at
// shutdown reaches the console and its file through Late, in the same
// form as every other line, whatever --log-level says (issue 22).
type Sink struct {
	o       Options
	root    string // of the log directory, absolute; "" for none
	console *console
	files   *dirWriter
	stop    context.CancelFunc
	wg      sync.WaitGroup
	// lost is the current logger's dirLost (the file writer's news of
	// failing writes), nil while no logger runs.
	lost atomic.Pointer[func(dir string, lines int64, reason string)]
	// direct is the current logger's short way for daemon output, nil
	// while no logger runs (DaemonOutput).
	direct atomic.Pointer[direct]

	lateMu sync.Mutex // Late's formatting state
	late   timeParser
}

// NewSink starts the writers o asks for. log receives the writers' own
// diagnostics (a directory that cannot be written).
func NewSink(o Options, log zerolog.Logger) (*Sink, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	k := &Sink{o: o}
	ctx, stop := context.WithCancel(context.Background())
	k.stop = stop
	run := func(f func(context.Context) error) {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			_ = f(ctx)
		}()
	}
	if o.Console != nil {
		k.console = newConsole(o.Console)
		run(k.console.run)
	}
	if o.Dir != "" {
		root, err := filepath.Abs(o.Dir)
		if err != nil {
			stop()
			return nil, fmt.Errorf("log directory: %w", err)
		}
		k.root = root
		size, count, queue := o.FileSize, o.FileCount, o.FileQueue
		if size <= 0 {
			size = DefaultFileSize
		}
		if count <= 0 {
			count = DefaultFileCount
		}
		if queue <= 0 {
			queue = DefaultFileQueue
		}
		if k.o.FilePatience == 0 {
			k.o.FilePatience = DefaultFilePatience
		}
		// A log directory that cannot be made is reported, and each write
		// tries again: losing the logs must not stop the server.
		if err := os.MkdirAll(root, 0o755); err != nil {
			log.Error().Err(err).Str("dir", root).Msg("log directory not available; service lines are not kept until it is")
		}
		k.files = newDirWriter(root, size, count, queue, log, o.Now)
		k.files.gate = o.fileGate
		k.files.lost = func(dir string, lines int64, reason string) {
			if f := k.lost.Load(); f != nil {
				(*f)(dir, lines, reason)
			}
		}
		run(k.files.run)
	}
	return k, nil
}

// Close writes what is queued, closes the files and stops the writers.
func (k *Sink) Close() {
	k.stop()
	k.wg.Wait()
}

// Late writes a `<log TIMESTAMP DETAIL>` record to the console and the
// log directory directly, from any goroutine: for output that arrives
// when the logger actor, or the service that would send it the record, is
// already stopping. It is not kept for `syndicate logs` (the server is
// going away) and does nothing once the sink is closed.
func (k *Sink) Late(record preserves.Value) {
	r, ok := preserves.Unwrap(record).(*preserves.Record)
	if !ok || len(r.Fields) != 2 {
		return
	}
	k.lateMu.Lock()
	defer k.lateMu.Unlock()
	ev, ok := fromLog(r.Fields[0], r.Fields[1], k.o.Now, &k.late)
	if !ok {
		return
	}
	if k.console != nil {
		var b []byte
		if k.o.JSON {
			b = AppendJSON(nil, ev)
		} else {
			b = AppendConsole(nil, ev, k.o.Color)
		}
		k.console.send(b)
	}
	if k.files != nil {
		k.files.offer(fileChunk{dir: DirName(ev.ServiceText()), data: AppendFile(nil, ev), lines: 1}, k.o.FilePatience)
	}
}

// direct is a running logger as DaemonOutput reaches it.
type direct struct {
	facet dataspace.FacetRef
	l     *logger
	// watched: something besides the logger observes `<log …>` in the
	// log dataspace (set by the logger's turns).
	watched atomic.Bool
}

// DaemonOutput is the short way of daemon output to the logger
// (services.LogDirect): one activation of the logger's facet per batch,
// charged to acct, while nothing but the logger observes `<log …>`
// messages. The logger learns of an observer one turn after the log
// dataspace does, so an observer sees the lines read after that, as it
// sees the messages sent after its Observe arrived.
func (k *Sink) DaemonOutput(acct *dataspace.Account, service preserves.Value, lines []services.OutputLine) bool {
	d := k.direct.Load()
	if d == nil || d.watched.Load() {
		return false
	}
	return d.facet.ActivateAccount(acct, func(t *dataspace.Turn) error {
		d.l.daemonLines(t, service, lines)
		return nil
	})
}
