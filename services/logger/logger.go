// Package logger is the server's `logger` actor (services spec §1.9): it
// takes every `<log TIMESTAMP DETAIL>` message sent to the log dataspace,
// daemon output lines (§5.6) and scripts' `$log` messages alike, and turns
// each into one [Event]. Assertions to the log dataspace are ignored.
//
// # Where events go
//
// Service output is data, not diagnostics: it does not pass through the
// server's leveled zerolog logger, so --log-level never hides it. Each event
// goes to
//
//   - the console (Options.Console, the server's stderr unless
//     --service-output=false), as one JSON object (--log-format json) or one
//     line `15:04:05.000 <daemon web>[1234] out: listening on :8080`
//     (console format: plain text unescaped, colours only on a terminal);
//   - a ring buffer per service (Options.History lines), which `syndicate
//     logs` reads and follows through the admin socket (`<log-tail …>`);
//   - with --log-dir, the service's own directory (dir.go).
//
// Daemon output reaches the logger without a `<log …>` message per line
// while nothing else observes the log dataspace (direct.go): the same
// events, one activation per read of a pipe.
//
// The `<log …>` message is the reference's (its label and detail keys:
// services.LabelLog, services.LogKey…); the logger's own records,
// `<log-tail …>` and its answers, `<log-dir …>` and `<log-dropped …>`, are
// our extension, defined in dataspace/schemas/syndicateGo.prs (package
// syndicatego).
//
// Go deviation: the reference prints `TIMESTAMP SERVICE[PID] STREAM: LINE`
// with every part in Preserves text (so lines are quoted and escaped) inside
// a diagnostic message carrying a second timestamp. Here an event has one
// timestamp, the server's: a daemon line's is the time it was read; a
// `$log` message's is its TIMESTAMP when that is RFC 3339, else the time
// it arrived (another string is kept as the detail `timestamp`).
//
// # Back-pressure and bounds
//
// The console is written by a goroutine of its own fed through a bounded
// queue of buffers; when it is full, the logger's turn waits. The daemon
// service charges the output it publishes to an account and reads a pipe
// again only once the logger has handled everything before, so a console
// that cannot keep up slows the daemons down, which then block on their
// pipes, as under s6-log, and server memory stays bounded whatever they
// print (issue 12). The log directory never waits: see dir.go. Followers
// (`syndicate logs -f`) get their own bounded queue each, paced by sync
// round trips, and are told how many lines they missed when they fall
// behind.
//
// All state is owned by the actor whose facet ran Boot; the console and
// file writers own only their output.
package logger

