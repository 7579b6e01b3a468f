// Package status is the status model of `syndicate status`, read from
// the config dataspace by a client, with its renderings: a table, a detail
// view and JSON. The part it shares with `syndicate-server --dry-run` and
// the server's diagnostics is services.StatusModel.
//
// Every service that is required, running, or reports a state,
// built from these assertions in the config dataspace (the first three and
// depends-on are read by services.StatusModel, as the dry run and the
// server's diagnostics read them):
//
//	<require-service NAME>    the service is wanted
//	<run-service NAME>        the dependency tracker (or a flag) started it
//	<service-state NAME S>    its states (started, ready, failed, complete, …)
//	<process-status NAME {pid: P, restarts: R, since: "RFC3339"}>
//	                          one per running daemon process (our extension,
//	                          docs/protocol.md)
//	<service-info NAME INFO>  since, restarts, last exit, phase, reasons
//	                          (services.Info, merged over its sources)
//	<depends-on NAME DEP>     for waiting reasons, cycles and the chain
//
// `status NAME` (a service name, no wildcard) also asserts
// `<output-request NAME>` and shows the `<service-output NAME LINES>` the
// daemon service answers with. It and `status --json` ask for the
// figures of running daemons (`<stats-request NAME>`), answered with
// `<process-stats NAME {pid memory tasks oomKills}>` per process.
//
// The first snapshot is printed after a sync round trip, so it is complete;
// --watch then reprints whenever something changes (changes arriving
// together are printed once).
package status

