package analyze

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Scheduled runs (time-and-sockets issue): a daemon with a `schedule`
// is `ready` from the moment it is armed, so the histories show its boot
// but none of its runs. Its `<service-info …>` tells the rest: when the
// last run began, its exit, the next time and the runs skipped; the
// analysis joins them to the unit, and blame lists them after its table.

// Runs is what is known of a scheduled service's runs.
type Runs struct {
	Last, Next time.Time // when the last run began, when the next is due
	Ended      time.Time // when the last run ended; zero while it runs
	Exit       string    // the last run's exit
	Skipped    int       // times skipped because a run was still going
}

// addInfo joins a `<service-info NAME INFO>`'s schedule to its unit.
func (b *Boot) addInfo(name, info preserves.Value) {
	i := services.ParseInfo(info)
	if i.LastRun.IsZero() && i.NextRun.IsZero() {
		return
	}
	u := b.Units[preserves.FormatText(name)]
	if u == nil {
		return // no history: nothing to join to
	}
	r := &Runs{Last: i.LastRun, Next: i.NextRun, Skipped: i.Skipped}
	if !i.ExitAt.IsZero() && !i.ExitAt.Before(i.LastRun) {
		r.Ended, r.Exit = i.ExitAt, i.Exit
	}
	u.Runs = r
}

// Scheduled returns the units with scheduled runs, by name.
func Scheduled(b *Boot) []*Unit {
	var out []*Unit
	for _, u := range b.Units {
		if u.Runs != nil {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, c *Unit) int { return strings.Compare(a.Key, c.Key) })
	return out
}

// describe is one unit's runs for people, relative to now: "last run
// 06:20:01 (30s ago), took 1.500s, exit status: 0; next run 06:21:01 (in
// 30s); 1 skipped".
func (r *Runs) describe(now time.Time) string {
	var parts []string
	at := func(t time.Time) string { return t.Local().Format("15:04:05") }
	if !r.Last.IsZero() {
		s := fmt.Sprintf("last run %s (%s ago)", at(r.Last), now.Sub(r.Last).Truncate(time.Second))
		if r.Ended.IsZero() {
			s += ", running"
		} else {
			s += ", took " + fmtDur(r.Ended.Sub(r.Last))
			if r.Exit != "" {
				s += ", " + r.Exit
			}
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "no run yet")
	}
	if !r.Next.IsZero() {
		parts = append(parts, fmt.Sprintf("next run %s (in %s)", at(r.Next), r.Next.Sub(now).Truncate(time.Second)))
	}
	if r.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", r.Skipped))
	}
	return strings.Join(parts, "; ")
}

// writeRuns prints the scheduled runs after blame's table.
func writeRuns(w io.Writer, b *Boot) {
	units := Scheduled(b)
	if len(units) == 0 {
		return
	}
	fmt.Fprintf(w, "\nscheduled runs:\n")
	for _, u := range units {
		fmt.Fprintf(w, "  %s: %s\n", u.Name, u.Runs.describe(b.Now))
	}
}

// JSONRuns is Runs in JSON.
type JSONRuns struct {
	LastRun  *time.Time `json:"lastRun,omitempty"`
	LastEnd  *time.Time `json:"lastRunEnded,omitempty"`
	LastExit string     `json:"lastExit,omitempty"`
	NextRun  *time.Time `json:"nextRun,omitempty"`
	Skipped  int        `json:"skippedRuns,omitempty"`
}

func (r *Runs) json() *JSONRuns {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return &JSONRuns{LastRun: opt(r.Last), LastEnd: opt(r.Ended), LastExit: r.Exit, NextRun: opt(r.Next), Skipped: r.Skipped}
}
