package services

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/validate"
)

// StatusModel is the one reading of the service vocabulary of a config
// dataspace: which services are required, which run, their states, and
// what they depend on. `syndicate status`, `syndicate-server --dry-run`
// and the run-time diagnostics (diagnose.go) each keep one and differ
// only in what they show; so all of them agree on what "waiting", "unmet"
// and "dependency cycle" mean.
//
// The maps count: the dataspace may hold one assertion several times
// (from several parties), and an entry goes only when its last copy does.
// Services are keyed by the text of their name (see Key); Names maps the
// keys back to the values.
//
// A model belongs to the actor whose facet called Track. A reader on
// another goroutine sets Locker: every change is made with it held.
type StatusModel struct {
	Names    map[string]preserves.Value
	Required map[string]int
	Running  map[string]int
	States   map[string]map[string]int    // service → state text → count
	Deps     map[string]map[Awaited]int   // depender → awaited assertion → count
	key      func(preserves.Value) string // nil: preserves.FormatText

	// Locker, if set, is held while an assertion changes the model.
	Locker sync.Locker
	// Changed, if set, runs after each change, in the turn that made it.
	Changed func(t *dataspace.Turn)
}

// Awaited is what one `<depends-on NAME AWAITED>` waits for.
type Awaited struct {
	Text string // AWAITED, rendered by the model's key function
	// For `<service-state DEP STATE>`: DEP's key and STATE's text; empty
	// for any other assertion.
	Service, State string
}

// NewStatusModel returns an empty model. key renders names and states as
// text (nil: preserves.FormatText); it sees values without annotations.
func NewStatusModel(key func(preserves.Value) string) *StatusModel {
	return &StatusModel{Names: map[string]preserves.Value{}, Required: map[string]int{},
		Running: map[string]int{}, States: map[string]map[string]int{},
		Deps: map[string]map[Awaited]int{}, key: key}
}

// HideRefs replaces every capability in v by `#:ref`, so that a rendering
// does not depend on object identities (or their long descriptions).
func HideRefs(v preserves.Value) preserves.Value {
	return preserves.MapEmbedded(v, func(*preserves.Embedded) preserves.Value {
		return preserves.NewEmbedded(preserves.Symbol("ref"))
	})
}

// MaxNameWidth bounds a service name in a table (JSON has full names).
const MaxNameWidth = 72

// ShortName renders a service name for a table: capabilities as `#:ref`
// (their descriptions are long and say little), and at most MaxNameWidth
// characters.
func ShortName(name preserves.Value) string {
	s := preserves.FormatTextLimit(HideRefs(name), MaxNameWidth*utf8.UTFMax)
	if r := []rune(s); len(r) > MaxNameWidth {
		s = string(r[:MaxNameWidth-1]) + "…"
	}
	return s
}

// Text renders v (a state, an awaited assertion) as the model keys it.
func (m *StatusModel) Text(v preserves.Value) string {
	if m.key != nil {
		return m.key(v)
	}
	return preserves.FormatText(v)
}

// Key returns the key of service name, remembering the name.
func (m *StatusModel) Key(name preserves.Value) string {
	k := m.Text(name)
	m.Names[k] = name
	return k
}

// Count adds n to mp[k], deleting the entry when it drops to zero.
func Count[K comparable](mp map[K]int, k K, n int) {
	if mp[k] += n; mp[k] <= 0 {
		delete(mp, k)
	}
}

// Count2 adds n to mp[k][sub], deleting entries that drop to zero.
func Count2[K comparable](mp map[string]map[K]int, k string, sub K, n int) {
	inner := mp[k]
	if inner == nil {
		inner = map[K]int{}
		mp[k] = inner
	}
	Count(inner, sub, n)
	if len(inner) == 0 {
		delete(mp, k)
	}
}

// Watch keeps something up to date with the assertions `<label F1 … Fn>`
// (n fields, all captured) in cfg: apply runs with d = 1 when one appears
// and with d = -1 when it goes. The subscription lives in the active
// facet; when that facet stops, the model is left as it was.
//
// A plain entity remembering each handle's captures, rather than During
// (a facet per assertion): with 10,000 services a status client holds
// some 40,000 of them, and the facets were a third of its CPU time.
func (m *StatusModel) Watch(t *dataspace.Turn, cfg *dataspace.Ref, label preserves.Symbol, n int, apply func(caps []preserves.Value, d int)) {
	fields := make([]pattern.Pattern, n)
	for i := range fields {
		fields[i] = pattern.Capture()
	}
	w := &watcher{n: n, held: dataspace.Held[[]preserves.Value]{}, change: func(t *dataspace.Turn, caps []preserves.Value, d int) {
		if m.Locker != nil {
			m.Locker.Lock()
		}
		apply(caps, d)
		if m.Locker != nil {
			m.Locker.Unlock()
		}
		if m.Changed != nil {
			m.Changed(t)
		}
	}}
	t.Assert(cfg, dataspace.Observe(pattern.Rec(label, fields...), t.Create(w)))
}