import (
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Process is one <process-status …> record, with the figures of its
// cgroup (<process-stats …>, when asked for): bytes of memory, tasks
// (processes and threads) and OOM kills; nil when not known.
type Process struct {
	PID      int64     `json:"pid"`
	Restarts int64     `json:"restarts"`
	Since    time.Time `json:"since"`
	Memory   *int64    `json:"memory,omitempty"`
	Tasks    *int64    `json:"tasks,omitempty"`
	OOMKills *int64    `json:"oomKills,omitempty"`
}

// Service is one line of the status table.
type Service struct {
	name      preserves.Value
	Name      string    `json:"name"`
	Required  bool      `json:"required"`
	Running   bool      `json:"running"`
	States    []string  `json:"states"`
	Processes []Process `json:"processes,omitempty"`
	// From <service-info …> (services.Info): when the state began, the
	// restarts in total and within the restart window, the last exit,
	// a phase refining the state, and why it failed or waits.
	Since    *time.Time `json:"since,omitempty"`
	Restarts int        `json:"restarts"`
	Recent   int        `json:"recentRestarts"`
	Exit     string     `json:"lastExit,omitempty"`
	ExitAt   *time.Time `json:"lastExitAt,omitempty"`
	Phase    string     `json:"phase,omitempty"`
	Reasons  []string   `json:"reasons,omitempty"`
	// A scheduled daemon: when its last run began and when the next is
	// due, and the runs skipped because the previous one still ran.
	LastRun *time.Time `json:"lastRun,omitempty"`
	NextRun *time.Time `json:"nextRun,omitempty"`
	Skipped int        `json:"skippedRuns,omitempty"`
	// A socket-activated daemon: each socket, "ADDRESS: STATE".
	Sockets []string `json:"sockets,omitempty"`
	// StatusText is what the daemon itself says (sd_notify STATUS=,
	// <status-text NAME TEXT>), one per process.
	StatusText []string `json:"statusText,omitempty"`
	Pos        string   `json:"pos,omitempty"`
	// LogDropped counts lines the logger could not write to the
	// service's --log-dir directory (<log-dropped NAME N>).
	LogDropped int64 `json:"logDropped,omitempty"`
	// LogDropReason is why the last of them were lost ("log directory
	// too slow", "no space left on device", "refused: …").
	LogDropReason string `json:"logDropReason,omitempty"`
	// Only in the NAME view: what it depends on, and its last output.
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	Output    []OutputLine `json:"output,omitempty"`
}

// Dependency is one `<depends-on NAME <service-state DEP STATE>>`, with
// DEP's own dependencies.
type Dependency struct {
	Name      string       `json:"name"`
	Awaits    string       `json:"awaits"`
	States    []string     `json:"states"`
	Met       bool         `json:"met"`
	DependsOn []Dependency `json:"dependsOn,omitempty"`
}

// OutputLine is one line of a daemon's recent output.
type OutputLine struct {
	At     time.Time `json:"at"`
	Stream string    `json:"stream"`
	Line   string    `json:"line"`
}

// Value is the service's name as a value.
func (s Service) Value() preserves.Value { return s.name }

// Builtin reports whether the service is one of the server's own
// (`<builtin NAME>`), which status hides unless asked for all.
func (s Service) Builtin() bool { return services.IsBuiltin(s.name) }

// Failed reports whether the service is required and failed (status then
// exits 1).
func (s Service) Failed() bool {
	return s.Required && slices.Contains(s.States, "failed")
}

// Model is the status model (services.StatusModel) plus what only this
// command shows: processes, service-info, status texts, dropped log lines
// and a daemon's output. The snapshot is read on another goroutine than
// the actor's that changes it, hence mu.
type Model struct {
	*services.StatusModel
	mu          sync.Mutex
	filter      pattern.Pattern           // nil: everything
	procs       map[string]map[string]int // name → text of info → count
	stats       map[string]map[string]int // name → text of figures → count
	infos       map[string]map[string]int // name → text of service-info → count
	outputs     map[string]preserves.Value
	texts       map[string]map[string]int // name → status text → count
	dropped     map[string]int64          // name → log lines dropped
	dropReasons map[string]string         // name → why the last were dropped
	// connections (connections.go): KIND SUBJECT → text of info → count
	conns        map[string]map[string]int
	connSubjects map[string][2]preserves.Value
	// all shows declared daemons that nothing requires (--all), from
	// declared: <daemon ID> → count of <daemon ID SPEC>.
	all      bool
	declared map[string]int
}

// NewModel returns an empty model showing the services filter matches
// (nil: every service).
func NewModel(filter pattern.Pattern) *Model {
	m := &Model{StatusModel: services.NewStatusModel(nil), filter: filter,
		procs: map[string]map[string]int{}, stats: map[string]map[string]int{}, infos: map[string]map[string]int{},
		outputs: map[string]preserves.Value{}, texts: map[string]map[string]int{}, dropped: map[string]int64{}, dropReasons: map[string]string{},
		conns: map[string]map[string]int{}, connSubjects: map[string][2]preserves.Value{}}
	m.Locker = &m.mu
	m.declared = map[string]int{}
	return m
}

// ShowAll makes Snapshot list also the daemons declared but not required
// (`status --all`), as inactive. Call it before Subscribe.
func (m *Model) ShowAll() { m.all = true }

// HasOutput reports whether the output of service name has arrived.
func (m *Model) HasOutput(name preserves.Value) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outputs[m.Key(name)] != nil
}

// IsRunning reports whether service name runs.
func (m *Model) IsRunning(name preserves.Value) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Running[m.Key(name)] > 0
}

// Subscribe installs the subscriptions; changed runs after each change.
func (m *Model) Subscribe(t *dataspace.Turn, cfg *dataspace.Ref, changed func(t *dataspace.Turn)) {
	m.Changed = changed
	m.Track(t, cfg)
	watch := func(label preserves.Symbol, apply func(k string, v preserves.Value, d int)) {
		m.Watch(t, cfg, label, 2, func(c []preserves.Value, d int) { apply(m.Key(c[0]), preserves.Strip(c[1]), d) })
	}
	watch(syndicatego.LabelProcessStatus, func(k string, v preserves.Value, d int) { services.Count2(m.procs, k, m.Text(v), d) })
	watch(syndicatego.LabelProcessStats, func(k string, v preserves.Value, d int) { services.Count2(m.stats, k, m.Text(v), d) })
	watch(services.LabelServiceInfo, func(k string, v preserves.Value, d int) { services.Count2(m.infos, k, m.Text(v), d) })
	if m.all {
		m.Watch(t, cfg, externalservices.LabelDaemon, 2, func(c []preserves.Value, d int) {
			services.Count(m.declared, m.Key(preserves.Rec("daemon", preserves.Strip(c[0]))), d)
		})
	}
	watch(syndicatego.LabelStatusText, func(k string, v preserves.Value, d int) {
		if text, ok := v.(preserves.String); ok {
			services.Count2(m.texts, k, string(text), d)
		}
	})
	m.Watch(t, cfg, syndicatego.LabelLogDropped, 3, func(c []preserves.Value, d int) {
		k := m.Key(c[0])
		n, ok := preserves.Strip(c[1]).(preserves.Int)
		reason, _ := preserves.Strip(c[2]).(preserves.String)
		if ok && d > 0 && int64(n) >= m.dropped[k] { // a total: it only grows
			m.dropped[k], m.dropReasons[k] = int64(n), string(reason)
		}
	})
	m.watchConnections(t, cfg)
	watch(syndicatego.LabelServiceOutput, func(k string, v preserves.Value, d int) {
		if d > 0 {
			m.outputs[k] = v
		} else {
			delete(m.outputs, k)
		}
	})
}

