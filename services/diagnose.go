package services

import (
	"slices"
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/validate"
)

// Run-time counterparts of the whole-tree analysis of `--check` (operator
// issue). The reference's semantics are kept: nothing here changes what
// runs. But a condition that would otherwise pass in silence becomes, once
// it has lasted DiagnosisGrace, a warning in the log and a reason in
// `<service-info NAME …>` (so `syndicate status` shows it):
//
//   - a running service (`<run-service NAME>`) that nothing reports a
//     state for: no built-in service and no script provides it (a
//     misspelt `<deamon x>` would otherwise stay `starting` for ever);
//   - a required service held back by a dependency cycle, with the cycle
//     named.
//
// The daemon service adds its own (a daemon with no declaration, a daemon
// declared in several files, unknown spec keys).

// DiagnosisGrace is how long a condition must last before it is reported.
const DiagnosisGrace = 2 * time.Second

// diagnosis is the state of the diagnostics facet; one goroutine (the
// framework actor's) owns it.
type diagnosis struct {
	env       Env
	grace     time.Duration
	names     map[string]preserves.Value
	required  map[string]int
	running   map[string]int
	states    map[string]map[string]int // name → state text → count
	deps      map[string]map[string]int // depender → "DEPENDEE\x00STATE" → count
	since     map[string]time.Time      // when the service's condition was first seen
	published map[string]*InfoPublisher
	reported  map[string]string // name → reason already logged
	pending   bool
}

// BootDiagnostics starts the diagnostics in an actor of their own, linked
// to the active facet, so that their bookkeeping stays off the path from
// a requirement to its service's start (the dependency tracker's actor).
func BootDiagnostics(t *dataspace.Turn, env Env) {
	t.SpawnLink("service-diagnostics", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		d := &diagnosis{env: env, grace: DiagnosisGrace, names: map[string]preserves.Value{},
			required: map[string]int{}, running: map[string]int{}, states: map[string]map[string]int{},
			deps: map[string]map[string]int{}, since: map[string]time.Time{},
			published: map[string]*InfoPublisher{}, reported: map[string]string{}}
		d.boot(t)
		return nil
	})
}

func (d *diagnosis) key(v preserves.Value) string {
	v = preserves.Strip(v)
	k := preserves.FormatText(v)
	d.names[k] = v
	return k
}

func adjust(m map[string]int, k string, n int) {
	if m[k] += n; m[k] <= 0 {
		delete(m, k)
	}
}

func adjust2(m map[string]map[string]int, k, sub string, n int) {
	inner := m[k]
	if inner == nil {
		inner = map[string]int{}
		m[k] = inner
	}
	adjust(inner, sub, n)
	if len(inner) == 0 {
		delete(m, k)
	}
}

func (d *diagnosis) track(t *dataspace.Turn, p pattern.Pattern, apply func(caps []preserves.Value, n int)) {
	t.During(d.env.Config, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		apply(caps, 1)
		d.changed(t)
		t.OnStop(func(t *dataspace.Turn) error {
			apply(caps, -1)
			d.changed(t)
			return nil
		})
		return nil
	})
}

func (d *diagnosis) boot(t *dataspace.Turn) {
	d.track(t, pattern.Rec(LabelRequireService, pattern.Capture()), func(c []preserves.Value, n int) {
		adjust(d.required, d.key(c[0]), n)
	})
	d.track(t, pattern.Rec(LabelRunService, pattern.Capture()), func(c []preserves.Value, n int) {
		adjust(d.running, d.key(c[0]), n)
	})
	d.track(t, pattern.Rec(LabelServiceState, pattern.Capture(), pattern.Capture()), func(c []preserves.Value, n int) {
		adjust2(d.states, d.key(c[0]), preserves.FormatText(preserves.Strip(c[1])), n)
	})
	// A silent service (§2.5: http-static-files) reports no state, but
	// publishes its object.
	d.track(t, pattern.Rec(LabelServiceObject, pattern.Capture(), pattern.Discard{}), func(c []preserves.Value, n int) {
		adjust2(d.states, d.key(c[0]), "object", n)
	})
	d.track(t, pattern.Rec(LabelDependsOn, pattern.Capture(),
		pattern.Rec(LabelServiceState, pattern.Capture(), pattern.Capture())), func(c []preserves.Value, n int) {
		adjust2(d.deps, d.key(c[0]), d.key(c[1])+"\x00"+preserves.FormatText(preserves.Strip(c[2])), n)
	})
}

// changed schedules a check one grace period after the first change of a
// burst, and again while conditions are pending.
func (d *diagnosis) changed(t *dataspace.Turn) {
	if d.pending {
		return
	}
	d.pending = true
	t.After(d.grace/2, func(t *dataspace.Turn) error {
		d.pending = false
		if d.check(t, time.Now()) {
			d.changed(t) // a condition is not yet old enough: look again
		}
		return nil
	})
}

// check reports conditions older than the grace period; it returns
// whether some condition is still waiting for its grace to pass.
func (d *diagnosis) check(t *dataspace.Turn, now time.Time) (waiting bool) {
	reasons := map[string]string{}
	for k := range d.running {
		if len(d.states[k]) == 0 {
			reasons[k] = "no built-in service and no script provides " + k + " (nothing reports its state)"
		}
	}
	for k := range d.required {
		if d.running[k] > 0 {
			continue
		}
		if c := d.cycle(k); c != nil {
			reasons[k] = "dependency cycle: " + strings.Join(c, " → ")
		}
	}
	for k := range d.since {
		if _, ok := reasons[k]; !ok {
			delete(d.since, k)
		}
	}
	for k, r := range reasons {
		first, ok := d.since[k]
		if !ok {
			d.since[k] = now
			first = now
		}
		if now.Sub(first) < d.grace {
			waiting = true
			delete(reasons, k)
			continue
		}
		if d.reported[k] != r {
			d.reported[k] = r
			d.env.Logger.Warn().Str("service", k).Msg(r)
		}
	}
	for k, p := range d.published {
		if _, ok := reasons[k]; !ok {
			p.Clear(t)
			delete(d.published, k)
			delete(d.reported, k)
		}
	}
	// Forget the names nothing refers to any more (a long-running
	// server sees many come and go).
	dependees := map[string]bool{}
	for _, deps := range d.deps {
		for dep := range deps {
			name, _, _ := strings.Cut(dep, "\x00")
			dependees[name] = true
		}
	}
	for k := range d.names {
		_, pub := d.published[k]
		_, rep := reasons[k]
		if d.required[k] == 0 && d.running[k] == 0 && len(d.states[k]) == 0 && len(d.deps[k]) == 0 && !pub && !rep && !dependees[k] {
			delete(d.names, k)
		}
	}
	for k, r := range reasons {
		p := d.published[k]
		if p == nil {
			p = &InfoPublisher{}
			d.published[k] = p
		}
		p.Publish(t, d.env.Config, d.names[k], Info{Reasons: []string{r}})
	}
	return waiting
}

// unmet lists the dependees k waits for, sorted.
func (d *diagnosis) unmet(k string) []string {
	var out []string
	for dep := range d.deps[k] {
		name, state, _ := strings.Cut(dep, "\x00")
		if d.states[name][state] == 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cycle returns a cycle of unmet dependencies from k back to k, or nil.
func (d *diagnosis) cycle(k string) []string { return validate.CycleThrough(k, d.unmet) }
