package status

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// TestConnectionsTable: the federation rows fit the terminal, show routes
// without their credentials, keep the latest of overlapping records, and
// show inbound peers only with --all.
func TestConnectionsTable(t *testing.T) {
	m := NewModel(nil)
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	add := func(kind preserves.Symbol, subject string, ci services.ConnInfo) {
		v, err := preserves.ParseText(subject)
		if err != nil {
			t.Fatal(err)
		}
		k := connKey(kind, v)
		m.connSubjects[k] = [2]preserves.Value{kind, v}
		services.Count2(m.conns, k, preserves.FormatText(ci.ToValue()), 1)
	}
	tcp := `<tcp "peer.example" 9001>`
	add(services.ConnOutbound, tcp, services.ConnInfo{State: services.ConnConnecting, Since: now.Add(-5 * time.Second)})
	add(services.ConnOutbound, tcp, services.ConnInfo{State: services.ConnFailed, Since: now.Add(-3 * time.Second),
		Error: "ConnectionRefused: dial tcp 10.1.2.3:9001: connect: connection refused", Next: now.Add(400 * time.Millisecond), Attempts: 5})
	add(services.ConnRoute, `<route [`+tcp+`] <ref {oid: "shared", sig: #x"06f2b59a9183715d3a7b98e44828a054"}>>`,
		services.ConnInfo{State: services.ConnWaiting, Since: now.Add(-3 * time.Second)})
	add(services.ConnInbound, `<tcp "127.0.0.1:40000">`, services.ConnInfo{State: services.ConnConnected, Since: now.Add(-time.Minute),
		Resolved: []preserves.Value{preserves.NewRecord(preserves.Symbol("ref"), preserves.String("x"))}})

	var b strings.Builder
	WriteConnections(&b, m.Connections(false), now, 80)
	out := b.String()
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("%d columns: %q", n, line)
		}
	}
	for _, want := range []string{"CONNECTION", tcp, "outbound  failed", `<ref "shared"`, "waiting", "ConnectionRefused"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, never := range []string{"06f2b59a", "127.0.0.1:40000", "connecting"} {
		if strings.Contains(out, never) {
			t.Errorf("%q in\n%s", never, out)
		}
	}
	b.Reset()
	WriteConnections(&b, m.Connections(true), now, 0)
	if out := b.String(); !strings.Contains(out, `<tcp "127.0.0.1:40000">`) || !strings.Contains(out, `resolved <ref "x">`) ||
		!strings.Contains(out, "next attempt in 400ms; attempt 5") || !strings.Contains(out, `<ref "shared"> via `+tcp) {
		t.Errorf("with --all:\n%s", out)
	}
}