// PhaseInactive is the phase `status --all` gives a declared daemon that
// nothing requires.
const PhaseInactive = "inactive"

// stateOrder puts the framework's states first, in lifecycle order.
var stateOrder = map[string]int{"started": 0, "ready": 1, "failed": 2, "complete": 3}

// Snapshot returns the services, sorted by name in Preserves order.
func (m *Model) Snapshot() []Service {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := map[string]bool{}
	for _, mp := range []map[string]int{m.Required, m.Running, m.declared} {
		for k := range mp {
			keys[k] = true
		}
	}
	for _, mp := range []map[string]map[string]int{m.States, m.procs, m.infos} {
		for k := range mp {
			keys[k] = true
		}
	}
	var out []Service
	for k := range keys {
		name := m.Names[k]
		if m.filter != nil {
			if _, ok := pattern.Match(m.filter, name); !ok {
				continue
			}
		}
		s := Service{name: name, Name: k, Required: m.Required[k] > 0, Running: m.Running[k] > 0, States: m.stateList(k)}
		for info := range m.procs[k] {
			if p, ok := parseProcess(info); ok {
				s.Processes = append(s.Processes, p)
			}
		}
		slices.SortFunc(s.Processes, func(a, b Process) int { return int(a.PID - b.PID) })
		m.addFigures(s.Processes, k)
		m.addInfo(&s, k)
		if !s.Required && !s.Running && len(s.States) == 0 && s.Phase == "" && m.declared[k] > 0 {
			s.Phase = PhaseInactive
		}
		s.StatusText = slices.Sorted(maps.Keys(m.texts[k]))
		s.LogDropped, s.LogDropReason = m.dropped[k], m.dropReasons[k]
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Service) int { return preserves.Compare(a.name, b.name) })
	return out
}

// FiguresPending reports whether a running daemon's figures have not
// arrived yet: the one named (non-nil), or any.
func (m *Model) FiguresPending(name preserves.Value) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name != nil {
		k := m.Key(name)
		return len(m.procs[k]) > 0 && len(m.stats[k]) == 0
	}
	for k := range m.procs {
		if r, ok := preserves.Unwrap(m.Names[k]).(*preserves.Record); ok && preserves.Equal(r.Label, externalservices.LabelDaemon) && len(m.stats[k]) == 0 {
			return true
		}
	}
	return false
}

// Request asks the daemon service for what it gives only on request, for
// as long as the active facet lasts: the output and figures of the one
// service named (for anything but a daemon the assertions are harmless),
// else, with figures set, the figures of every running daemon (`status
// --json`; the table has no room for them).
func (m *Model) Request(t *dataspace.Turn, cfg *dataspace.Ref, name preserves.Value, figures bool) {
	switch {
	case name != nil:
		t.Assert(cfg, syndicatego.OutputRequest{ServiceName: name}.ToValue())
		t.Assert(cfg, syndicatego.StatsRequest{ServiceName: name}.ToValue())
	case figures:
		p := pattern.Rec(syndicatego.LabelProcessStatus, pattern.Bind{Pattern: pattern.Rec(externalservices.LabelDaemon, pattern.Discard{})}, pattern.Discard{})
		t.During(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
			t.Assert(cfg, syndicatego.StatsRequest{ServiceName: caps[0]}.ToValue())
			return nil
		})
	}
}

