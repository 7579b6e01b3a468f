package schemas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/schemas/dataspacepatterns"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/gatekeeper"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/protocol"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/sturdy"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

type valuer interface{ ToValue() preserves.Value }

func p[T valuer](f func(preserves.Value) (T, error)) func(preserves.Value) (valuer, error) {
	return func(v preserves.Value) (valuer, error) { return f(v) }
}

func text(t *testing.T, src string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseTextOptions([]byte(src), preserves.TextOptions{
		Embedded: func(v preserves.Value) (any, error) { return v, nil }})
	require.NoError(t, err)
	return v
}

// TestProtocolRoundTrips parses real protocol values with the generated
// parsers and writes them back unchanged.
func TestProtocolRoundTrips(t *testing.T) {
	cases := []struct {
		parse func(preserves.Value) (valuer, error)
		src   string
	}{
		{p(externalservices.ParseDaemonProcess), `<daemon web ["/usr/bin/web" "--port" "8080"]>`},
		{p(externalservices.ParseDaemonProcess), `<daemon web "web --port 8080">`},
		{p(externalservices.ParseDaemonProcess), `<daemon hello <one-shot "echo hi">>`},
		{p(externalservices.ParseDaemonProcess), `<daemon x {argv: ["true"] restart: on-error env: {"A": "1" B: #f} dir: "/tmp" clearEnv: #t readyOnStart: #f protocol: application/syndicate}>`},
		{p(service.ParseServiceState), `<service-state <daemon web> ready>`},
		{p(service.ParseServiceState), `<service-state <daemon web> <custom 1>>`},
		{p(service.ParseServiceDependency), `<depends-on <daemon web> <service-state <daemon db> ready>>`},
		{p(gatekeeper.ParseResolve), `<resolve <ref {oid: "syndicate" sig: #x"00ff"}> #:obs>`},
		{p(sturdy.ParseSturdyRef), `<ref {oid: "syndicate" sig: #x"00" caveats: [<rewrite <bind <_>> <ref 0>> <reject <lit 1>>]}>`},
		{p(internalservices.ParseTcpRelayListener), `<relay-listener <tcp "0.0.0.0" 8001> #:gk>`},
		{p(internalservices.ParseConfigWatcher), `<config-watcher "/etc/syndicate" {config: #:c gatekeeper: #:g}>`},
		{p(protocol.ParsePacket), `[[1 <A <foo bar> 2>] [1 <R 2>] [0 <M "hi">] [3 <S #:peer>]]`},
		{p(protocol.ParsePacket), `<error "oops" [1 2]>`},
		{p(protocol.ParsePacket), `#f`},
		{p(dataspacepatterns.ParsePattern), `<group <rec foo> {0: <bind <_>> 1: <lit 3> 2: <lit #:x>}>`},
		// Ours (syndicateGo.prs).
		{p(syndicatego.ParseProcessStatus), `<process-status <daemon web> {pid: 42 restarts: 0 since: "2026-11-21T06:58:01Z"}>`},
		{p(syndicatego.ParseServiceInfo), `<service-info <daemon web> {restarts: 2 phase: backoff reason: ["x"]}>`},
		{p(syndicatego.ParseServiceInfo), `<service-info <daemon web> {}>`},
		{p(syndicatego.ParseServiceOutput), `<service-output <daemon web> [{at: "2026-11-21T06:58:01Z" stream: stdout line: "hi"}]>`},
		{p(syndicatego.ParseServiceHistory), `<service-history <daemon web> [<asserted "T1" require-service> <retracted "T2" <service-state ready>>] 3>`},
		{p(syndicatego.ParseLogTail), `<log-tail #f 10 #t #:sink>`},
		{p(syndicatego.ParseLogDropped), `<log-dropped - 12 "no space left on device">`},
	}
	for _, c := range cases {
		v := text(t, c.src)
		x, err := c.parse(v)
		require.NoError(t, err, c.src)
		require.True(t, preserves.Equal(v, x.ToValue()), "%s → %s", c.src, preserves.FormatText(x.ToValue()))
	}
}

// TestProtocolRejects: a malformed daemon spec fails naming the part.
func TestProtocolRejects(t *testing.T) {
	v, err := preserves.ParseTextOptions([]byte("<daemon web {\n  argv: [\"web\" 8080]\n}>"),
		preserves.TextOptions{File: "web.pr", Positions: true})
	require.NoError(t, err)
	_, err = externalservices.ParseDaemonProcess(v)
	require.True(t, errors.Is(err, schema.ErrParse))
	var pe *schema.ParseError
	require.True(t, errors.As(err, &pe))
	deep := pe.Deepest()
	require.Equal(t, "[1][argv][1]", strings.Join(deep.Path, ""))
	require.Equal(t, "web.pr:2:16", deep.Pos.String())

	x, err := externalservices.ParseDaemonProcess(text(t, `<daemon x {argv: "true" restart: sometimes}>`))
	require.NoError(t, err, "an invalid restart value is kept as @invalid, for the service to report")
	full := x.Config.(externalservices.DaemonProcessSpecFull).Value
	require.IsType(t, externalservices.RestartFieldInvalid{}, full.Restart)
}
