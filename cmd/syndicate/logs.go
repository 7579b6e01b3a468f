package main

// logs: recent service output from the server's in-memory history, then,
// with -f, new lines as they come (the `<log-tail …>` protocol of
// services/logger). With --log-dir on the server, lines older than that
// history come from the log directories, which the server announces as
// `<log-dir "PATH">` (for every service at once, each is named by its
// directory).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin/session"
	"github.com/syndicate-go/syndicate/services/admin/status"
	"github.com/syndicate-go/syndicate/services/logger"
)

// logsOpts are the flags of logs.
type logsOpts struct {
	follow, json bool
	lines        int
}

func (cl *cli) logs(ctx context.Context, o logsOpts, args []string) error {
	follow, n, asJSON := &o.follow, &o.lines, &o.json
	if *n < 0 {
		return usagef("logs: -n must not be negative")
	}
	var service preserves.Value = preserves.Bool(false)
	var unknown error // the argument names no service the server runs
	if len(args) == 1 {
		var err error
		if service, unknown, err = cl.logService(ctx, args[0]); err != nil {
			return err
		}
	}
	p := &logPrinter{w: cl.stdout, json: *asJSON, color: !*asJSON && logger.UseColor(cl.stdout), errw: cl.stderr}
	caughtUp := make(chan struct{})
	sink := &logSink{p: p, caughtUp: caughtUp}
	var dir string
	s, _, err := session.Start(ctx, cl.conn, "logs", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		t.During(cfg, pattern.Rec(syndicatego.LabelLogDir, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			if d, ok := caps[0].(preserves.String); ok {
				dir = string(d)
			}
			return nil
		})
		// The log-dir assertion, if any, arrives before the answer to
		// this sync, so it is known before the history comes in.
		t.Sync(cfg, func(t *dataspace.Turn) error {
			sink.dir, sink.service, sink.n = dir, service, *n
			t.Assert(cfg, syndicatego.LogTail{Service: service, Lines: big.NewInt(int64(*n)), Follow: *follow, Sink: t.Create(sink)}.ToValue())
			return nil
		})
		return nil
	})
	if err != nil {
		return err
	}
	defer s.Close()
	// A server without the logger service never answers.
	if err := s.Await(ctx, caughtUp); err != nil {
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, session.ErrNoAnswer):
			return fmt.Errorf("no answer to <log-tail …> from %s within %v (is its logger service running?)", s.What, s.Timeout())
		}
		return err
	}
	if unknown != nil && p.count() == 0 {
		return unknown // nothing running, nothing logged: a typo
	}
	if !*follow {
		return nil
	}
	if err := s.Wait(ctx, nil); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// logService resolves logs' SERVICE: among the services the server
// knows, or, for one that has stopped, as written (`web` being `<daemon
// web>`), with unknown set to the error to report if it has no lines
// either.
func (cl *cli) logService(ctx context.Context, text string) (service preserves.Value, unknown, err error) {
	a, err := readServiceArg(text)
	if err != nil {
		return nil, nil, err
	}
	names, err := cl.serviceNames(ctx)
	if err != nil {
		return nil, nil, err
	}
	sel, err := a.selectFrom(names)
	var none *status.NoServiceError
	switch {
	case err == nil && len(sel) == 1:
		return sel[0], nil, nil
	case err == nil:
		return nil, nil, fmt.Errorf("%s names %d services; logs shows one (or all, without SERVICE)", text, len(sel))
	case errors.As(err, &none) && !a.wild:
		if sym, ok := a.v.(preserves.Symbol); ok {
			return preserves.Rec("daemon", sym), err, nil
		}
		return a.v, err, nil
	}
	return nil, nil, err
}

// logSink receives the server's answer, in the client actor.
type logSink struct {
	dataspace.BaseEntity
	p        *logPrinter
	caughtUp chan struct{}
	done     bool
	history  []logger.Event

	// Set before the request is made.
	dir     string
	service preserves.Value
	n       int
}

func (k *logSink) Message(_ *dataspace.Turn, v preserves.Value) error {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok {
		return nil
	}
	switch {
	case r.Label == services.LabelLog && len(r.Fields) == 2:
		ev, ok := logger.FromLog(r.Fields[0], r.Fields[1], time.Now())
		if !ok {
			return nil
		}
		if k.done {
			k.p.print(ev)
		} else {
			k.history = append(k.history, ev)
		}
	case r.Label == syndicatego.LabelLogCaughtUp:
		if !k.done {
			k.done = true
			k.printHistory()
			close(k.caughtUp)
		}
	case r.Label == syndicatego.LabelLogDropped:
		if d, err := syndicatego.ParseLogSkipped(r); err == nil {
			fmt.Fprintf(k.p.errw, "syndicate: %s lines skipped: this client did not keep up\n", d.Count)
		}
	}
	return nil
}

// printHistory prints the server's history, preceded, when it is short
// and there is a log directory, by older lines from the files.
func (k *logSink) printHistory() {
	if missing := k.n - len(k.history); missing > 0 && k.dir != "" {
		before := time.Now()
		if len(k.history) > 0 {
			before = k.history[0].Time
		}
		var older []logger.Event
		if k.service != preserves.Bool(false) {
			name := logger.DirName(preserves.FormatText(k.service))
			older = olderLines(filepath.Join(k.dir, name), k.service, before, missing)
		} else {
			// Every service: the files name it only by its directory.
			entries, _ := os.ReadDir(k.dir)
			for _, e := range entries {
				if e.IsDir() {
					older = append(older, olderLines(filepath.Join(k.dir, e.Name()), preserves.Symbol(e.Name()), before, missing)...)
				}
			}
			slices.SortStableFunc(older, func(a, b logger.Event) int { return a.Time.Compare(b.Time) })
			older = older[max(0, len(older)-missing):]
		}
		for _, ev := range older {
			k.p.print(ev)
		}
	}
	for _, ev := range k.history {
		k.p.print(ev)
	}
	k.history = nil
}

// olderLines returns the last n lines of a service's log directory that
// are older than before, oldest first, reading the newest files first.
func olderLines(dir string, service preserves.Value, before time.Time, n int) []logger.Event {
	files, _ := logger.RotatedFiles(dir)
	files = append(files, filepath.Join(dir, "current"))
	var out []logger.Event // newest first while collecting
	for i := len(files) - 1; i >= 0 && len(out) < n; i-- {
		evs := readLogFile(files[i], service)
		for j := len(evs) - 1; j >= 0 && len(out) < n; j-- {
			if evs[j].Time.Before(before) {
				out = append(out, evs[j])
			}
		}
	}
	slices.Reverse(out)
	return out
}

func readLogFile(path string, service preserves.Value) []logger.Event {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var evs []logger.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if ev, ok := logger.ParseFileLine(service, sc.Text()); ok {
			evs = append(evs, ev)
		}
	}
	return evs
}

// logPrinter prints events the way the server does.
type logPrinter struct {
	mu          sync.Mutex
	w, errw     io.Writer
	json, color bool
	buf         []byte
	printed     int
}

func (p *logPrinter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.printed
}

func (p *logPrinter) print(ev logger.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printed++
	if p.json {
		p.buf = logger.AppendJSON(p.buf[:0], ev)
	} else {
		p.buf = logger.AppendConsole(p.buf[:0], ev, p.color)
	}
	_, _ = p.w.Write(p.buf)
}