import (
	"context"
	"io"
	"math/big"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Options says where service output goes.
type Options struct {
	// Console receives every event (nil: events are not printed).
	Console io.Writer
	// JSON prints events as JSON objects instead of console lines.
	JSON bool
	// Color adds ANSI colours to console lines.
	Color bool
	// Dir is the root of the per-service log directories ("" for none).
	Dir string
	// FileSize and FileCount limit each service's directory
	// (DefaultFileSize, DefaultFileCount when 0); FileQueue bounds the
	// bytes waiting for the disk (DefaultFileQueue when 0).
	FileSize  int64
	FileCount int
	FileQueue int64
	// FilePatience is how long the logger waits for room in the file
	// queue before it drops lines (DefaultFilePatience when 0; negative:
	// never waits).
	FilePatience time.Duration
	// History is how many lines of each service are kept in memory
	// (DefaultHistory when 0).
	History int
	// Now stamps events whose message carries no usable time (time.Now
	// when nil).
	Now func() time.Time

	// Sink, when set, is the writers to use (the server's, which outlive
	// this logger); else BootWith makes its own, closed with its facet.
	Sink *Sink

	fileGate <-chan struct{} // tests: holds file writes until closed
}

// DefaultHistory is the number of lines per service kept for `syndicate
// logs`.
const DefaultHistory = 1000

const (
	// maxServices bounds the services the logger keeps state for (ring,
	// directory, drop counts); beyond it the least recently heard is
	// forgotten, so scripts naming ever new services cannot grow it.
	maxServices = 512
	// historyBytes bounds one service's ring besides its line count.
	historyBytes = 256 << 10
	// consoleChunk is the size at which a turn's console output is handed
	// to the writer even before the turn ends; consoleQueue is how many
	// such buffers may wait.
	consoleChunk = 64 << 10
	consoleQueue = 4
)

// `<log TIMESTAMP DETAIL>` is the reference's $log vocabulary
// (services.LabelLog and its keys); our records, `<log-tail …>`, `<log-dir
// …>`, `<log-dropped …>` and `<log-caught-up>`, are defined in
// dataspace/schemas/syndicateGo.prs.

// LogDir is `<log-dir "PATH">`, asserted in the config dataspace while
// per-service log directories are kept under PATH.
func LogDir(path string) preserves.Value {
	return syndicatego.LogDir{Path: path}.ToValue()
}

// LogDropped is `<log-dropped SERVICE N REASON>`: N lines of SERVICE could
// not be written to its log directory since the server started, the last
// ones for REASON.
func LogDropped(service preserves.Value, n int64, reason string) preserves.Value {
	return syndicatego.LogDropped{ServiceName: service, Count: big.NewInt(n), Reason: reason}.ToValue()
}

// reasonTooSlow is why lines are dropped when the queue stays full.
const reasonTooSlow = "log directory too slow"

// BootWith subscribes, from the active facet, to log messages in env.Log
// and to `<log-tail …>` requests in env.Config; the console and file
// writers are linked tasks of that facet, so stopping it flushes and
// closes them. The server runs it as the worker of `<builtin logger>`
// (services.RunBuiltin): a crash restarts it with empty histories.
func BootWith(t *dataspace.Turn, env services.Env, o Options) error {
	l := &logger{env: env, o: o, svcs: map[string]*svcState{}, followers: map[*follower]struct{}{}}
	if l.o.Now == nil {
		l.o.Now = time.Now
	}
	if l.o.History <= 0 {
		l.o.History = DefaultHistory
	}
	sink := o.Sink
	if sink == nil {
		var err error
		if sink, err = NewSink(o, env.Logger); err != nil {
			return err
		}
		t.LinkedTask("log sink", func(ctx context.Context) error {
			<-ctx.Done()
			sink.Close()
			return nil
		})
	}
	l.console, l.files = sink.console, sink.files
	if l.files != nil {
		l.o.FilePatience = sink.o.FilePatience
		facet := t.FacetRef()
		lost := func(dir string, lines int64, reason string) {
			facet.ActivateNow(func(t *dataspace.Turn) error {
				l.dirLost(t, dir, lines, reason)
				return nil
			})
		}
		sink.lost.Store(&lost)
		t.OnStop(func(*dataspace.Turn) error {
			sink.lost.CompareAndSwap(&lost, nil)
			return nil
		})
		t.Assert(env.Config, LogDir(sink.root))
	}
	t.OnMessage(env.Log, pattern.Rec(services.LabelLog, pattern.Capture(), pattern.Capture()), l.handle)
	if env.LogListening != nil {
		// After the subscription in this turn: the forwarder's held
		// lines then reach Log behind it.
		t.Assert(env.LogListening, dataspace.Embed(env.Log))
	}
	l.offerDirect(t, env, sink)
	t.During(env.Config, pattern.Rec(syndicatego.LabelLogTail, pattern.Capture(), pattern.Capture(), pattern.Capture(), pattern.Capture()), l.tail)
	return nil
}

// logger is the state of the logger actor.
type logger struct {
	env     services.Env
	o       Options
	console *console
	files   *dirWriter

	seq       uint64
	svcs      map[string]*svcState
	histBytes int             // in all rings
	lastSvc   preserves.Value // cache of the last service's key
	lastState *svcState
	followers map[*follower]struct{}

	// filesStuck: the log directory made no room within the patience;
	// lines are dropped without waiting until a chunk fits again.
	filesStuck bool

	conBuf    []byte
	scheduled bool // a pre-commit flush is due in this turn
	conTime   timeCache
	fileTime  timeCache
	times     timeParser
	// pre is the part before the text of the lines of a daemon's run
	// (daemonLines), in the console and file forms.
	pre struct{ console, file []byte }
	// lastRun is the run of the last daemon line that came as a message,
	// in lastRunSvc's ring (slotOf).
	lastRun    *lineRun
	lastRunSvc *svcState
}

// svcState is what the logger keeps about one service.
type svcState struct {
	service preserves.Value
	text    string
	used    uint64 // seq of its latest event
	ring    ring

	dir        string // DirName(text), "" until first needed
	chunk      []byte // lines for the log directory, written at the end of the turn
	chunkLines int
	queued     bool  // listed in pending
	dropping   int64 // lines dropped in the current spell
	dropped    int64 // lines dropped since start, but for lost
	lost       int64 // lines the writer failed to write in its current spell
	dropReason string
	dropLogged time.Time
	dropShown  dataspace.Handle // <log-dropped …> in the config dataspace
}

// handle is the turn of one `<log …>` message.
func (l *logger) handle(t *dataspace.Turn, caps []preserves.Value) error {
	ev, ok := fromLog(caps[0], caps[1], l.o.Now, &l.times)
	if ok {
		l.log(t, ev)
	}
	return nil
}

// log takes one event to the ring, followers, console and files.
func (l *logger) log(t *dataspace.Turn, ev Event) {
	l.seq++
	ev.Seq = l.seq
	s := l.state(ev.Service)
	ev.serviceText = s.text
	s.used = l.seq
	l.remember(s, l.slotOf(s, ev))
	if l.console != nil {
		if l.o.JSON {
			l.conBuf = appendJSON(l.conBuf, ev, &l.conTime)
		} else {
			l.conBuf = appendConsole(l.conBuf, ev, l.o.Color, &l.conTime)
		}
		if len(l.conBuf) >= consoleChunk {
			l.conBuf = l.console.send(l.conBuf)
		}
	}
	if l.files != nil {
		if s.dir == "" {
			s.dir = DirName(s.text)
		}
		s.chunk = appendFile(s.chunk, ev, &l.fileTime)
		s.chunkLines++
		if len(s.chunk) >= consoleChunk {
			l.writeChunk(t, s)
		}
	}
	for f := range l.followers {
		f.add(ev)
	}
	if !l.scheduled {
		l.scheduled = true
		t.PreCommit(l.flush)
	}
}

// state returns the service's state, creating it (and forgetting the
// least recently heard service beyond maxServices).
func (l *logger) state(service preserves.Value) *svcState {
	if l.lastState != nil && (service == nil) == (l.lastSvc == nil) && (service == nil || preserves.Equal(service, l.lastSvc)) {
		return l.lastState
	}
	text := "-"
	if service != nil {
		text = preserves.FormatText(service)
	}
	s, ok := l.svcs[text]
	if !ok {
		if len(l.svcs) >= maxServices {
			l.evict()
		}
		s = &svcState{service: service, text: text}
		l.svcs[text] = s
	}
	l.lastSvc, l.lastState = service, s
	return s
}

func (l *logger) evict() {
	var oldest *svcState
	for _, s := range l.svcs {
		if s.chunkLines == 0 && (oldest == nil || s.used < oldest.used) {
			oldest = s
		}
	}
	if oldest != nil {
		l.histBytes -= oldest.ring.bytes
		delete(l.svcs, oldest.text)
		if l.lastState == oldest {
			l.lastState, l.lastSvc = nil, nil
		}
	}
}

// flush ends a turn that logged something: the console gets the turn's
// lines (waiting while its queue is full), the log directory its chunks
// (never waiting), followers what they can take.
func (l *logger) flush(t *dataspace.Turn) error {
	l.scheduled = false
	if len(l.conBuf) > 0 {
		l.conBuf = l.console.send(l.conBuf)
	}
	if l.files != nil {
		for _, s := range l.svcs {
			if s.chunkLines > 0 {
				l.writeChunk(t, s)
			}
		}
	}
	for f := range l.followers {
		f.pump(t)
	}
	return nil
}

// writeChunk offers s's pending lines to the log directory, counting them
// as dropped when there is no room, and reporting a spell of drops in the
// service's log, the server's log and `<log-dropped …>` once there is.
func (l *logger) writeChunk(t *dataspace.Turn, s *svcState) {
	data, lines := s.chunk, s.chunkLines
	// The writer owns data now; the next chunk starts at its size (in a
	// buffer the writer is done with, when there is one), so it rarely
	// grows.
	s.chunk, s.chunkLines = l.files.buffer(min(cap(data), consoleChunk+4096)), 0
	if s.dropping > 0 {
		note := Event{Time: l.o.Now(), Source: services.SourceServer, Extra: []preserves.DictEntry{
			{Key: preserves.Symbol("dropped"), Value: preserves.Int(s.dropping)}}}
		note.Line = preserves.String("lines dropped, the log directory was too slow")
		data = append(AppendFile(nil, note), data...)
	}
	now := l.o.Now()
	patience := l.o.FilePatience
	if l.filesStuck {
		patience = 0
	}
	if !l.files.offer(fileChunk{dir: s.dir, data: data, lines: lines}, patience) {
		l.filesStuck = true
		if s.dropping == 0 {
			l.env.Logger.Warn().Str("service", s.text).Msg("log directory too slow: dropping this service's lines (counted)")
		}
		s.dropping += int64(lines)
		s.dropped += int64(lines)
		s.dropReason = reasonTooSlow
		// The count in status follows at most once a second.
		if now.Sub(s.dropLogged) >= time.Second {
			l.showDropped(t, s, now)
		}
		return
	}
	l.filesStuck = false
	if s.dropping > 0 {
		l.env.Logger.Warn().Str("service", s.text).Int64("dropped", s.dropping).Int64("total", s.dropped).
			Msg("log directory caught up; lines were dropped")
		s.dropping = 0
		l.showDropped(t, s, now)
	}
}

func (l *logger) showDropped(t *dataspace.Turn, s *svcState, now time.Time) {
	s.dropLogged = now
	if s.dropShown != 0 {
		t.Retract(s.dropShown)
	}
	name := s.service
	if name == nil {
		name = dash
	}
	s.dropShown = t.Assert(l.env.Config, LogDropped(name, s.dropped+s.lost, s.dropReason))
}

// dirLost is the file writer's news of dir: lines lost so far in a spell
// of failed writes, and why; lines 0 ends the spell.
func (l *logger) dirLost(t *dataspace.Turn, dir string, lines int64, reason string) {
	for _, s := range l.svcs {
		if s.dir != dir {
			continue
		}
		if lines == 0 {
			s.dropped += s.lost
			s.lost = 0
		} else {
			s.lost, s.dropReason = lines, reason
		}
		l.showDropped(t, s, l.o.Now())
		return
	}
}

// console writes buffers on a goroutine of its own. send waits while
// consoleQueue buffers are already waiting: that is the back-pressure.
type console struct {
	w     io.Writer
	queue chan []byte
	free  chan []byte
	done  chan struct{}
}

func newConsole(w io.Writer) *console {
	return &console{w: w, queue: make(chan []byte, consoleQueue), free: make(chan []byte, consoleQueue+1), done: make(chan struct{})}
}

// send hands b to the writer and returns an empty buffer to fill next.
func (c *console) send(b []byte) []byte {
	select {
	case c.queue <- b:
	case <-c.done:
		return b[:0]
	}
	select {
	case nb := <-c.free:
		return nb[:0]
	default:
		return make([]byte, 0, len(b))
	}
}

func (c *console) run(ctx context.Context) error {
	defer close(c.done)
	write := func(b []byte) {
		_, _ = c.w.Write(b)
		select {
		case c.free <- b:
		default:
		}
	}
	serveQueue(ctx, c.queue, write)
	return nil
}
