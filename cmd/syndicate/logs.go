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
	"strconv"
	"strings"
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
	linesSet     bool   // -n was given
	since        string // --since DURATION|TIME
}

// sinceLines is how many lines the client asks the server for with
// --since and no -n: all it has (the logger caps a request at 2^20).
const sinceLines = 1 << 20

func (cl *cli) logs(ctx context.Context, o logsOpts, args []string) error {
	follow, n, asJSON := &o.follow, &o.lines, &o.json
	if *n < 0 {
		return usagef("logs: -n must not be negative")
	}
	var since time.Time
	if o.since != "" {
		var err error
		if since, err = parseSince(o.since, time.Now()); err != nil {
			return usagef("logs: --since: %v", err)
		}
		if !o.linesSet {
			*n = sinceLines
		}
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
			sink.dir, sink.service, sink.n, sink.since = dir, service, *n, since
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
	if unknown != nil && p.count() == 0 && !sink.hadLines {
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
	a, sel, err := cl.resolve(ctx, text)
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
	hadLines bool // the server's history had lines, before --since filtered them; set before caughtUp closes

	// Set before the request is made.
	dir     string
	service preserves.Value
	n       int
	since   time.Time // --since: no line before it (zero: no bound)
}

func (k *logSink) Message(_ *dataspace.Turn, v preserves.Value) error {
	r, ok := v.(*preserves.Record) // plain: from the server
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
			k.hadLines = len(k.history) > 0
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
	// The files hold nothing newer than since that the server's history
	// lacks when that history reaches back past since.
	reached := len(k.history) > 0 && k.history[0].Time.Before(k.since)
	k.history = slices.DeleteFunc(k.history, func(ev logger.Event) bool { return ev.Time.Before(k.since) })
	if missing := k.n - len(k.history); missing > 0 && k.dir != "" && !reached {
		before := time.Now()
		if len(k.history) > 0 {
			before = k.history[0].Time
		}
		var older []logger.Event
		if k.service != preserves.Bool(false) {
			name := logger.DirName(preserves.FormatText(k.service))
			older = olderLines(filepath.Join(k.dir, name), k.service, k.since, before, missing)
		} else {
			// Every service: the files name it only by its directory.
			entries, _ := os.ReadDir(k.dir)
			for _, e := range entries {
				if e.IsDir() {
					older = append(older, olderLines(filepath.Join(k.dir, e.Name()), preserves.Symbol(e.Name()), k.since, before, missing)...)
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
// are older than before and not older than since, oldest first, reading
// the newest files first.
func olderLines(dir string, service preserves.Value, since, before time.Time, n int) []logger.Event {
	files, _ := logger.RotatedFiles(dir)
	files = append(files, filepath.Join(dir, "current"))
	var out []logger.Event // newest first while collecting
	done := false
	for i := len(files) - 1; i >= 0 && len(out) < n && !done; i-- {
		evs := readLogFile(files[i], service)
		for j := len(evs) - 1; j >= 0 && len(out) < n; j-- {
			if evs[j].Time.Before(since) {
				done = true
				break
			}
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

// parseSince reads --since: a duration back from now (`10m`, `1h30m`,
// `2d`, with or without a leading `-`), `today`, `yesterday`, a time of
// today (`15:04`, `15:04:05`), a date (`2006-01-02`), a date and time
// (`2006-01-02 15:04[:05]`, local) or RFC 3339 (`2006-01-02T15:04:05Z`).
func parseSince(text string, now time.Time) (time.Time, error) {
	s := strings.TrimSpace(text)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	switch s {
	case "today":
		return midnight, nil
	case "yesterday":
		return midnight.AddDate(0, 0, -1), nil
	case "now":
		return now, nil
	}
	if d, ok := parseSinceDuration(strings.TrimPrefix(s, "-")); ok {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return midnight.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (10m, 1h30m, 2d) nor a time (15:04, 2006-01-02, 2006-01-02 15:04:05, RFC 3339, today, yesterday)", text)
}

// parseSinceDuration is time.ParseDuration with days (`2d`, `1d12h`).
func parseSinceDuration(s string) (time.Duration, bool) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, false
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, true
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return days + d, true
}
