// Package analyze is the boot analysis behind `syndicate analyze`, in the
// manner of systemd-analyze, from what the server records
// (services/timeline): in the manner of systemd-analyze, from what the
// server records (services/timeline):
//
//	<history-origin "TS">                        time zero (the server's boot)
//	<service-history NAME [CHANGE …] DROPPED>    every state change of NAME
//	<depends-on NAME <service-state DEP S>>      the dependency graph
//
// Each service is described by its first start since the server booted:
// when it was requested (`require-service`), when its dependencies let it
// run (`run-service`), and when it first became up (`ready`, or `complete`
// for a one-shot). The analysis itself works on plain data (Boot), so it
// is tested without a server; svg.go draws it. Collect gathers the data in
// a client's actor.
package analyze

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/timeline"
)

// Unit is one service's first start.
type Unit struct {
	Value preserves.Value `json:"-"` // the name
	Key   string          // the name as Preserves text (identity)
	Name  string          // the name for people (shortName)
	// Requested, Run, Up and Failed are the first times the service was
	// required, allowed to run, ready or complete, and failed; zero if
	// never.
	Requested, Run, Up, Failed time.Time
	First                      time.Time // the first recorded change
	UpState                    string    // "ready" or "complete", when Up is set
	State                      string    // the state now (see currentState)
	Deps                       []Dep
	Dropped                    int   // changes the server left out of the history
	Runs                       *Runs // a scheduled daemon's runs (runs.go); nil for others
}

// Dep is one `depends-on` edge: the service waits for Key to be in Awaits.
type Dep struct {
	Key    string `json:"key"`
	Awaits string `json:"awaits"`
}

// Boot is everything analyze knows.
type Boot struct {
	Origin time.Time
	Now    time.Time // when the data was taken
	Units  map[string]*Unit
}

// start is when the service's own start began: when it could run, or
// when it was requested if it never ran, or its first change for a
// service whose states were asserted without either.
func (u *Unit) start() time.Time {
	switch {
	case !u.Run.IsZero():
		return u.Run
	case !u.Requested.IsZero():
		return u.Requested
	}
	return u.First
}

// requested is when the service was first wanted (its start if it was
// run without a requirement).
func (u *Unit) requested() time.Time {
	if !u.Requested.IsZero() {
		return u.Requested
	}
	return u.start()
}

// end is where its bar ends: up, failed, or still going at now.
func (u *Unit) end(now time.Time) time.Time {
	switch {
	case !u.Up.IsZero():
		return u.Up
	case !u.Failed.IsZero():
		return u.Failed
	}
	return now
}

// UnitOf derives a unit from a service's recorded changes.
func UnitOf(name preserves.Value, changes []timeline.Change, dropped int) *Unit {
	u := &Unit{Value: preserves.Strip(name), Key: preserves.FormatText(name), Name: services.ShortName(name), Dropped: dropped}
	live := map[string]bool{}
	upFact := func() (string, bool) {
		for _, st := range []preserves.Symbol{services.StateReady, services.StateComplete} {
			if live[preserves.FormatText(preserves.NewRecord(serviceschema.LabelServiceState, st))] {
				return string(st), true
			}
		}
		return "", false
	}
	// The first run is needed before the loop: up means up after it.
	if i := slices.IndexFunc(changes, func(c timeline.Change) bool { return c.Asserted && preserves.Equal(c.Fact, timeline.FactRun) }); i >= 0 {
		u.Run = changes[i].Time
	}
	ran := false
	for _, c := range changes {
		setFirst(&u.First, c.Time)
		text := preserves.FormatText(c.Fact)
		if !c.Asserted {
			delete(live, text)
			continue
		}
		live[text] = true
		switch {
		case preserves.Equal(c.Fact, timeline.FactRequire):
			setFirst(&u.Requested, c.Time)
		case preserves.Equal(c.Fact, timeline.FactRun):
			if !ran {
				ran = true
				// Already up when allowed to run (a milestone whose
				// state a script asserts): up at once.
				if st, ok := upFact(); ok && u.Up.IsZero() {
					u.Up, u.UpState = c.Time, st
				}
			}
		default:
			s, ok := timeline.StateOf(c.Fact)
			if !ok {
				continue
			}
			switch {
			case preserves.Equal(s, services.StateReady), preserves.Equal(s, services.StateComplete):
				if u.Up.IsZero() && (u.Run.IsZero() || ran) {
					u.Up, u.UpState = c.Time, preserves.FormatText(s)
				}
			case preserves.Equal(s, services.StateFailed):
				setFirst(&u.Failed, c.Time)
			}
		}
	}
	u.State = currentState(live)
	return u
}

func setFirst(t *time.Time, at time.Time) {
	if t.IsZero() {
		*t = at
	}
}

