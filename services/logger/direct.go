package logger

import (
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
// back to the line's time in UTC.
func (l *logger) daemonLines(t *dataspace.Turn, service preserves.Value, lines []services.OutputLine) {
	var pid preserves.Value
	lastPid := -1
	for _, ln := range lines {
		if ln.Pid != lastPid {
			lastPid, pid = ln.Pid, ln.PidValue()
		}
		l.log(t, Event{Time: ln.Time.UTC(), Service: service, Pid: pid, Stream: ln.Stream,
			Source: services.SourceDaemon, Line: ln.LineValue()})
	}
}
