package status

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	gkschema "github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Connection is one `<connection-status KIND SUBJECT INFO>` record: a
// transport or route the resolver keeps, or (with --all) an inbound peer
// that resolved something (docs/services.md, "Federation").
type Connection struct {
	Kind     string     `json:"kind"`
	Subject  string     `json:"subject"`
	State    string     `json:"state"`
	Since    *time.Time `json:"since,omitempty"`
	Error    string     `json:"error,omitempty"`
	Next     *time.Time `json:"nextAttempt,omitempty"`
	Attempts int        `json:"attempts,omitempty"`
	Via      string     `json:"via,omitempty"`
	Resolved []string   `json:"resolved,omitempty"`
}

// connKey identifies a connection record: KIND and SUBJECT.
func connKey(kind, subject preserves.Value) string {
	return preserves.FormatText(kind) + " " + preserves.FormatText(subject)
}

// watchConnections keeps m.conns up to date. An update of a record
// asserts the new one before the old one's retraction arrives, so each
// connection counts the texts of its records.
func (m *Model) watchConnections(t *dataspace.Turn, cfg *dataspace.Ref) {
	m.Watch(t, cfg, services.LabelConnectionStatus, 3, func(c []preserves.Value, d int) {
		kind, subject := preserves.Strip(c[0]), preserves.Strip(c[1])
		k := connKey(kind, subject)
		if d > 0 {
			m.connSubjects[k] = [2]preserves.Value{kind, subject}
		}
		services.Count2(m.conns, k, preserves.FormatText(preserves.Strip(c[2])), d)
		if m.conns[k] == nil {
			delete(m.connSubjects, k)
		}
	})
}

// Connections returns the connections, outbound and routes first, each
// kind in Preserves order of its subject; inbound ones only with all.
func (m *Model) Connections(all bool) []Connection {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Connection
	for k, infos := range m.conns {
		ks := m.connSubjects[k]
		kind, _ := ks[0].(preserves.Symbol)
		if kind == services.ConnInbound && !all {
			continue
		}
		var ci services.ConnInfo
		for text := range infos { // overlapping records: the latest state wins
			v, err := preserves.ParseText(text)
			if err != nil {
				continue
			}
			if c := services.ParseConnInfo(v); ci.State == "" || c.Since.After(ci.Since) {
				ci = c
			}
		}
		out = append(out, newConnection(kind, ks[1], ci))
	}
	order := map[string]int{string(services.ConnOutbound): 0, string(services.ConnRoute): 1, string(services.ConnInbound): 2}
	slices.SortFunc(out, func(a, b Connection) int {
		if d := order[a.Kind] - order[b.Kind]; d != 0 {
			return d
		}
		return strings.Compare(a.Subject, b.Subject)
	})
	return out
}

func newConnection(kind preserves.Symbol, subject preserves.Value, ci services.ConnInfo) Connection {
	c := Connection{Kind: string(kind), Subject: connSubject(kind, subject), State: string(ci.State),
		Error: ci.Error, Attempts: ci.Attempts}
	if !ci.Since.IsZero() {
		c.Since = &ci.Since
	}
	if !ci.Next.IsZero() {
		c.Next = &ci.Next
	}
	if ci.Via != nil {
		c.Via = services.ShortName(ci.Via)
	}
	for _, r := range ci.Resolved {
		c.Resolved = append(c.Resolved, preserves.FormatText(r))
	}
	return c
}

// connSubject renders a subject; a route by its transports and its steps
// without their credentials.
func connSubject(kind preserves.Symbol, subject preserves.Value) string {
	if kind == services.ConnRoute {
		if r, err := gkschema.ParseRoute(subject); err == nil {
			steps := make([]string, 0, len(r.PathSteps))
			for _, s := range r.PathSteps {
				steps = append(steps, preserves.FormatText(services.RedactStep(s.StepType, s.Detail)))
			}
			ts := make([]string, 0, len(r.Transports))
			for _, t := range r.Transports {
				ts = append(ts, preserves.FormatText(t))
			}
			return strings.Join(steps, " ") + " via " + strings.Join(ts, " ")
		}
	}
	return services.ShortName(subject)
}

// WriteConnections prints the connections as a table fitting width (0:
// no limit, as WriteTable), after a blank line; nothing when there are
// none. The subject is cut in the middle, DETAIL at its end.
func WriteConnections(w io.Writer, conns []Connection, now time.Time, width int) {
	if len(conns) == 0 {
		return
	}
	fmt.Fprintln(w)
	cols := []*column{{head: "CONNECTION", min: 16, middle: true}, {head: "KIND"}, {head: "STATE"}, {head: "FOR"},
		{head: "DETAIL", min: 12}}
	for _, c := range conns {
		held := "-"
		if c.Since != nil {
			held = ago(now, *c.Since)
		}
		for i, cell := range []string{c.Subject, c.Kind, c.State, held, c.detail(now)} {
			cols[i].cells = append(cols[i].cells, cell)
		}
	}
	writeColumns(w, cols, width, nil)
}

// detail is the last error and the next attempt, the transport a route
// went through, or what an inbound peer resolved.
func (c Connection) detail(now time.Time) string {
	var parts []string
	if c.Error != "" {
		parts = append(parts, c.Error)
	}
	if c.Next != nil {
		parts = append(parts, fmt.Sprintf("next attempt in %s", max(c.Next.Sub(now), 0).Round(100*time.Millisecond)))
	}
	if c.Attempts > 1 {
		parts = append(parts, fmt.Sprintf("attempt %d", c.Attempts))
	}
	if c.Via != "" {
		parts = append(parts, "via "+c.Via)
	}
	if len(c.Resolved) > 0 {
		parts = append(parts, "resolved "+strings.Join(c.Resolved, " "))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
