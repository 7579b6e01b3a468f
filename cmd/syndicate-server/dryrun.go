package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/daemon"
)

// A dry run (operator issue) runs every script and service, but the daemon
// and listener services start no process and bind no socket. Once the config
// dataspace has been quiet for dryRunQuiet, the server prints the services
// that would run, dependencies first, each daemon with its command, the
// ones still waiting and the dependency cycles among them, then exits 0,
// or 1 when a service would fail or wait for ever.
const (
	dryRunQuiet   = 400 * time.Millisecond
	dryRunTimeout = 60 * time.Second
)

// dryRunModel is the status model (services.StatusModel, keyed by
// display so that names show capabilities as #:ref) plus the command of
// each daemon spec. It is touched only in turns of the top-level actor.
type dryRunModel struct {
	*services.StatusModel
	commands map[string]map[string]int // <daemon ID> → command text → count
	last     time.Time
}

// display renders a value with every capability shown as #:ref, so that the
// summary does not depend on object identities.
func display(v preserves.Value) string { return preserves.FormatText(services.HideRefs(v)) }

// startDryRun installs the observers and the quiet-period check in the
// active facet (the worker of the built-in `dry-run` service).
func (s *server) startDryRun(t *dataspace.Turn, cfg *dataspace.Ref, out io.Writer) {
	m := &dryRunModel{StatusModel: services.NewStatusModel(display), commands: map[string]map[string]int{}, last: time.Now()}
	m.Changed = func(*dataspace.Turn) { m.last = time.Now() }
	m.Track(t, cfg)
	m.Watch(t, cfg, externalservices.LabelDaemon, 2, func(c []preserves.Value, d int) {
		services.Count2(m.commands, m.Key(preserves.NewRecord(externalservices.LabelDaemon, preserves.Strip(c[0]))), commandText(c[1]), d)
	})

	fr := t.FacetRef()
	begin := time.Now()
	t.LinkedTask("dry-run", func(ctx context.Context) error {
		tick := time.NewTicker(dryRunQuiet / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			done, code := false, 0
			fr.ActivateNow(func(*dataspace.Turn) error {
				if time.Since(m.last) < dryRunQuiet && time.Since(begin) < dryRunTimeout {
					return nil
				}
				if time.Since(begin) >= dryRunTimeout {
					s.log.Warn().Msg("dry run: the system did not become quiet; reporting what it has now")
				}
				code = m.report(out)
				done = true
				return nil
			})
			if done {
				s.requestExit(code)
				return dataspace.ErrKeepFacet
			}
		}
	})
}

// report prints the summary and returns the exit status: 1 when a
// service would fail or wait for ever (operator issue), else 0.
func (m *dryRunModel) report(w io.Writer) int {
	var run, waiting, failed []string
	for k := range m.Running {
		run = append(run, k)
		if m.States[k]["failed"] > 0 && !services.IsBuiltin(m.Names[k]) {
			failed = append(failed, k)
		}
	}
	for k := range m.Required {
		if m.Waiting(k) {
			waiting = append(waiting, k)
		}
	}
	run = m.Order(run)
	waiting = m.Order(waiting)
	fmt.Fprintf(w, "dry run: %d service(s) would run, dependencies first:\n", len(run))
	for _, k := range run {
		fmt.Fprintf(w, "  %s%s\n", k, m.stateText(k))
		m.writeCommands(w, k)
	}
	if len(waiting) > 0 {
		fmt.Fprintf(w, "waiting (required, not running):\n")
		for _, k := range waiting {
			var needs []string
			for _, a := range m.Awaits(k) {
				needs = append(needs, a.Text)
			}
			fmt.Fprintf(w, "  %s%s", k, m.stateText(k))
			if len(needs) > 0 {
				fmt.Fprintf(w, "  needs %s", strings.Join(needs, ", "))
			}
			fmt.Fprintln(w)
			m.writeCommands(w, k)
		}
	}
	cycles := m.Cycles(waiting)
	for _, c := range cycles {
		fmt.Fprintf(w, "dependency cycle: %s\n", strings.Join(c, " → "))
	}
	slices.Sort(failed)
	for _, k := range failed {
		fmt.Fprintf(w, "would fail: %s\n", k)
	}
	if len(waiting) > 0 || len(failed) > 0 {
		fmt.Fprintf(w, "dry run: %d service(s) would fail, %d would wait for ever\n", len(failed), len(waiting))
		return 1
	}
	return 0
}

// writeCommands prints the command of each spec of a daemon.
func (m *dryRunModel) writeCommands(w io.Writer, k string) {
	for _, c := range slices.Sorted(maps.Keys(m.commands[k])) {
		fmt.Fprintf(w, "      command: %s\n", c)
	}
}

// commandText renders what a daemon spec would run: argv quoted, or why
// it is not a spec.
func commandText(spec preserves.Value) string {
	sp, err := daemon.ParseSpec(spec)
	if err != nil {
		return "invalid spec: " + err.Error()
	}
	argv := make([]string, len(sp.Argv))
	for i, a := range sp.Argv {
		argv[i] = strconv.Quote(a)
	}
	text := strings.Join(argv, " ")
	if sp.Dir != "" {
		text += "  (in " + sp.Dir + ")"
	}
	return text
}

func (m *dryRunModel) stateText(k string) string {
	if services.IsBuiltin(m.Names[k]) {
		return "" // the server's own services run in a dry run too
	}
	ss := slices.Sorted(maps.Keys(m.States[k]))
	if len(ss) == 0 {
		return ""
	}
	return "  [" + strings.Join(ss, " ") + "]"
}