// currentState summarises the facts a service holds now.
func currentState(live map[string]bool) string {
	st := func(s preserves.Symbol) bool {
		return live[preserves.FormatText(preserves.NewRecord(serviceschema.LabelServiceState, s))]
	}
	switch {
	case st(services.StateFailed):
		return "failed"
	case st(services.StateReady):
		return "ready"
	case st(services.StateComplete):
		return "complete"
	case st(services.StateStarted):
		return "started"
	case live[string(timeline.FactRun)]:
		return "starting"
	case live[string(timeline.FactRequire)]:
		return "waiting"
	}
	return "stopped"
}

// AddDep records `<depends-on NAME DEPENDEE>`; dependees without a history
// get a unit of their own, so the graph shows them.
func (b *Boot) AddDep(name, dependee preserves.Value) {
	r, ok := preserves.Unwrap(dependee).(*preserves.Record)
	if !ok || !preserves.Equal(r.Label, serviceschema.LabelServiceState) || len(r.Fields) != 2 {
		return
	}
	from, to := b.unitFor(name), b.unitFor(r.Fields[0])
	d := Dep{Key: to.Key, Awaits: preserves.FormatText(r.Fields[1])}
	if !slices.Contains(from.Deps, d) {
		from.Deps = append(from.Deps, d)
	}
}

func (b *Boot) unitFor(name preserves.Value) *Unit {
	name = preserves.Strip(name)
	key := preserves.FormatText(name)
	if u := b.Units[key]; u != nil {
		return u
	}
	u := &Unit{Value: name, Key: key, Name: services.ShortName(name), State: "unknown"}
	b.Units[key] = u
	return u
}

// sorted returns the units in order of their start, then name.
func (b *Boot) sorted() []*Unit {
	us := slices.Collect(maps.Values(b.Units))
	slices.SortFunc(us, func(a, c *Unit) int {
		sa, sc := a.start(), c.start()
		switch {
		case sa.IsZero() && !sc.IsZero():
			return 1
		case !sa.IsZero() && sc.IsZero():
			return -1
		case !sa.Equal(sc):
			return sa.Compare(sc)
		}
		return strings.Compare(a.Key, c.Key)
	})
	return us
}

// HideBuiltins removes the server's own services (`<builtin NAME>`), and
// the dependencies on them, from the analysis: they are most of the bars
// and say little about the configuration.
func (b *Boot) HideBuiltins() {
	for k, u := range b.Units {
		if services.IsBuiltin(u.Value) {
			delete(b.Units, k)
		}
	}
	for _, u := range b.Units {
		u.Deps = slices.DeleteFunc(u.Deps, func(d Dep) bool { return b.Units[d.Key] == nil })
	}
}

// since renders t relative to the origin.
func (b *Boot) since(t time.Time) time.Duration { return t.Sub(b.Origin) }

// fmtDur renders a duration the way systemd-analyze does: ms below a
// second, seconds with three decimals above.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
	return d.Truncate(time.Millisecond).String()
}

// BlameOrder returns the services that came up, slowest first, and those
// that were requested but never came up, by name.
func BlameOrder(b *Boot) (up, rest []*Unit) {
	for _, u := range b.Units {
		if !u.Up.IsZero() && !u.requested().IsZero() {
			up = append(up, u)
		} else if !u.requested().IsZero() {
			rest = append(rest, u)
		}
	}
	slices.SortFunc(up, func(a, c *Unit) int {
		da, dc := a.Up.Sub(a.requested()), c.Up.Sub(c.requested())
		if da != dc {
			return cmp.Compare(dc, da)
		}
		return strings.Compare(a.Key, c.Key)
	})
	slices.SortFunc(rest, func(a, c *Unit) int { return strings.Compare(a.Key, c.Key) })
	return up, rest
}

// WriteBlame prints every service's time from request to up, slowest
// first; services never up follow, with their state.
func WriteBlame(w io.Writer, b *Boot) {
	up, rest := BlameOrder(b)
	// Times right-aligned, names left-aligned.
	rows := [][4]string{{"REQUEST→UP", "RUN→UP", "", "SERVICE"}}
	for _, u := range up {
		rows = append(rows, [4]string{fmtDur(u.Up.Sub(u.requested())), fmtDur(u.Up.Sub(u.start())), u.UpState, u.Name})
	}
	for _, u := range rest {
		what := "not up"
		if !u.Failed.IsZero() {
			what = "failed after " + fmtDur(u.Failed.Sub(u.requested()))
		}
		rows = append(rows, [4]string{what, "-", u.State, u.Name})
	}
	var wd [3]int
	for _, r := range rows {
		for i := range wd {
			wd[i] = max(wd[i], utf8.RuneCountInString(r[i]))
		}
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%*s  %*s  %-*s  %s\n", wd[0], r[0], wd[1], r[1], wd[2], r[2], r[3])
	}
	writeRuns(w, b)
}