// AwaitsAnswer reports whether a daemon service will answer Request with the
// same arguments: the service named is a running daemon, or (no name,
// figures set) any daemon may run.
func (m *Model) AwaitsAnswer(name preserves.Value, figures bool) bool {
	if name == nil {
		return figures
	}
	r, ok := name.(*preserves.Record)
	return ok && preserves.Equal(r.Label, externalservices.LabelDaemon) && m.IsRunning(name)
}

// Answered reports whether the daemon service has answered Request with
// the same arguments.
func (m *Model) Answered(name preserves.Value, figures bool) bool {
	switch {
	case name != nil:
		return m.HasOutput(name) && !m.FiguresPending(name)
	case figures:
		return !m.FiguresPending(nil)
	}
	return true
}

// addFigures joins the figures of service k to its processes by pid.
// Called with m.mu held.
func (m *Model) addFigures(procs []Process, k string) {
	for text := range m.stats[k] {
		v, err := preserves.ParseText(text)
		if err != nil {
			continue
		}
		f, err := syndicatego.ParseProcessFigures(v)
		if err != nil {
			continue
		}
		pid, ok := f.Pid.(syndicatego.ProcessPidPresent)
		if !ok || !pid.Pid.IsInt64() {
			continue
		}
		i := slices.IndexFunc(procs, func(p Process) bool { return p.PID == pid.Pid.Int64() })
		if i < 0 {
			continue
		}
		if x, ok := f.Memory.(syndicatego.ProcessMemoryPresent); ok && x.Memory.IsInt64() {
			procs[i].Memory = ptr(x.Memory.Int64())
		}
		if x, ok := f.Tasks.(syndicatego.ProcessTasksPresent); ok && x.Tasks.IsInt64() {
			procs[i].Tasks = ptr(x.Tasks.Int64())
		}
		if x, ok := f.OomKills.(syndicatego.ProcessOomKillsPresent); ok && x.OomKills.IsInt64() {
			procs[i].OOMKills = ptr(x.OomKills.Int64())
		}
	}
}

func ptr(n int64) *int64 { return &n }

// addInfo fills in what the service-info assertions and the dependencies
// say about service k. Called with m.mu held.
func (m *Model) addInfo(s *Service, k string) {
	var parts []services.Info
	for text := range m.infos[k] {
		if v, err := preserves.ParseText(text); err == nil {
			parts = append(parts, services.ParseInfo(v))
		}
	}
	slices.SortFunc(parts, func(a, b services.Info) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	i := services.MergeInfo(parts...)
	if !i.Since.IsZero() {
		s.Since = &i.Since
	}
	s.Restarts, s.Recent, s.Exit, s.Phase, s.Pos = i.Restarts, i.Recent, i.Exit, string(i.Phase), i.Pos
	if !i.ExitAt.IsZero() {
		s.ExitAt = &i.ExitAt
	}
	if !i.LastRun.IsZero() {
		s.LastRun = &i.LastRun
	}
	if !i.NextRun.IsZero() {
		s.NextRun = &i.NextRun
	}
	s.Skipped = i.Skipped
	s.Sockets = i.Sockets
	if len(parts) == 0 {
		// An older server: the restart counts of process-status.
		for _, p := range s.Processes {
			s.Restarts += int(p.Restarts)
		}
	}
	s.Reasons = i.Reasons
	if s.Required && !s.Running {
		if cycle := m.Cycle(k); cycle != nil {
			s.Reasons = append(s.Reasons, "dependency cycle: "+strings.Join(cycle, " → "))
		}
		for _, dep := range m.unmet(k) {
			s.Reasons = append(s.Reasons, "waiting for "+dep)
		}
	}
	// The server reports a cycle too, once it has lasted a while.
	var kept []string
	for _, r := range s.Reasons {
		if !slices.Contains(kept, r) {
			kept = append(kept, r)
		}
	}
	s.Reasons = kept
}

// unmet lists k's dependencies that do not hold, as "DEP STATE" (or the
// awaited assertion when it is not a service state). Called with m.mu held.
func (m *Model) unmet(k string) []string {
	var out []string
	for _, a := range m.Awaits(k) {
		switch {
		case a.Service == "":
			out = append(out, a.Text)
		case !m.Met(a):
			out = append(out, a.Service+" "+a.State)
		}
	}
	slices.Sort(out)
	return out
}

// chain returns k's dependencies with theirs (a cycle is cut where it
// closes). Called with m.mu held.
func (m *Model) chain(k string, seen map[string]bool) []Dependency {
	if seen[k] {
		return nil
	}
	seen[k] = true
	defer delete(seen, k)
	var out []Dependency
	for _, a := range m.Awaits(k) {
		if a.Service == "" {
			out = append(out, Dependency{Name: a.Text, States: []string{}})
			continue
		}
		d := Dependency{Name: a.Service, Awaits: a.State, States: m.stateList(a.Service), Met: m.Met(a)}
		d.DependsOn = m.chain(a.Service, seen)
		out = append(out, d)
	}
	return out
}

// Detail adds the dependency chain and the output to s.
func (m *Model) Detail(s *Service) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.DependsOn = m.chain(s.Name, map[string]bool{})
	seq, _ := m.outputs[s.Name].(preserves.Sequence)
	for _, e := range seq {
		// One line the schema rejects does not hide the others.
		if x, err := syndicatego.ParseOutputLine(e); err == nil {
			at, _ := time.Parse(time.RFC3339Nano, x.At)
			s.Output = append(s.Output, OutputLine{At: at, Stream: string(x.Stream), Line: x.Line})
		}
	}
}

