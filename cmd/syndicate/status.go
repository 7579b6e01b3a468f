package main

// status: every service that is required, running, or reports a state,
// built from four subscriptions in the config dataspace:
//
//	<require-service NAME>    the service is wanted
//	<run-service NAME>        the dependency tracker (or a flag) started it
//	<service-state NAME S>    its states (started, ready, failed, complete, …)
//	<process-status NAME {pid: P, restarts: R, since: "RFC3339"}>
//	                          one per running daemon process (our extension,
//	                          docs/protocol.md)
//
// The first snapshot is printed after a sync round trip, so it is complete;
// --watch then reprints whenever something changes (changes arriving
// together are printed once).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// process is one <process-status …> record.
type process struct {
	PID      int64     `json:"pid"`
	Restarts int64     `json:"restarts"`
	Since    time.Time `json:"since"`
}

// service is one line of the status table.
type service struct {
	name      preserves.Value
	Name      string    `json:"name"`
	Required  bool      `json:"required"`
	Running   bool      `json:"running"`
	States    []string  `json:"states"`
	Processes []process `json:"processes,omitempty"`
}

// model accumulates the subscriptions' assertions; counts, because the
// dataspace may hold one assertion several times (from several parties).
type model struct {
	mu       sync.Mutex
	filter   pattern.Pattern // nil: everything
	required map[string]int
	running  map[string]int
	states   map[string]map[string]int
	procs    map[string]map[string]int // name → text of info → count
	names    map[string]preserves.Value
}

func newModel(filter pattern.Pattern) *model {
	return &model{filter: filter, required: map[string]int{}, running: map[string]int{},
		states: map[string]map[string]int{}, procs: map[string]map[string]int{}, names: map[string]preserves.Value{}}
}

func (m *model) key(name preserves.Value) string {
	name = preserves.Strip(name)
	k := preserves.FormatText(name)
	m.names[k] = name
	return k
}

func bump(mp map[string]int, k string, d int) {
	mp[k] += d
	if mp[k] <= 0 {
		delete(mp, k)
	}
}

func bump2(mp map[string]map[string]int, k, sub string, d int) {
	inner := mp[k]
	if inner == nil {
		inner = map[string]int{}
		mp[k] = inner
	}
	bump(inner, sub, d)
	if len(inner) == 0 {
		delete(mp, k)
	}
}

// subscribe installs the four subscriptions; changed runs after each change.
func (m *model) subscribe(t *dataspace.Turn, cfg *dataspace.Ref, changed func(t *dataspace.Turn)) {
	cap := pattern.Bind{Pattern: pattern.Discard{}}
	watch := func(label string, nfields int, apply func(caps []preserves.Value, d int)) {
		fields := make([]pattern.Pattern, nfields)
		for i := range fields {
			fields[i] = cap
		}
		on := func(d int) func(t *dataspace.Turn, caps []preserves.Value) {
			return func(t *dataspace.Turn, caps []preserves.Value) {
				if len(caps) < nfields+1 {
					return
				}
				m.mu.Lock()
				apply(caps[1:], d)
				m.mu.Unlock()
				changed(t)
			}
		}
		subscribe(t, cfg, pattern.Rec(preserves.Symbol(label), fields...), &observer{onAssert: on(1), onRetract: on(-1)})
	}
	watch("require-service", 1, func(c []preserves.Value, d int) { bump(m.required, m.key(c[0]), d) })
	watch("run-service", 1, func(c []preserves.Value, d int) { bump(m.running, m.key(c[0]), d) })
	watch("service-state", 2, func(c []preserves.Value, d int) {
		bump2(m.states, m.key(c[0]), preserves.FormatText(preserves.Strip(c[1])), d)
	})
	watch("process-status", 2, func(c []preserves.Value, d int) {
		bump2(m.procs, m.key(c[0]), preserves.FormatText(preserves.Strip(c[1])), d)
	})
}

// stateOrder puts the framework's states first, in lifecycle order.
var stateOrder = map[string]int{"started": 0, "ready": 1, "failed": 2, "complete": 3}

// snapshot returns the services, sorted by name in Preserves order.
func (m *model) snapshot() []service {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := map[string]bool{}
	for _, mp := range []map[string]int{m.required, m.running} {
		for k := range mp {
			keys[k] = true
		}
	}
	for k := range m.states {
		keys[k] = true
	}
	for k := range m.procs {
		keys[k] = true
	}
	var out []service
	for k := range keys {
		name := m.names[k]
		if m.filter != nil {
			if _, ok := pattern.Match(m.filter, name); !ok {
				continue
			}
		}
		s := service{name: name, Name: k, Required: m.required[k] > 0, Running: m.running[k] > 0, States: []string{}}
		for st := range m.states[k] {
			s.States = append(s.States, st)
		}
		slices.SortFunc(s.States, func(a, b string) int {
			oa, ka := stateOrder[a]
			ob, kb := stateOrder[b]
			switch {
			case ka && kb:
				return oa - ob
			case ka:
				return -1
			case kb:
				return 1
			}
			return strings.Compare(a, b)
		})
		for info := range m.procs[k] {
			if p, ok := parseProcess(info); ok {
				s.Processes = append(s.Processes, p)
			}
		}
		slices.SortFunc(s.Processes, func(a, b process) int { return int(a.PID - b.PID) })
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b service) int { return preserves.Compare(a.name, b.name) })
	return out
}