// JSONUnit is a service in `analyze blame --json` and `critical-chain
// --json`: absolute times (absent when it never happened) and durations in
// seconds.
type JSONUnit struct {
	Name      string     `json:"name"`
	State     string     `json:"state"`
	UpState   string     `json:"upState,omitempty"`
	Requested *time.Time `json:"requested,omitempty"`
	Run       *time.Time `json:"run,omitempty"`
	Up        *time.Time `json:"up,omitempty"`
	Failed    *time.Time `json:"failed,omitempty"`
	// RequestToUp and RunToUp are blame's two columns; UpAt is the
	// critical chain's @ (since the history origin).
	RequestToUp *float64 `json:"requestToUp,omitempty"`
	RunToUp     *float64 `json:"runToUp,omitempty"`
	UpAt        *float64 `json:"upAt,omitempty"`
	Depth       int      `json:"depth,omitempty"`
	Dropped     int      `json:"droppedChanges,omitempty"`
	// Runs, for a scheduled daemon: its last and next runs.
	Runs *JSONRuns `json:"scheduledRuns,omitempty"`
}

// JSONOf is u as JSON shows it.
func (b *Boot) JSONOf(u *Unit) JSONUnit {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	secs := func(d time.Duration) *float64 { f := d.Seconds(); return &f }
	j := JSONUnit{Name: u.Name, State: u.State, UpState: u.UpState, Requested: opt(u.Requested), Run: opt(u.Run),
		Up: opt(u.Up), Failed: opt(u.Failed), Dropped: u.Dropped}
	if !u.Up.IsZero() {
		j.RequestToUp, j.RunToUp, j.UpAt = secs(u.Up.Sub(u.requested())), secs(u.Up.Sub(u.start())), secs(b.since(u.Up))
	}
	if u.Runs != nil {
		j.Runs = u.Runs.json()
	}
	return j
}

// Link is one step of a critical chain.
type Link struct {
	Unit  *Unit
	Depth int
}

// chainSlack is how much later than a service's run its gating dependee
// may appear to have become up. The recorder sees the changes of different
// services through different actors, so a dependee's ready can be stamped
// a few microseconds after the run it caused.
const chainSlack = 10 * time.Millisecond

// CriticalChain follows, from target, the dependency that became up last
// before the service could run: the one that set its start time.
func CriticalChain(b *Boot, target *Unit) []Link {
	var out []Link
	seen := map[string]bool{}
	for u, depth := target, 0; u != nil && !seen[u.Key]; depth++ {
		seen[u.Key] = true
		out = append(out, Link{Unit: u, Depth: depth})
		var gate *Unit
		for _, d := range u.Deps {
			du := b.Units[d.Key]
			if du == nil || du.Up.IsZero() {
				continue
			}
			// A dependee up after this service ran did not hold it up
			// (give or take the recorder's view of the order of events
			// in different actors: chainSlack).
			if !u.Run.IsZero() && du.Up.After(u.Run.Add(chainSlack)) {
				continue
			}
			if gate == nil || du.Up.After(gate.Up) {
				gate = du
			}
		}
		u = gate
	}
	return out
}

// LastUp is the service that became up last: the default target of
// critical-chain.
func LastUp(b *Boot) *Unit {
	var last *Unit
	for _, u := range b.sorted() {
		if !u.Up.IsZero() && (last == nil || u.Up.After(last.Up)) {
			last = u
		}
	}
	return last
}

// WriteChain prints a critical chain as systemd-analyze does.
func WriteChain(w io.Writer, b *Boot, chain []Link) {
	fmt.Fprintln(w, `The time when a service became up (ready or complete) is printed after "@",`)
	fmt.Fprintln(w, `the time it took from being allowed to run to being up after "+".`)
	fmt.Fprintln(w)
	for _, l := range chain {
		u := l.Unit
		prefix := ""
		if l.Depth > 0 {
			prefix = strings.Repeat("  ", l.Depth-1) + "└─"
		}
		switch {
		case u.Up.IsZero():
			fmt.Fprintf(w, "%s%s (%s)\n", prefix, u.Name, u.State)
		case u.Run.IsZero() || u.Up.Sub(u.Run) <= 0:
			fmt.Fprintf(w, "%s%s @%s\n", prefix, u.Name, fmtDur(b.since(u.Up)))
		default:
			fmt.Fprintf(w, "%s%s @%s +%s\n", prefix, u.Name, fmtDur(b.since(u.Up)), fmtDur(u.Up.Sub(u.Run)))
		}
	}
}
