package services

import (
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// The status vocabulary (our protocol extension, docs/protocol.md): what
// `syndicate status` shows beyond `<service-state NAME S>` (its reading of
// the rest of the vocabulary is [StatusModel]). It is the one home of the
// status record: the supervisor, the daemon service and the dependency
// diagnostics each assert their own
//
//	<service-info NAME {since: "RFC3339", restarts: N, recent: N,
//	                    exit: "exit status: 3", exit-at: "RFC3339",
//	                    phase: SYMBOL, reason: "…", pos: "file:line:col"}>
//
// with only the keys they know, and readers merge them with [MergeInfo].

// LabelServiceInfo labels `<service-info NAME INFO>`.
const LabelServiceInfo = preserves.Symbol("service-info")

// Phases refine a service state (key `phase`).
const (
	PhaseCannotStart = preserves.Symbol("cannot-start") // a spawn failed; retried with backoff
	PhaseBackoff     = preserves.Symbol("backoff")      // waiting to restart after an exit
	PhaseGaveUp      = preserves.Symbol("gave-up")      // restart limit reached
	PhaseRunning     = preserves.Symbol("running")      // a silent service (§2.5) at work
)

// Info is one source's contribution to a service's status. Zero fields are
// left out of the record.
type Info struct {
	Since    time.Time        // when the current state began (supervisor)
	Restarts int              // restarts so far
	Recent   int              // restarts within the restart window
	Exit     string           // the last exit, "exit status: N" or "signal: N (SIG…)"
	ExitAt   time.Time        // when it happened
	Phase    preserves.Symbol // a refinement of the state, e.g. cannot-start
	Reasons  []string         // why the service failed or waits
	Pos      string           // file:line:col of the declaration the reasons are about
}

var (
	keySince    = preserves.Symbol("since")
	keyRestarts = preserves.Symbol("restarts")
	keyRecent   = preserves.Symbol("recent")
	keyExit     = preserves.Symbol("exit")
	keyExitAt   = preserves.Symbol("exit-at")
	keyPhase    = preserves.Symbol("phase")
	keyReason   = preserves.Symbol("reason")
	keyPos      = preserves.Symbol("pos")
)

// StatusTime renders a status timestamp (RFC 3339, UTC, nanoseconds).
func StatusTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ToValue renders the info dictionary. Several reasons are joined as a
// sequence.
func (i Info) ToValue() preserves.Value {
	var es []preserves.DictEntry
	add := func(k preserves.Symbol, v preserves.Value) { es = append(es, preserves.DictEntry{Key: k, Value: v}) }
	if !i.Since.IsZero() {
		add(keySince, preserves.String(StatusTime(i.Since)))
	}
	if i.Restarts != 0 {
		add(keyRestarts, preserves.Int(i.Restarts))
	}
	if i.Recent != 0 {
		add(keyRecent, preserves.Int(i.Recent))
	}
	if i.Exit != "" {
		add(keyExit, preserves.String(i.Exit))
	}
	if !i.ExitAt.IsZero() {
		add(keyExitAt, preserves.String(StatusTime(i.ExitAt)))
	}
	if i.Phase != "" {
		add(keyPhase, i.Phase)
	}
	if len(i.Reasons) > 0 {
		rs := make(preserves.Sequence, len(i.Reasons))
		for j, r := range i.Reasons {
			rs[j] = preserves.String(r)
		}
		add(keyReason, rs)
	}
	if i.Pos != "" {
		add(keyPos, preserves.String(i.Pos))
	}
	return preserves.NewDictionary(es...)
}

// ServiceInfo returns `<service-info name info>`.
func ServiceInfo(name preserves.Value, i Info) preserves.Value {
	return preserves.NewRecord(LabelServiceInfo, name, i.ToValue())
}

// ParseInfo reads an info dictionary; unknown keys and ill-typed values
// are ignored, so newer servers can add keys.
func ParseInfo(v preserves.Value) Info {
	var i Info
	d, ok := v.(*preserves.Dictionary)
	if !ok {
		return i
	}
	str := func(k preserves.Symbol) string {
		x, _ := d.Get(k)
		s, _ := x.(preserves.String)
		return string(s)
	}
	num := func(k preserves.Symbol) int {
		x, _ := d.Get(k)
		n, _ := x.(preserves.Int)
		return int(n)
	}
	tm := func(k preserves.Symbol) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, str(k))
		return t
	}
	i.Since, i.ExitAt = tm(keySince), tm(keyExitAt)
	i.Restarts, i.Recent = num(keyRestarts), num(keyRecent)
	i.Exit, i.Pos = str(keyExit), str(keyPos)
	if x, ok := d.Get(keyPhase); ok {
		i.Phase, _ = x.(preserves.Symbol)
	}
	if x, ok := d.Get(keyReason); ok {
		switch r := x.(type) {
		case preserves.String:
			i.Reasons = []string{string(r)}
		case preserves.Sequence:
			for _, e := range r {
				if s, ok := e.(preserves.String); ok {
					i.Reasons = append(i.Reasons, string(s))
				}
			}
		}
	}
	return i
}

// MergeInfo combines the contributions of several sources: restart counts
// add up, the latest exit wins, the earliest since wins (the supervisor's
// state change; others leave it zero), reasons are concatenated, and the
// first phase and position found are kept.
func MergeInfo(parts ...Info) Info {
	var m Info
	for _, p := range parts {
		m.Restarts += p.Restarts
		m.Recent += p.Recent
		if !p.Since.IsZero() && (m.Since.IsZero() || p.Since.Before(m.Since)) {
			m.Since = p.Since
		}
		if p.Exit != "" && (m.Exit == "" || p.ExitAt.After(m.ExitAt)) {
			m.Exit, m.ExitAt = p.Exit, p.ExitAt
		}
		if m.Phase == "" {
			m.Phase = p.Phase
		}
		if m.Pos == "" {
			m.Pos = p.Pos
		}
		m.Reasons = append(m.Reasons, p.Reasons...)
	}
	return m
}

// InfoPublisher keeps one `<service-info NAME INFO>` assertion equal to
// the latest info, re-asserting only on change. Like every assertion, it
// must be updated with its owning facet active.
type InfoPublisher struct {
	handle dataspace.Handle
	shown  Info
}

// Publish asserts `<service-info name i>` in cfg unless it is unchanged.
func (p *InfoPublisher) Publish(t *dataspace.Turn, cfg *dataspace.Ref, name preserves.Value, i Info) {
	if p.handle != 0 && i.equal(p.shown) {
		return
	}
	p.shown = i
	p.shown.Reasons = slices.Clone(i.Reasons)
	t.Update(&p.handle, cfg, ServiceInfo(name, i))
}

func (i Info) equal(j Info) bool {
	return i.Since.Equal(j.Since) && i.Restarts == j.Restarts && i.Recent == j.Recent && i.Exit == j.Exit &&
		i.ExitAt.Equal(j.ExitAt) && i.Phase == j.Phase && i.Pos == j.Pos && slices.Equal(i.Reasons, j.Reasons)
}

// Clear withdraws the assertion, if any.
func (p *InfoPublisher) Clear(t *dataspace.Turn) {
	if p.handle != 0 {
		t.Retract(p.handle)
		p.handle, p.shown = 0, Info{}
	}
}