// parseProcess reads the info dictionary of <process-status NAME INFO>;
// missing or ill-typed keys are left zero.
func parseProcess(text string) (process, bool) {
	v, err := preserves.ParseText(text)
	if err != nil {
		return process{}, false
	}
	d, ok := v.(*preserves.Dictionary)
	if !ok {
		return process{}, false
	}
	var p process
	if x, ok := d.Get(preserves.Symbol("pid")); ok {
		if n, ok := x.(preserves.Int); ok {
			p.PID = int64(n)
		}
	}
	if x, ok := d.Get(preserves.Symbol("restarts")); ok {
		if n, ok := x.(preserves.Int); ok {
			p.Restarts = int64(n)
		}
	}
	if x, ok := d.Get(preserves.Symbol("since")); ok {
		if s, ok := x.(preserves.String); ok {
			if tm, err := time.Parse(time.RFC3339Nano, string(s)); err == nil {
				p.Since = tm
			}
		}
	}
	return p, true
}

// state is the STATE column: the asserted states, or what the
// require/run assertions say when there are none.
func (s service) state() string {
	switch {
	case len(s.States) > 0:
		return strings.Join(s.States, ",")
	case s.Required && !s.Running:
		return "waiting" // for its dependencies
	case s.Running:
		return "starting"
	}
	return "-"
}

func (s service) wanted() string {
	switch {
	case s.Required:
		return "required"
	case s.Running:
		return "run"
	}
	return "-"
}

// maxNameWidth bounds the SERVICE column of the table (JSON has full names).
const maxNameWidth = 72

// shortName renders a service name for the table: capabilities as `#:ref`
// (their descriptions are long and say little), and at most maxNameWidth
// characters.
func shortName(name preserves.Value) string {
	s := preserves.FormatText(hideRefs(name))
	if r := []rune(s); len(r) > maxNameWidth {
		s = string(r[:maxNameWidth-1]) + "…"
	}
	return s
}

func hideRefs(v preserves.Value) preserves.Value {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Embedded:
		return preserves.NewEmbedded(preserves.Symbol("ref"))
	case *preserves.Record:
		fs := make([]preserves.Value, len(x.Fields))
		for i, f := range x.Fields {
			fs[i] = hideRefs(f)
		}
		return preserves.NewRecord(hideRefs(x.Label), fs...)
	case preserves.Sequence:
		out := make(preserves.Sequence, len(x))
		for i, e := range x {
			out[i] = hideRefs(e)
		}
		return out
	case *preserves.Set:
		out := make([]preserves.Value, 0, x.Len())
		for _, e := range x.Elems() {
			out = append(out, hideRefs(e))
		}
		return preserves.NewSet(out...)
	case *preserves.Dictionary:
		es := make([]preserves.DictEntry, 0, x.Len())
		for _, e := range x.Entries() {
			es = append(es, preserves.DictEntry{Key: hideRefs(e.Key), Value: hideRefs(e.Value)})
		}
		return preserves.NewDictionary(es...)
	}
	return v
}

func writeTable(w io.Writer, svcs []service, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tWANTED\tSTATE\tPID\tRESTARTS\tUPTIME")
	for _, s := range svcs {
		pid, restarts, uptime := "-", "-", "-"
		if len(s.Processes) > 0 {
			var pids []string
			var r int64
			var since time.Time
			for _, p := range s.Processes {
				pids = append(pids, fmt.Sprint(p.PID))
				r += p.Restarts
				if !p.Since.IsZero() && (since.IsZero() || p.Since.After(since)) {
					since = p.Since
				}
			}
			pid, restarts = strings.Join(pids, ","), fmt.Sprint(r)
			if !since.IsZero() {
				uptime = now.Sub(since).Truncate(time.Second).String()
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", shortName(s.name), s.wanted(), s.state(), pid, restarts, uptime)
	}
	tw.Flush()
}

func runStatus(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flagSet("status", true)
	watchF := fs.Bool("watch", false, "keep running and print the table again whenever it changes")
	jsonF := fs.Bool("json", false, "print JSON (with --watch: one JSON array per line and change)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var filter pattern.Pattern
	switch fs.NArg() {
	case 0:
	case 1:
		var err error
		if filter, err = parsePattern(fs.Arg(0)); err != nil {
			return err
		}
	default:
		return usagef("status takes at most one PATTERN (a service name pattern such as '<daemon _>')")
	}
	s, err := cl.connect(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	m := newModel(filter)
	print := func() error {
		svcs := m.snapshot()
		if *jsonF {
			b, err := json.Marshal(svcs)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cl.stdout, "%s\n", b)
			return err
		}
		if *watchF {
			fmt.Fprintf(cl.stdout, "--- %s\n", time.Now().Format(time.RFC3339))
		}
		writeTable(cl.stdout, svcs, time.Now())
		return nil
	}
	synced := make(chan struct{})
	updates := make(chan struct{}, 1)
	live := false // set in the actor once the snapshot is complete
	_, err = s.spawn("status", func(t *dataspace.Turn) error {
		pending := false
		m.subscribe(t, s.cfg, func(t *dataspace.Turn) {
			if !live || pending {
				return
			}
			// Coalesce the changes of one burst into one update.
			pending = true
			t.After(50*time.Millisecond, func(*dataspace.Turn) error {
				pending = false
				select {
				case updates <- struct{}{}:
				default:
				}
				return nil
			})
		})
		t.Sync(s.cfg, func(*dataspace.Turn) error {
			live = true
			close(synced)
			return nil
		})
		return nil
	})
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, cl.conn.timeout)
	defer cancel()
	if err := s.wait(tctx, synced); err != nil {
		if ctx.Err() == nil && tctx.Err() != nil {
			return fmt.Errorf("no answer from %s within %v", s.what, cl.conn.timeout)
		}
		return err
	}
	if err := print(); err != nil {
		return err
	}
	if !*watchF {
		return nil
	}
	for {
		select {
		case <-updates:
			if err := print(); err != nil {
				return err
			}
		case <-s.conn.Done():
			return s.connErr()
		case <-ctx.Done():
			return nil
		}
	}
}