// watcher is the entity of one Watch.
type watcher struct {
	dataspace.BaseEntity
	n      int
	held   dataspace.Held[[]preserves.Value]
	change func(t *dataspace.Turn, caps []preserves.Value, d int)
}

func (w *watcher) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	caps, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok || len(caps) != w.n {
		return nil
	}
	w.held[h] = caps
	w.change(t, caps, 1)
	return nil
}

func (w *watcher) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	if caps, ok := w.held.Take(h); ok {
		w.change(t, caps, -1)
	}
	return nil
}

// Track subscribes the model to `<require-service NAME>`,
// `<run-service NAME>`, `<service-state NAME STATE>` and
// `<depends-on NAME AWAITED>` in cfg, in the active facet.
func (m *StatusModel) Track(t *dataspace.Turn, cfg *dataspace.Ref) {
	m.Watch(t, cfg, service.LabelRequireService, 1, func(c []preserves.Value, d int) { Count(m.Required, m.Key(c[0]), d) })
	m.Watch(t, cfg, service.LabelRunService, 1, func(c []preserves.Value, d int) { Count(m.Running, m.Key(c[0]), d) })
	m.Watch(t, cfg, service.LabelServiceState, 2, func(c []preserves.Value, d int) {
		Count2(m.States, m.Key(c[0]), m.Text(c[1]), d)
	})
	m.Watch(t, cfg, service.LabelDependsOn, 2, func(c []preserves.Value, d int) {
		Count2(m.Deps, m.Key(c[0]), m.awaited(c[1]), d)
	})
}

func (m *StatusModel) awaited(v preserves.Value) Awaited {
	a := Awaited{Text: m.Text(v)}
	if r, ok := v.(*preserves.Record); ok && len(r.Fields) == 2 &&
		preserves.Equal(r.Label, service.LabelServiceState) {
		a.Service, a.State = m.Key(r.Fields[0]), m.Text(r.Fields[1])
	}
	return a
}

// Met reports whether a holds: a service state that is asserted. Other
// assertions are never known to hold (the model does not watch them).
func (m *StatusModel) Met(a Awaited) bool {
	return a.Service != "" && m.States[a.Service][a.State] > 0
}

// Waiting reports whether service k is required but not running.
func (m *StatusModel) Waiting(k string) bool { return m.Required[k] > 0 && m.Running[k] == 0 }

// Awaits lists what service k depends on, sorted by text.
func (m *StatusModel) Awaits(k string) []Awaited {
	var out []Awaited
	for a := range m.Deps[k] {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Awaited) int {
		return cmp.Or(strings.Compare(a.Text, b.Text), strings.Compare(a.Service, b.Service), strings.Compare(a.State, b.State))
	})
	return out
}

// Dependees lists the services whose state k awaits, sorted, each once;
// unmet limits them to the states that do not hold.
func (m *StatusModel) Dependees(k string, unmet bool) []string {
	var out []string
	for a := range m.Deps[k] {
		if a.Service != "" && !(unmet && m.Met(a)) {
			out = append(out, a.Service)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Cycle returns a cycle of unmet dependencies from k back to k, or nil.
func (m *StatusModel) Cycle(k string) []string {
	return validate.CycleThrough(k, func(n string) []string { return m.Dependees(n, true) })
}

// Order lists keys so that every service comes after the services it
// depends on; ties, and services in a dependency cycle, go in Preserves
// order of their names.
func (m *StatusModel) Order(keys []string) []string {
	rest := slices.Clone(keys)
	slices.SortFunc(rest, func(a, b string) int { return preserves.Compare(m.Names[a], m.Names[b]) })
	out := make([]string, 0, len(rest))
	for len(rest) > 0 {
		// The least service none of whose dependencies is still to come.
		i := slices.IndexFunc(rest, func(k string) bool {
			return !slices.ContainsFunc(m.Dependees(k, false), func(dep string) bool { return dep != k && slices.Contains(rest, dep) })
		})
		i = max(i, 0) // a cycle: take the least remaining service
		out = append(out, rest[i])
		rest = slices.Delete(rest, i, i+1)
	}
	return out
}

// Cycles returns the dependency cycles among keys (any dependency, met
// or not, counts), each once, as Cycle spells them.
func (m *StatusModel) Cycles(keys []string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, start := range keys {
		c := validate.CycleThrough(start, func(n string) []string {
			return slices.DeleteFunc(m.Dependees(n, false), func(d string) bool { return !slices.Contains(keys, d) })
		})
		if c == nil {
			continue
		}
		members := slices.Clone(c[:len(c)-1])
		slices.Sort(members)
		if id := strings.Join(members, "\x00"); !seen[id] {
			seen[id] = true
			out = append(out, c)
		}
	}
	return out
}

// Referenced reports whether anything in the model still refers to
// service k (a long-running reader forgets the names that went).
func (m *StatusModel) Referenced(k string) bool {
	if m.Required[k] > 0 || m.Running[k] > 0 || len(m.States[k]) > 0 || len(m.Deps[k]) > 0 {
		return true
	}
	for _, deps := range m.Deps {
		for a := range deps {
			if a.Service == k {
				return true
			}
		}
	}
	return false
}
