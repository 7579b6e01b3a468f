package services

import (
	"math/big"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// The status vocabulary (our protocol extension, docs/protocol.md): what
// `syndicate status` shows beyond `<service-state NAME S>` (its reading of
// the rest of the vocabulary is [StatusModel]). The record
// `<service-info NAME INFO>` is defined in dataspace/schemas/syndicateGo.prs
// (syndicatego.ServiceInfo, every key of INFO optional); [Info] is its Go
// form. The supervisor, the daemon service and the dependency diagnostics
// each assert their own record with only the keys they know, and readers
// merge them with [MergeInfo].

// LabelServiceInfo labels `<service-info NAME INFO>`.
const LabelServiceInfo = syndicatego.LabelServiceInfo

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
	// A scheduled daemon: when its last run began (Exit and ExitAt are
	// its end once it is over), when the next is due, and the runs
	// skipped because the previous one was still running.
	LastRun, NextRun time.Time
	Skipped          int
	// A socket-activated daemon: each socket and whether its process has
	// been started, "ADDRESS: STATE".
	Sockets []string
}

// StatusTime renders a status timestamp (RFC 3339, UTC, nanoseconds).
func StatusTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ToValue renders the info dictionary.
func (i Info) ToValue() preserves.Value {
	d := syndicatego.ServiceInfoDict{Since: syndicatego.InfoSinceAbsent{}, Restarts: syndicatego.InfoRestartsAbsent{},
		Recent: syndicatego.InfoRecentAbsent{}, Exit: syndicatego.InfoExitAbsent{}, ExitAt: syndicatego.InfoExitAtAbsent{},
		Phase: syndicatego.InfoPhaseAbsent{}, Reason: syndicatego.InfoReasonAbsent{}, Pos: syndicatego.InfoPosAbsent{},
		LastRun: syndicatego.InfoLastRunAbsent{}, NextRun: syndicatego.InfoNextRunAbsent{}, Skipped: syndicatego.InfoSkippedAbsent{},
		Sockets: syndicatego.InfoSocketsAbsent{}}
	if !i.Since.IsZero() {
		d.Since = syndicatego.InfoSincePresent{Since: StatusTime(i.Since)}
	}
	if i.Restarts != 0 {
		d.Restarts = syndicatego.InfoRestartsPresent{Restarts: big.NewInt(int64(i.Restarts))}
	}
	if i.Recent != 0 {
		d.Recent = syndicatego.InfoRecentPresent{Recent: big.NewInt(int64(i.Recent))}
	}
	if i.Exit != "" {
		d.Exit = syndicatego.InfoExitPresent{Exit: i.Exit}
	}
	if !i.ExitAt.IsZero() {
		d.ExitAt = syndicatego.InfoExitAtPresent{ExitAt: StatusTime(i.ExitAt)}
	}
	if i.Phase != "" {
		d.Phase = syndicatego.InfoPhasePresent{Phase: i.Phase}
	}
	if len(i.Reasons) > 0 {
		d.Reason = syndicatego.InfoReasonPresent{Reason: i.Reasons}
	}
	if i.Pos != "" {
		d.Pos = syndicatego.InfoPosPresent{Pos: i.Pos}
	}
	if !i.LastRun.IsZero() {
		d.LastRun = syndicatego.InfoLastRunPresent{LastRun: StatusTime(i.LastRun)}
	}
	if !i.NextRun.IsZero() {
		d.NextRun = syndicatego.InfoNextRunPresent{NextRun: StatusTime(i.NextRun)}
	}
	if i.Skipped != 0 {
		d.Skipped = syndicatego.InfoSkippedPresent{Skipped: big.NewInt(int64(i.Skipped))}
	}
	if len(i.Sockets) > 0 {
		d.Sockets = syndicatego.InfoSocketsPresent{Sockets: i.Sockets}
	}
	return d.ToValue()
}

// ServiceInfo returns `<service-info name info>`.
func ServiceInfo(name preserves.Value, i Info) preserves.Value {
	return preserves.NewRecord(LabelServiceInfo, name, i.ToValue())
}