// stateList is the sorted states of service k. Called with m.mu held.
func (m *Model) stateList(k string) []string {
	out := slices.AppendSeq([]string{}, maps.Keys(m.States[k])) // [] in JSON, not null
	sortStates(out)
	return out
}

func sortStates(states []string) {
	slices.SortFunc(states, func(a, b string) int {
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
}

// parseProcess reads the info dictionary of <process-status NAME INFO>;
// missing or ill-typed keys are left zero.
func parseProcess(text string) (Process, bool) {
	v, err := preserves.ParseText(text)
	if err != nil {
		return Process{}, false
	}
	info, err := syndicatego.ParseProcessInfo(v)
	if err != nil {
		return Process{}, false // not a dictionary
	}
	var p Process
	if x, ok := info.Pid.(syndicatego.ProcessPidPresent); ok && x.Pid.IsInt64() {
		p.PID = x.Pid.Int64()
	}
	if x, ok := info.Restarts.(syndicatego.ProcessRestartsPresent); ok && x.Restarts.IsInt64() {
		p.Restarts = x.Restarts.Int64()
	}
	if x, ok := info.Since.(syndicatego.ProcessSincePresent); ok {
		p.Since, _ = time.Parse(time.RFC3339Nano, x.Since)
	}
	return p, true
}

// state is the STATE column: the asserted states, or what the
// require/run assertions say when there are none.
func (s Service) state() string {
	switch {
	case len(s.States) > 0 && s.Phase != "":
		return strings.Join(s.States, ",") + " (" + s.Phase + ")"
	case len(s.States) > 0:
		return strings.Join(s.States, ",")
	case s.Phase != "":
		return s.Phase // a silent service: no state, but at work
	case s.Required && !s.Running:
		return "waiting" // for its dependencies
	case s.Running:
		return "starting"
	}
	return "-"
}

func (s Service) wanted() string {
	switch {
	case s.Required:
		return "required"
	case s.Running:
		return "run"
	}
	return "-"
}

// displayName is the SERVICE cell: the whole name, capabilities as
// `#:ref`, and a dictionary of nothing but capabilities (a config
// watcher's environment) as `{…}`, so that what tells names apart
// survives the table's cut.
func (s Service) displayName() string {
	return refsOnly.ReplaceAllString(preserves.FormatText(services.HideRefs(s.name)), "{…}")
}

// refsOnly matches the text of a dictionary whose values are all `#:ref`.
var refsOnly = regexp.MustCompile(`\{[^{}:,]+: #:ref(, [^{}:,]+: #:ref)*\}`)

// ago renders how long ago t was, in its two largest units: 27s, 5m3s,
// 5h3m, 331d5h.
func ago(now, t time.Time) string {
	d := max(now.Sub(t).Truncate(time.Second), 0)
	switch {
	case d < time.Hour:
		return d.String()
	case d < 24*time.Hour:
		return strings.TrimSuffix(d.Truncate(time.Minute).String(), "0s")
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
}

// held is the FOR column, how long the service has been in its current
// state: since the latest of its state change (the supervisor's), its
// newest process's start and its last exit. A daemon that crashed and
// came back is `ready` since its new process started, not since the
// supervisor first saw it ready.
func (s Service) held(now time.Time) string {
	var since time.Time
	later := func(t time.Time) {
		if t.After(since) {
			since = t
		}
	}
	if s.Since != nil {
		later(*s.Since)
	}
	for _, p := range s.Processes {
		later(p.Since)
	}
	if s.ExitAt != nil {
		later(*s.ExitAt)
	}
	if since.IsZero() {
		return "-"
	}
	return ago(now, since)
}

func (s Service) pids() string {
	if len(s.Processes) == 0 {
		return "-"
	}
	var pids []string
	for _, p := range s.Processes {
		pids = append(pids, fmt.Sprint(p.PID))
	}
	return strings.Join(pids, ",")
}

// figures are the memory and task count of the service's processes
// (summed over them): "12.5 MiB", with the OOM kills when there were
// any, and "3"; "" when not known.
func (s Service) figures() (mem, tasks string) {
	var m, n, oom int64
	var hasMem, hasTasks bool
	for _, p := range s.Processes {
		if p.Memory != nil {
			m, hasMem = m+*p.Memory, true
		}
		if p.Tasks != nil {
			n, hasTasks = n+*p.Tasks, true
		}
		if p.OOMKills != nil {
			oom += *p.OOMKills
		}
	}
	if hasMem {
		mem = bytesText(m)
		if oom > 0 {
			mem += fmt.Sprintf(" (%d OOM kills)", oom)
		}
	}
	if hasTasks {
		tasks = strconv.FormatInt(n, 10)
	}
	return mem, tasks
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// bytesText renders n bytes in binary units: 812 B, 12.5 MiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// restarts is "TOTAL" or "TOTAL (RECENT recent)".
func (s Service) restarts() string {
	if s.Restarts == 0 && s.Since == nil && len(s.Processes) == 0 {
		return "-"
	}
	if s.Recent > 0 {
		return fmt.Sprintf("%d (%d recent)", s.Restarts, s.Recent)
	}
	return fmt.Sprint(s.Restarts)
}

func (s Service) lastExit(now time.Time) string {
	switch {
	case s.Exit == "":
		return "-"
	case s.ExitAt != nil:
		return s.Exit + ", " + ago(now, *s.ExitAt) + " ago"
	}
	return s.Exit
}

// reason is every reason, then the position they concern; without one,
// what the daemon says of itself (STATUS=), quoted.
func (s Service) reason(now time.Time) string {
	if len(s.Reasons) == 0 && s.NextRun != nil {
		return s.schedule(now)
	}
	if len(s.Reasons) == 0 && len(s.Sockets) > 0 && len(s.StatusText) == 0 {
		return strings.Join(s.Sockets, "; ")
	}
	if len(s.Reasons) == 0 {
		if s.LogDropped > 0 && len(s.StatusText) == 0 {
			return s.droppedText()
		}
		return s.statusText()
	}
	var parts []string
	for _, r := range s.Reasons {
		// The last exit has a column of its own.
		if s.Exit != "" {
			r = strings.Replace(r, "; last exit: "+s.Exit, "", 1)
			r = strings.Replace(r, s.Exit, "", 1)
		}
		if r = strings.TrimRight(strings.TrimSpace(r), ":;, "); r != "" {
			parts = append(parts, r)
		}
	}
	r := strings.Join(parts, "; ")
	if r == "" {
		r = "-"
	}
	if s.Pos != "" && s.Pos != "-" {
		r += " (" + s.Pos + ")"
	}
	return r
}

// schedule says when a scheduled daemon runs next, and how its last run
// went: "next run in 59s; last run 1s ago, took 1.5s; 1 skipped".
func (s Service) schedule(now time.Time) string {
	var parts []string
	if s.NextRun != nil {
		parts = append(parts, "next run in "+max(s.NextRun.Sub(now).Round(time.Second), 0).String())
	}
	if s.LastRun != nil {
		last := "last run " + ago(now, *s.LastRun) + " ago"
		if s.ExitAt != nil && !s.ExitAt.Before(*s.LastRun) {
			last += ", took " + s.ExitAt.Sub(*s.LastRun).Round(time.Millisecond).String()
		} else {
			last += ", running"
		}
		parts = append(parts, last)
	}
	if s.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", s.Skipped))
	}
	return strings.Join(parts, "; ")
}

// droppedText says how many lines of output the log directory missed.
func (s Service) droppedText() string {
	reason := s.LogDropReason
	if reason == "" {
		reason = "log directory too slow"
	}
	return fmt.Sprintf("%d log lines dropped (%s)", s.LogDropped, reason)
}

// statusText is the daemon's STATUS= text, quoted, or "-".
func (s Service) statusText() string {
	if len(s.StatusText) == 0 {
		return "-"
	}
	var q []string
	for _, t := range s.StatusText {
		q = append(q, strconv.Quote(t))
	}
	return strings.Join(q, ", ")
}

// WriteDetail prints the NAME view: every field, the dependency chain and
// the last output lines.
func WriteDetail(w io.Writer, s Service, now time.Time) {
	fmt.Fprintf(w, "%s\n", preserves.Show(services.HideRefs(s.name)))
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprintf(tw, "  wanted:\t%s\n", s.wanted())
	fmt.Fprintf(tw, "  state:\t%s for %s\n", s.state(), s.held(now))
	fmt.Fprintf(tw, "  pid:\t%s\n", s.pids())
	if mem, tasks := s.figures(); mem != "" || tasks != "" {
		fmt.Fprintf(tw, "  memory:\t%s\n", or(mem, "-"))
		fmt.Fprintf(tw, "  tasks:\t%s\n", or(tasks, "-"))
	}
	fmt.Fprintf(tw, "  restarts:\t%s\n", s.restarts())
	fmt.Fprintf(tw, "  last exit:\t%s\n", s.lastExit(now))
	fmt.Fprintf(tw, "  reason:\t%s\n", s.reason(now))
	for _, sock := range s.Sockets {
		fmt.Fprintf(tw, "  socket:\t%s\n", sock)
	}
	if (s.NextRun != nil || s.LastRun != nil) && len(s.Reasons) > 0 {
		fmt.Fprintf(tw, "  schedule:\t%s\n", s.schedule(now)) // not in the reason
	}
	if len(s.StatusText) > 0 && len(s.Reasons) > 0 {
		fmt.Fprintf(tw, "  status text:\t%s\n", s.statusText())
	}
	if s.LogDropped > 0 {
		fmt.Fprintf(tw, "  log:\t%s\n", s.droppedText())
	}
	tw.Flush()
	if len(s.DependsOn) > 0 {
		fmt.Fprintf(w, "  depends on:\n")
		writeDeps(w, s.DependsOn, "    ")
	}
	if len(s.Output) > 0 {
		fmt.Fprintf(w, "  last %d output lines:\n", len(s.Output))
		for _, l := range s.Output {
			fmt.Fprintf(w, "    %s %s %s\n", l.At.Local().Format("15:04:05.000"), preserves.TerminalText(l.Stream), preserves.TerminalText(l.Line))
		}
	}
}

func writeDeps(w io.Writer, deps []Dependency, indent string) {
	for _, d := range deps {
		mark := "waiting"
		if d.Met {
			mark = "ok"
		}
		states := strings.Join(d.States, ",")
		if states == "" {
			states = "-"
		}
		if d.Awaits == "" {
			fmt.Fprintf(w, "%s%s\n", indent, d.Name)
		} else {
			fmt.Fprintf(w, "%s%s %s: %s (now %s)\n", indent, d.Name, d.Awaits, mark, states)
		}
		writeDeps(w, d.DependsOn, indent+"  ")
	}
}
