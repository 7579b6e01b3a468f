package webui

import (
	"errors"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// StatusModel is the status engine of `syndicate status`: one per view,
// owned by the view's actor (Subscribe runs there; Services and Service
// are called from it too).
type StatusModel interface {
	// Subscribe installs the model's subscriptions to cfg in the active
	// facet; changed runs in the turn of every change.
	Subscribe(t *dataspace.Turn, cfg *dataspace.Ref, changed func(t *dataspace.Turn))
	// Services is the services table: the rows of `status --json`.
	Services() any
	// Service is one service as `status NAME --json` shows it (with its
	// dependency chain), or nil when the model does not know it.
	Service(name preserves.Value) any
}

// BootInput is what the server records of the boot, as `syndicate analyze`
// reads it: the `<history-origin TS>` record (nil if none), every
// `<service-history …>` record and every `<depends-on NAME AWAITED>` (as
// [NAME, AWAITED]).
type BootInput struct {
	Origin    preserves.Value
	Histories []preserves.Value
	Deps      [][2]preserves.Value
	Now       time.Time
}

// Engines are the client's models the page shows: the command wires them
// in, so the page and the text commands never disagree.
type Engines struct {
	// Status returns a new status model of the services whose names
	// match name (nil: every service).
	Status func(name preserves.Value) StatusModel
	// Boot analyses the boot (the model of `analyze`): a JSON document
	// with the timeline and the dependency graph.
	Boot func(in BootInput) (any, error)
	// Pattern parses the dataspace browser's pattern (the syntax of
	// `syndicate observe`).
	Pattern func(text string) (pattern.Pattern, error)
}

// coalesce is how long a view gathers changes before it sends its state
// again: a boot's burst of changes becomes a few documents, not thousands.
const coalesce = 100 * time.Millisecond

// maxTextLen bounds one rendered value in the dataspace browser and the
// output tail (bytes of Preserves text).
const maxTextLen = 4096

// maxShown bounds the assertions of one dataspace-browser view and the
// output lines of a service view kept for the page.
const (
	maxShown  = 2000
	maxOutput = 200
)

// debouncer runs send at most once per coalesce interval, after the first
// change of a burst. It belongs to the view's actor.
type debouncer struct {
	pending bool
	send    func()
}

func (d *debouncer) changed(t *dataspace.Turn) {
	if d.pending {
		return
	}
	d.pending = true
	t.After(coalesce, func(*dataspace.Turn) error {
		d.pending = false
		d.send()
		return nil
	})
}

// servicesView streams the services table (document "services").
func servicesView(eng Engines) viewBoot {
	return func(t *dataspace.Turn, cfg *dataspace.Ref, f *feed) error {
		m := eng.Status(nil)
		d := &debouncer{send: func() { f.set("services", m.Services()) }}
		m.Subscribe(t, cfg, d.changed)
		// The first document after a sync round trip: complete, so the
		// page never shows a half-read table as if it were the truth.
		t.Sync(cfg, func(*dataspace.Turn) error { d.send(); return nil })
		return nil
	}
}

// outputLine is one line of a service's output on the page.
type outputLine struct {
	At     string `json:"at"`
	Stream string `json:"stream"`
	Line   string `json:"line"`
}

// lifecycleEvent is one recorded change of a service's facts.
type lifecycleEvent struct {
	At       string `json:"at"`
	Asserted bool   `json:"asserted"`
	Fact     string `json:"fact"`
}

// serviceView streams one service: its detail ("service"), its recorded
// lifecycle ("history"), the tail of its log ("output", then one "line"
// per new line), as `syndicate logs -f NAME` follows it.
func serviceView(eng Engines, name preserves.Value) viewBoot {
	return func(t *dataspace.Turn, cfg *dataspace.Ref, f *feed) error {
		m := eng.Status(name)
		d := &debouncer{send: func() { f.set("service", m.Service(name)) }}
		m.Subscribe(t, cfg, d.changed)
		// The logger's tail: the last lines it holds, then each new one.
		sink := &logSink{f: f}
		t.Assert(cfg, syndicatego.LogTail{Service: name, Lines: big.NewInt(maxOutput), Follow: true, Sink: t.Create(sink)}.ToValue())
		t.During(cfg, pattern.Rec(syndicatego.LabelServiceHistory, services.Literal(name), pattern.Capture(), pattern.Capture()),
			func(t *dataspace.Turn, caps []preserves.Value) error {
				f.set("history", historyOf(caps[0], caps[1]))
				return nil
			})
		t.Sync(cfg, func(*dataspace.Turn) error { d.send(); return nil })
		return nil
	}
}

// logSink receives the logger's answer to `<log-tail NAME N #t SINK>`:
// the recent lines, `<log-caught-up>`, then each new line
// (docs/protocol.md). It belongs to the view's actor.
type logSink struct {
	dataspace.BaseEntity
	f        *feed
	out      []outputLine
	caughtUp bool
}

func (s *logSink) Message(t *dataspace.Turn, v preserves.Value) error {
	r, ok := v.(*preserves.Record)
	if !ok {
		return nil
	}
	label, _ := r.Label.(preserves.Symbol)
	switch label {
	case syndicatego.LabelLogCaughtUp:
		s.caughtUp = true
		s.f.resync("output", s.out)
	case services.LabelLog:
		l := logLine(r)
		s.out = lastN(append(s.out, l), maxOutput)
		if s.caughtUp && !s.f.push("line", l) {
			s.f.resync("output", s.out)
		}
	case syndicatego.LabelLogDropped:
		l := outputLine{Stream: "-", Line: "(lines skipped: the page read too slowly) " + preserves.FormatText(v)}
		s.out = lastN(append(s.out, l), maxOutput)
		if s.caughtUp && !s.f.push("line", l) {
			s.f.resync("output", s.out)
		}
	}
	return nil
}

// logLine reads a `<log TS {line pid service stream}>` message.
func logLine(v preserves.Value) outputLine {
	var l outputLine
	r, ok := v.(*preserves.Record)
	if !ok || len(r.Fields) < 2 {
		return l
	}
	if ts, ok := r.Fields[0].(preserves.String); ok {
		l.At = string(ts)
	}
	dict, _ := r.Fields[1].(*preserves.Dictionary)
	if dict == nil {
		return l
	}
	if s, ok := dict.Get(services.LogKeyStream); ok {
		if sym, ok := s.(preserves.Symbol); ok {
			l.Stream = string(sym)
		}
	}
	if s, ok := dict.Get(services.LogKeySource); ok && preserves.Equal(s, services.SourceServer) {
		l.Stream = "syndicate" // a lifecycle event, as `syndicate logs` marks it
	}
	if s, ok := dict.Get(services.LogKeyLine); ok {
		switch x := s.(type) {
		case preserves.String:
			l.Line = clip(strings.TrimSuffix(string(x), "\n"))
		default:
			l.Line = clip(preserves.FormatText(x))
		}
	}
	return l
}

// historyOf reads the changes of `<service-history NAME CHANGES DROPPED>`.
func historyOf(changes, dropped preserves.Value) map[string]any {
	var evs []lifecycleEvent
	seq, _ := changes.(preserves.Sequence)
	for _, c := range seq {
		switch x := mustParseChange(c).(type) {
		case syndicatego.HistoryChangeAsserted:
			evs = append(evs, lifecycleEvent{At: x.At, Asserted: true, Fact: clip(preserves.FormatText(services.HideRefs(x.Fact)))})
		case syndicatego.HistoryChangeRetracted:
			evs = append(evs, lifecycleEvent{At: x.At, Fact: clip(preserves.FormatText(services.HideRefs(x.Fact)))})
		}
	}
	return map[string]any{"events": evs, "dropped": preserves.FormatText(dropped)}
}

func mustParseChange(v preserves.Value) syndicatego.HistoryChange {
	c, err := syndicatego.ParseHistoryChange(v)
	if err != nil {
		return nil // a change this version does not know: skipped
	}
	return c
}

// bootView streams the boot analysis (document "boot").
func bootView(eng Engines) viewBoot {
	return func(t *dataspace.Turn, cfg *dataspace.Ref, f *feed) error {
		var origin preserves.Value
		hists := map[string]preserves.Value{}
		deps := map[string][2]preserves.Value{}
		d := &debouncer{send: func() {
			in := BootInput{Origin: origin, Now: time.Now()}
			for _, k := range sortedKeys(hists) {
				in.Histories = append(in.Histories, hists[k])
			}
			for _, k := range sortedKeys(deps) {
				in.Deps = append(in.Deps, deps[k])
			}
			doc, err := eng.Boot(in)
			if err != nil {
				f.set("boot", map[string]string{"error": err.Error()})
				return
			}
			f.set("boot", doc)
		}}
		during := func(p pattern.Pattern, add func(v preserves.Value) (remove func())) {
			t.During(cfg, pattern.Bind{Pattern: p}, func(t *dataspace.Turn, caps []preserves.Value) error {
				remove := add(caps[0])
				d.changed(t)
				t.OnStop(func(t *dataspace.Turn) error { remove(); d.changed(t); return nil })
				return nil
			})
		}
		all := pattern.Discard{}
		during(pattern.Rec(syndicatego.LabelHistoryOrigin, all), func(v preserves.Value) func() {
			origin = v
			return func() {}
		})
		during(pattern.Rec(syndicatego.LabelServiceHistory, all, all, all), func(v preserves.Value) func() {
			k := preserves.FormatText(v.(*preserves.Record).Fields[0])
			hists[k] = v
			return func() {
				if preserves.Equal(hists[k], v) {
					delete(hists, k)
				}
			}
		})
		during(pattern.Rec(serviceschema.LabelDependsOn, all, all), func(v preserves.Value) func() {
			r := v.(*preserves.Record)
			k := preserves.FormatText(v)
			deps[k] = [2]preserves.Value{r.Fields[0], r.Fields[1]}
			return func() { delete(deps, k) }
		})
		t.Sync(cfg, func(*dataspace.Turn) error { d.send(); return nil })
		return nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// errPattern wraps a pattern the dataspace browser cannot use.
var errPattern = errors.New("webui: bad pattern")

// observeChange is one change in the dataspace browser: "+" an assertion
// appeared, "-" it went, "!" a message.
type observeChange struct {
	Op   string `json:"op"`
	ID   uint64 `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
}

// shownAssertion is one matching assertion in the "matches" document.
type shownAssertion struct {
	ID   uint64 `json:"id"`
	Text string `json:"text"`
}

// observer is the dataspace browser's entity: it keeps the matching
// assertions (in its actor) and forwards every change to the feed.
type observer struct {
	dataspace.BaseEntity
	f      *feed
	synced bool // the first "matches" went: changes follow it
	held   dataspace.Held[shownAssertion]
	next   uint64
}

func (o *observer) render(v preserves.Value) string {
	s, _ := preserves.Unwrap(v).(preserves.Sequence)
	if len(s) == 1 {
		v = s[0]
	}
	return clip(preserves.FormatText(services.HideRefs(preserves.Strip(v))))
}

func (o *observer) snapshot() map[string]any {
	out := make([]shownAssertion, 0, min(len(o.held), maxShown))
	for _, a := range o.held {
		if len(out) == maxShown {
			break
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b shownAssertion) int { return int(a.ID) - int(b.ID) })
	return map[string]any{"assertions": out, "total": len(o.held)}
}

func (o *observer) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	o.next++
	text := o.render(v)
	o.held[h] = shownAssertion{ID: o.next, Text: text}
	if !o.synced {
		return nil
	}
	if len(o.held) > maxShown || !o.f.push("change", observeChange{Op: "+", ID: o.next, Text: text}) {
		o.f.resync("matches", o.snapshot())
	}
	return nil
}

func (o *observer) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	a, ok := o.held.Take(h)
	if !ok {
		return nil
	}
	if !o.synced {
		return nil
	}
	if !o.f.push("change", observeChange{Op: "-", ID: a.ID}) {
		o.f.resync("matches", o.snapshot())
	}
	return nil
}

func (o *observer) Message(t *dataspace.Turn, v preserves.Value) error {
	// Messages are a stream: when the browser falls behind, the oldest
	// are dropped rather than the server keeping them.
	if o.synced && !o.f.push("change", observeChange{Op: "!", Text: o.render(v)}) {
		o.f.resync("matches", o.snapshot())
	}
	return nil
}

// observeView streams the assertions matching p ("matches" once synced,
// then "change" events), as `syndicate observe` prints them.
func observeView(p pattern.Pattern) viewBoot {
	return func(t *dataspace.Turn, cfg *dataspace.Ref, f *feed) error {
		o := &observer{f: f, held: dataspace.Held[shownAssertion]{}}
		ref := t.Create(o)
		t.Assert(cfg, dataspace.Observe(pattern.Bind{Pattern: p}, ref))
		t.Sync(cfg, func(*dataspace.Turn) error {
			o.synced = true
			o.f.resync("matches", o.snapshot())
			return nil
		})
		return nil
	}
}

// clip bounds a text shown on the page.
func clip(s string) string {
	if len(s) <= maxTextLen {
		return s
	}
	cut := maxTextLen
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut-- // not in the middle of a UTF-8 sequence
	}
	return s[:cut] + "…"
}

func lastN[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	return append(s[:0:0], s[len(s)-n:]...)
}
