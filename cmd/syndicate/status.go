package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin/cmdline"
	"github.com/syndicate-go/syndicate/services/admin/session"
	"github.com/syndicate-go/syndicate/services/admin/status"
	"github.com/syndicate-go/syndicate/services/logger"
)

// outputWait bounds how long `status NAME` waits for a running daemon's
// output lines after the snapshot.
const outputWait = 2 * time.Second

// statusOpts are the flags of status.
type statusOpts struct{ watch, json, all bool }

// statusView prints the status: once, or (--watch) on every change, in
// place on a terminal.
type statusView struct {
	cl      *cli
	o       statusOpts
	m       *status.Model
	literal preserves.Value // the one service named, for the detail view
	filter  pattern.Pattern
	tty     bool
	width   int
}

func (cl *cli) status(ctx context.Context, o statusOpts, args []string) error {
	v := &statusView{cl: cl, o: o, tty: logger.IsTerminal(cl.stdout), width: cmdline.Width(cl.stdout)}
	if len(args) == 1 {
		a, sel, err := cl.resolve(ctx, args[0])
		if err != nil {
			return err
		}
		if v.filter = a.p; !a.wild && len(sel) == 1 {
			v.literal = sel[0]
			v.filter = pattern.Lit{Value: v.literal}
		}
	}
	v.m = status.NewModel(v.filter)
	if o.all || v.filter != nil {
		v.m.ShowAll() // declared daemons nothing requires, as inactive
	}
	gotOutput := make(chan struct{}, 1)
	updates := make(chan struct{}, 1)
	s, err := v.subscribe(ctx, gotOutput, updates)
	if err != nil {
		return err
	}
	defer s.Close()
	v.awaitOutput(ctx, gotOutput)
	if err := v.print(); err != nil || !o.watch {
		return err
	}
	var tick <-chan time.Time
	if v.tty {
		// FOR counts on between changes.
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-updates:
		case <-tick:
		case <-s.Done():
			return s.Err()
		case <-ctx.Done():
			return nil
		}
		if err := v.print(); err != nil {
			return err
		}
	}
}

// subscribe starts the session: the model's subscriptions, and the
// output request of the one service named.
func (v *statusView) subscribe(ctx context.Context, gotOutput, updates chan struct{}) (*session.Session, error) {
	live := false // set in the actor once the snapshot is complete
	s, _, err := session.StartSynced(ctx, v.cl.conn, "status", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		pending := false
		v.m.Subscribe(t, cfg, func(t *dataspace.Turn) {
			if v.answered() {
				notify(gotOutput)
			}
			if !live || pending {
				return
			}
			// Coalesce the changes of one burst into one update.
			pending = true
			t.After(50*time.Millisecond, func(*dataspace.Turn) error {
				pending = false
				notify(updates)
				return nil
			})
		})
		v.m.Request(t, cfg, v.literal, v.o.json)
		return nil
	}, func(*dataspace.Turn, *dataspace.Ref) { live = true })
	return s, err
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// answered reports whether the daemon service has answered what the view
// asked for.
func (v *statusView) answered() bool { return v.m.Answered(v.literal, v.o.json) }

// awaitOutput gives the daemon service a moment to answer the output and
// figures requests (in turns of its own) when the one service named is
// a running daemon, or (--json) any daemon runs.
func (v *statusView) awaitOutput(ctx context.Context, gotOutput chan struct{}) {
	if !v.m.AwaitsAnswer(v.literal, v.o.json) {
		return
	}
	// A notice may be stale (answered before a process appeared): each
	// one is checked.
	deadline := time.After(outputWait)
	for !v.answered() {
		select {
		case <-gotOutput:
		case <-deadline:
			return
		case <-ctx.Done():
			return
		}
	}
}

// print shows the snapshot: as JSON, as the detail view of the one
// service named, or as the table. Built-in services are left out unless
// --all or the argument asks for them.
func (v *statusView) print() error {
	svcs := v.m.Snapshot()
	if !v.o.all && v.filter == nil {
		svcs = slices.DeleteFunc(svcs, status.Service.Builtin)
	}
	now := time.Now()
	detail := v.literal != nil && len(svcs) == 1
	if detail {
		v.m.Detail(&svcs[0])
	}
	// One write per screenful, not one per line (10,000 services).
	bw := bufio.NewWriterSize(v.cl.stdout, 64<<10)
	defer bw.Flush()
	w := bw
	switch {
	case v.o.json:
		b, err := json.Marshal(svcs)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	case v.o.watch && v.tty:
		fmt.Fprint(w, "\x1b[H\x1b[2J") // redraw in place
	case v.o.watch:
		fmt.Fprintf(w, "--- %s\n", now.Format(time.RFC3339))
	}
	if !v.o.json {
		if detail {
			status.WriteDetail(w, svcs[0], now)
		} else {
			status.WriteTable(w, svcs, now, v.width)
			if v.filter == nil {
				status.WriteConnections(w, v.m.Connections(v.o.all), now, v.width)
			}
		}
	}
	if !v.o.watch && slices.ContainsFunc(svcs, status.Service.Failed) {
		return exitStatus(1) // a required service has failed
	}
	return nil
}
