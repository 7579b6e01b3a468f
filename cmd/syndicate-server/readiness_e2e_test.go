//go:build e2e

package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 17 from the outside: the built server runs daemons that signal
// readiness on an s6 notification fd (a shell script) and by listening on
// a Unix socket (a nested syndicate-server), one that never opens its
// socket and fails, and a dependant of the first two; the built client
// shows the states, the failure's cause and the boot analysis.
func TestE2EReadinessAndAnalyze(t *testing.T) {
	client := buildClient(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	cfg := filepath.Join(dir, "config")
	listen := filepath.Join(dir, "nested.sock")
	never := filepath.Join(dir, "never.sock")
	writeFile(t, filepath.Join(cfg, "ready.pr"), fmt.Sprintf(`<require-service <daemon app>>
<depends-on <daemon app> <service-state <daemon fd> ready>>
<depends-on <daemon app> <service-state <daemon nested> ready>>
<daemon app "exec sleep 100">
<daemon fd {argv: ["sh" "-c" "sleep 0.3; echo >&3; exec sleep 100"], readiness: <notification-fd 3>}>
<daemon nested {argv: [%q "--no-banner" "--admin-socket" "-" "-s" %q], readiness: <unix %q>}>
<require-service <daemon never>>
<daemon never {argv: "exec sleep 100", readiness: <unix %q>, readyTimeout: 0.5, restart: never}>
`, serverBin, listen, listen, never))
	r := start(t, "-c", cfg, "--admin-socket", sock)

	type svc struct {
		Name    string   `json:"name"`
		States  []string `json:"states"`
		Reasons []string `json:"reasons"`
	}
	status := func() map[string]svc {
		out, _ := exec.Command(client, "--admin", sock, "status", "--json").Output()
		var list []svc
		if json.Unmarshal(out, &list) != nil {
			return nil
		}
		m := map[string]svc{}
		for _, s := range list {
			m[s.Name] = s
		}
		return m
	}
	eventually(t, 20*time.Second, "app ready and never failed", func() bool {
		m := status()
		return slices.Contains(m["<daemon app>"].States, "ready") && slices.Contains(m["<daemon never>"].States, "failed")
	})
	m := status()
	for _, name := range []string{"<daemon fd>", "<daemon nested>"} {
		require.Contains(t, m[name].States, "ready", name)
	}
	require.Contains(t, strings.Join(m["<daemon never>"].Reasons, "; "), "no readiness (unix "+never+" accepting connections) within 500ms")

	out, err := exec.Command(client, "--admin", sock, "analyze", "critical-chain", "<daemon app>").Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.True(t, strings.HasPrefix(lines[len(lines)-2], "<daemon app> @"), "%s", out)
	gate := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(gate, "└─<daemon fd> @") || strings.HasPrefix(gate, "└─<daemon nested> @"), "%s", out)

	out, err = exec.Command(client, "--admin", sock, "analyze", "blame").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "<daemon never>")
	require.Contains(t, string(out), "failed after")

	out, err = exec.Command(client, "--admin", sock, "analyze", "plot").Output()
	require.NoError(t, err)
	d := xml.NewDecoder(strings.NewReader(string(out)))
	bars := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "plot is well-formed XML")
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == "bar" {
					bars++
				}
			}
		}
	}
	require.Equal(t, len(m), bars, "one bar per service")
	require.Equal(t, 0, r.stop(t))
}