// ParseInfo reads an info dictionary; unknown keys and ill-typed values
// are ignored (the schema's @invalid alternatives), so newer servers can
// add keys.
func ParseInfo(v preserves.Value) Info {
	var i Info
	d, err := syndicatego.ParseServiceInfoDict(v)
	if err != nil {
		return i // not a dictionary
	}
	tm := func(s string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, s)
		return t
	}
	if x, ok := d.Since.(syndicatego.InfoSincePresent); ok {
		i.Since = tm(x.Since)
	}
	if x, ok := d.Restarts.(syndicatego.InfoRestartsPresent); ok && x.Restarts.IsInt64() {
		i.Restarts = int(x.Restarts.Int64())
	}
	if x, ok := d.Recent.(syndicatego.InfoRecentPresent); ok && x.Recent.IsInt64() {
		i.Recent = int(x.Recent.Int64())
	}
	if x, ok := d.Exit.(syndicatego.InfoExitPresent); ok {
		i.Exit = x.Exit
	}
	if x, ok := d.ExitAt.(syndicatego.InfoExitAtPresent); ok {
		i.ExitAt = tm(x.ExitAt)
	}
	if x, ok := d.Phase.(syndicatego.InfoPhasePresent); ok {
		i.Phase = x.Phase
	}
	switch x := d.Reason.(type) {
	case syndicatego.InfoReasonPresent:
		i.Reasons = x.Reason
	case syndicatego.InfoReasonOne:
		i.Reasons = []string{x.Reason}
	}
	if x, ok := d.Pos.(syndicatego.InfoPosPresent); ok {
		i.Pos = x.Pos
	}
	if x, ok := d.LastRun.(syndicatego.InfoLastRunPresent); ok {
		i.LastRun = tm(x.LastRun)
	}
	if x, ok := d.NextRun.(syndicatego.InfoNextRunPresent); ok {
		i.NextRun = tm(x.NextRun)
	}
	if x, ok := d.Skipped.(syndicatego.InfoSkippedPresent); ok && x.Skipped.IsInt64() {
		i.Skipped = int(x.Skipped.Int64())
	}
	if x, ok := d.Sockets.(syndicatego.InfoSocketsPresent); ok {
		i.Sockets = x.Sockets
	}
	return i
}

// MergeInfo combines the contributions of several sources: restart counts
// add up (recent ≤ total), the latest exit wins, the earliest since wins (the supervisor's
// state change; others leave it zero), reasons are concatenated, and the
// first phase and position found are kept; of scheduled runs, the latest
// last run and the earliest next run win, and skipped runs add up.
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
		if p.LastRun.After(m.LastRun) {
			m.LastRun = p.LastRun
		}
		if !p.NextRun.IsZero() && (m.NextRun.IsZero() || p.NextRun.Before(m.NextRun)) {
			m.NextRun = p.NextRun
		}
		m.Skipped += p.Skipped
		m.Sockets = append(m.Sockets, p.Sockets...)
	}
	// Recent counts restarts within the restart window, so never more
	// than all restarts: a source that counts exits (the daemon's
	// history) includes an exit not yet followed by a restart.
	m.Recent = min(m.Recent, m.Restarts)
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
	p.shown.Sockets = slices.Clone(i.Sockets)
	t.Update(&p.handle, cfg, ServiceInfo(name, i))
}

func (i Info) equal(j Info) bool {
	return i.Since.Equal(j.Since) && i.Restarts == j.Restarts && i.Recent == j.Recent && i.Exit == j.Exit &&
		i.ExitAt.Equal(j.ExitAt) && i.Phase == j.Phase && i.Pos == j.Pos && slices.Equal(i.Reasons, j.Reasons) &&
		i.LastRun.Equal(j.LastRun) && i.NextRun.Equal(j.NextRun) && i.Skipped == j.Skipped &&
		slices.Equal(i.Sockets, j.Sockets)
}

// Clear withdraws the assertion, if any.
func (p *InfoPublisher) Clear(t *dataspace.Turn) {
	if p.handle != 0 {
		t.Retract(p.handle)
		p.handle, p.shown = 0, Info{}
	}
}
