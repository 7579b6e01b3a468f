package services

import (
	"math/big"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// The connection vocabulary (our protocol extension, docs/protocol.md and
// docs/services.md "Federation"): `<connection-status KIND SUBJECT INFO>`,
// defined in dataspace/schemas/syndicateGo.prs, one per connection between
// servers, so that `syndicate status` can tell "the peer is down" from
// "nothing was asked". The resolver asserts the outbound and route
// records, the relay listeners the inbound ones; [ConnInfo] is the Go form
// of INFO.

// LabelConnectionStatus labels `<connection-status KIND SUBJECT INFO>`.
const LabelConnectionStatus = syndicatego.LabelConnectionStatus

// Connection kinds (KIND).
const (
	ConnOutbound = preserves.Symbol("outbound") // a transport the resolver keeps
	ConnRoute    = preserves.Symbol("route")    // a resolve-path being answered
	ConnInbound  = preserves.Symbol("inbound")  // an accepted peer that resolved something
)

// Connection states (key `state`).
const (
	ConnConnecting = preserves.Symbol("connecting")
	ConnConnected  = preserves.Symbol("connected")
	ConnFailed     = preserves.Symbol("failed")
	ConnWaiting    = preserves.Symbol("waiting")   // a route with no transport up
	ConnResolving  = preserves.Symbol("resolving") // a route whose steps are under way
	ConnResolved   = preserves.Symbol("resolved")
)

// ConnInfo is the state of one connection. Zero fields are left out.
type ConnInfo struct {
	State    preserves.Symbol
	Since    time.Time         // when State began
	Error    string            // why the last attempt failed
	Next     time.Time         // when the next attempt is due
	Attempts int               // attempts since the last success
	Via      preserves.Value   // a route's transport
	Resolved []preserves.Value // the steps an inbound peer resolved
}

// ToValue renders the info dictionary.
func (c ConnInfo) ToValue() preserves.Value {
	d := syndicatego.ConnectionInfo{State: syndicatego.ConnStateAbsent{}, Since: syndicatego.ConnSinceAbsent{},
		Error: syndicatego.ConnErrorAbsent{}, Next: syndicatego.ConnNextAbsent{}, Attempts: syndicatego.ConnAttemptsAbsent{},
		Via: syndicatego.ConnViaAbsent{}, Resolved: syndicatego.ConnResolvedAbsent{}}
	if c.State != "" {
		d.State = syndicatego.ConnStatePresent{State: c.State}
	}
	if !c.Since.IsZero() {
		d.Since = syndicatego.ConnSincePresent{Since: StatusTime(c.Since)}
	}
	if c.Error != "" {
		d.Error = syndicatego.ConnErrorPresent{Error: c.Error}
	}
	if !c.Next.IsZero() {
		d.Next = syndicatego.ConnNextPresent{Next: StatusTime(c.Next)}
	}
	if c.Attempts != 0 {
		d.Attempts = syndicatego.ConnAttemptsPresent{Attempts: big.NewInt(int64(c.Attempts))}
	}
	if c.Via != nil {
		d.Via = syndicatego.ConnViaPresent{Via: c.Via}
	}
	if len(c.Resolved) > 0 {
		d.Resolved = syndicatego.ConnResolvedPresent{Resolved: c.Resolved}
	}
	return d.ToValue()
}

// ConnectionStatus returns `<connection-status kind subject info>`.
func ConnectionStatus(kind preserves.Symbol, subject preserves.Value, c ConnInfo) preserves.Value {
	return preserves.NewRecord(LabelConnectionStatus, kind, subject, c.ToValue())
}

// ParseConnInfo reads an info dictionary; unknown keys and ill-typed
// values are ignored, so newer servers can add keys.
func ParseConnInfo(v preserves.Value) ConnInfo {
	var c ConnInfo
	d, err := syndicatego.ParseConnectionInfo(v)
	if err != nil {
		return c
	}
	tm := func(s string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, s)
		return t
	}
	if x, ok := d.State.(syndicatego.ConnStatePresent); ok {
		c.State = x.State
	}
	if x, ok := d.Since.(syndicatego.ConnSincePresent); ok {
		c.Since = tm(x.Since)
	}
	if x, ok := d.Error.(syndicatego.ConnErrorPresent); ok {
		c.Error = x.Error
	}
	if x, ok := d.Next.(syndicatego.ConnNextPresent); ok {
		c.Next = tm(x.Next)
	}
	if x, ok := d.Attempts.(syndicatego.ConnAttemptsPresent); ok && x.Attempts.IsInt64() {
		c.Attempts = int(x.Attempts.Int64())
	}
	if x, ok := d.Via.(syndicatego.ConnViaPresent); ok {
		c.Via = x.Via
	}
	if x, ok := d.Resolved.(syndicatego.ConnResolvedPresent); ok {
		c.Resolved = x.Resolved
	}
	return c
}

func (c ConnInfo) equal(d ConnInfo) bool {
	eqv := func(a, b preserves.Value) bool {
		return (a == nil) == (b == nil) && (a == nil || preserves.Equal(a, b))
	}
	return c.State == d.State && c.Since.Equal(d.Since) && c.Error == d.Error && c.Next.Equal(d.Next) &&
		c.Attempts == d.Attempts && eqv(c.Via, d.Via) &&
		slices.EqualFunc(c.Resolved, d.Resolved, func(a, b preserves.Value) bool { return preserves.Equal(a, b) })
}

// ConnPublisher keeps one `<connection-status …>` assertion equal to the
// latest info, re-asserting only on change. Like every assertion, it must
// be updated with its owning facet active.
type ConnPublisher struct {
	handle dataspace.Handle
	shown  ConnInfo
}

// Publish asserts `<connection-status kind subject c>` in cfg unless it is
// unchanged.
func (p *ConnPublisher) Publish(t *dataspace.Turn, cfg *dataspace.Ref, kind preserves.Symbol, subject preserves.Value, c ConnInfo) {
	if p.handle != 0 && c.equal(p.shown) {
		return
	}
	p.shown = c
	p.shown.Resolved = slices.Clone(c.Resolved)
	t.Update(&p.handle, cfg, ConnectionStatus(kind, subject, c))
}

// Clear withdraws the assertion, if any.
func (p *ConnPublisher) Clear(t *dataspace.Turn) {
	if p.handle != 0 {
		t.Retract(p.handle)
		p.handle, p.shown = 0, ConnInfo{}
	}
}

// RedactStep renders a gatekeeper path step by what names it, without its
// credentials: `<ref {oid: X …}>` as `<ref X>`, `<noise {service: S …}>`
// as `<noise S>`, anything else by its step type alone. Connection records
// and `syndicate status` show steps this way: a sturdy ref's signature is
// a bearer credential.
func RedactStep(stepType preserves.Symbol, detail preserves.Value) preserves.Value {
	var key preserves.Symbol
	switch stepType {
	case sturdy.LabelRef:
		key = "oid"
	case noisesession.SymNoise:
		key = "service"
	default:
		return stepType
	}
	if d, ok := preserves.Unwrap(detail).(*preserves.Dictionary); ok {
		if x, ok := d.Get(key); ok {
			return preserves.NewRecord(stepType, x)
		}
	}
	return preserves.NewRecord(stepType)
}
