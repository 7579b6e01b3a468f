package logger

import (
	"strings"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	dsschema "github.com/syndicate-go/syndicate/dataspace/schemas/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The short way of daemon output (issue 28). A daemon's lines used to
// travel as one `<log …>` message each: built by the daemon service, routed
// by the log dataspace's actor, taken apart again here. Nobody but this
// logger looks at them most of the time, so while that is so the daemon
// service hands each read's lines to the logger's facet in one activation
// (Sink.DaemonOutput), and the logger makes of them the events the
// messages would have made: same time, service, pid, stream, source and
// line, so the console, the files and `syndicate logs` cannot tell. The
// activation is charged to the daemon's account as the messages were, so
// the pipe still waits for the log (back-pressure is unchanged).
//
// Whether anyone else looks is read from the log dataspace itself: the
// logger observes its Observe assertions and counts those whose pattern
// may match a `<log …>` record. Its own subscription is one of them, so
// more than one means a script or a client is watching, and the daemons
// send messages again until it is gone.

// offerDirect makes this logger the sink's short way and keeps its
// watched flag current; stopping the facet withdraws it.
func (l *logger) offerDirect(t *dataspace.Turn, env services.Env, sink *Sink) {
	d := &direct{facet: t.FacetRef(), l: l}
	d.watched.Store(true) // until the count below says otherwise
	watchers := 0
	update := func() { d.watched.Store(watchers != 1) }
	update()
	obs := pattern.Rec(dsschema.LabelObserve, pattern.Capture(), pattern.Capture())
	t.During(env.Log, obs, func(t *dataspace.Turn, caps []preserves.Value) error {
		p, err := pattern.FromValue(caps[0])
		if err != nil || !mayMatchLog(p) {
			return nil
		}
		watchers++
		update()
		t.OnStop(func(*dataspace.Turn) error {
			watchers--
			update()
			return nil
		})
		return nil
	})
	sink.direct.Store(d)
	t.OnStop(func(*dataspace.Turn) error {
		sink.direct.CompareAndSwap(d, nil)
		return nil
	})
}

// mayMatchLog reports whether p may match some `<log …>` record.
func mayMatchLog(p pattern.Pattern) bool {
	switch p := p.(type) {
	case pattern.Discard:
		return true
	case pattern.Bind:
		return p.Pattern == nil || mayMatchLog(p.Pattern)
	case pattern.Group:
		rt, ok := p.Type.(pattern.RecType)
		return ok && preserves.Equal(rt.Label, services.LabelLog)
	}
	return false // a literal is an atom or an embedded value
}

// daemonLines is the turn of one read's lines taking the short way: the
// events handle would make of the `<log …>` messages the daemon service
// sends otherwise (services/daemon's logRecord), whose timestamp parses
// back to the line's time in UTC. The lines of a read share everything
// but their text, so what they share is formatted once per run of them:
// the part of the console, JSON and file forms before the text, made by
// the very functions that format any event (dropping what they put after
// it). Each line then adds its text, and takes a slot in the history
// without becoming an Event, unless a follower wants it (issue 28).
func (l *logger) daemonLines(t *dataspace.Turn, service preserves.Value, lines []services.OutputLine) {
	if len(lines) == 0 {
		return
	}
	s := l.state(service)
	if l.files != nil && s.dir == "" {
		s.dir = DirName(s.text)
	}
	var run *lineRun
	for i := range lines {
		ln := &lines[i]
		if run == nil || ln.Pid != lines[i-1].Pid || ln.Stream != lines[i-1].Stream || !ln.Time.Equal(lines[i-1].Time) {
			run = l.daemonRun(s, service, ln)
		}
		l.seq++
		text := ln.Text
		raw := strings.TrimSuffix(text, "\n")
		line, plain := raw, preserves.TerminalSafe(raw)
		binary := !plain && !utf8.ValidString(text)
		sl := slot{seq: l.seq, text: text, run: run, size: int32(daemonLineSize(text, binary)), binary: binary}
		l.remember(s, sl)
		if !plain {
			line, _ = plainLine(daemonLine(text, binary))
		}
		if l.console != nil {
			l.conBuf = append(l.conBuf, l.pre.console...)
			if !l.o.JSON {
				l.conBuf = append(append(append(l.conBuf, ' '), line...), '\n')
			} else if binary {
				l.conBuf = append(appendJSONLine(append(l.conBuf, `,"line":`...), daemonLine(text, binary)), "}\n"...)
			} else {
				l.conBuf = append(appendJSONString(append(l.conBuf, `,"line":`...), raw), "}\n"...)
			}
			if len(l.conBuf) >= consoleChunk {
				l.conBuf = l.console.send(l.conBuf)
			}
		}
		if l.files != nil {
			s.chunk = append(append(append(s.chunk, l.pre.file...), line...), '\n')
			s.chunkLines++
			if len(s.chunk) >= consoleChunk {
				l.writeChunk(t, s)
			}
		}
		if len(l.followers) > 0 {
			ev := sl.event()
			for f := range l.followers {
				f.add(ev)
			}
		}
	}
	s.used = l.seq
	if !l.scheduled {
		l.scheduled = true
		t.PreCommit(l.flush)
	}
}

// daemonRun starts a run of ln's service's lines sharing ln's time, pid
// and stream, and formats the part of their lines before the text.
func (l *logger) daemonRun(s *svcState, service preserves.Value, ln *services.OutputLine) *lineRun {
	run := &lineRun{daemon: true, ev: Event{Time: ln.Time.UTC(), Service: service, Pid: ln.PidValue(),
		Stream: ln.Stream, Source: services.SourceDaemon, serviceText: s.text}}
	// An event without a line ends in "\n" (console, file) or "}\n"
	// (JSON), where a line's text would go before.
	if l.console != nil && l.o.JSON {
		l.pre.console = appendJSON(l.pre.console[:0], run.ev, nil)
		l.pre.console = l.pre.console[:len(l.pre.console)-2]
	} else if l.console != nil {
		l.pre.console = appendConsole(l.pre.console[:0], run.ev, l.o.Color, nil)
		l.pre.console = l.pre.console[:len(l.pre.console)-1]
	}
	if l.files != nil {
		l.pre.file = appendFile(l.pre.file[:0], run.ev, nil)
		l.pre.file = l.pre.file[:len(l.pre.file)-1]
	}
	return run
}
