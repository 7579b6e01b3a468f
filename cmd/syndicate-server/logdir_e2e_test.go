//go:build e2e

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin/status"
)

// Issue 22's rows on logs, one test each: what a daemon says while it is
// stopped at shutdown, a script forging a daemon's line, symbolic links
// and shared directories under --log-dir, a full disk.

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// A daemon that traps TERM: its last words (the last one unterminated)
// reach its file and the console as daemon lines, with --log-level warn.
func TestE2ELastWordsAtShutdown(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	ready := filepath.Join(dir, "ready")
	writeFile(t, filepath.Join(dir, "t.pr"), `<require-service <daemon t>>
<daemon t "trap 'echo got-term; sleep 0.2; printf last-words; exit 0' TERM; touch `+ready+`; while :; do sleep 0.05; done">
`)
	r := start(t, "--log-dir", logs, "--log-level", "warn", "-c", dir)
	eventually(t, 10*time.Second, "the daemon", func() bool { return fileExists(ready) })
	require.Equal(t, 0, r.stop(t))
	current := readFile(filepath.Join(logs, "daemon-t", "current"))
	require.Regexp(t, `\] out: got-term\n`, current)
	require.Regexp(t, `\] out: last-words\n`, current)
	require.True(t, r.stderr.Has(`"service":"<daemon t>"`, `"source":"daemon"`, `"line":"got-term"`), r.stderr.String())
	require.True(t, r.stderr.Has(`"service":"<daemon t>"`, `"line":"last-words"`), r.stderr.String())
	require.False(t, r.stderr.Has(`"message":"daemon output"`), "one shape for every line")
}

// A script's `$log` line naming a daemon is marked as a script's on the
// console, in JSON and in the daemon's file.
func TestE2EScriptCannotForgeDaemonLine(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "forge.pr"), `$log ! <log "-" {service: <daemon web>, pid: 1, stream: stdout, source: daemon, line: "forged"}>
`)
	r := start(t, "--log-dir", logs, "--log-format", "console", "-c", dir)
	eventually(t, 10*time.Second, "the forged line", func() bool { return strings.Contains(r.stderr.String(), "forged") })
	require.Contains(t, r.stderr.String(), "(script) <daemon web>[1] out: forged")
	require.NotRegexp(t, `\d \x3cdaemon web>\[1\] out: forged`, r.stderr.String())
	eventually(t, 10*time.Second, "the file", func() bool {
		return strings.Contains(readFile(filepath.Join(logs, "daemon-web", "current")), "Z (script) [1] out: forged\n")
	})
	require.Equal(t, 0, r.stop(t))
}

// --log-dir never follows a symbolic link, neither a service's directory
// nor its `current`: the victims stay empty and the refusal is logged.
func TestE2ELogDirRefusesSymlinks(t *testing.T) {
	dir, logs, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	victim := filepath.Join(elsewhere, "victim")
	require.NoError(t, os.WriteFile(victim, nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(logs, "daemon-sym"), 0o755))
	require.NoError(t, os.Symlink(victim, filepath.Join(logs, "daemon-sym", "current")))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(logs, "daemon-sd")))
	writeFile(t, filepath.Join(dir, "d.pr"), `<require-service <daemon sym>>
<daemon sym <one-shot "echo to-victim">>
<require-service <daemon sd>>
<daemon sd <one-shot "echo to-elsewhere">>
`)
	sock := filepath.Join(dir, "admin.sock")
	r := start(t, "--log-dir", logs, "-c", dir, "--admin-socket", sock)
	eventually(t, 10*time.Second, "both refusals", func() bool {
		return r.stderr.Has(`cannot write service log`, `daemon-sym/current: a symbolic link`) &&
			r.stderr.Has(`cannot write service log`, `daemon-sd: not a directory`)
	})
	// The operator sees why in status: the line lost and the refusal.
	client := buildClient(t)
	eventually(t, 10*time.Second, "the refusal in status", func() bool {
		out, err := exec.Command(client, "--admin", sock, "status", "<daemon sym>").CombinedOutput()
		return err == nil && regexp.MustCompile(`(?m)^  log: +1 log lines dropped \(refused: .*a symbolic link`).Match(out)
	})
	out, err := exec.Command(client, "--admin", sock, "status", "--json").Output()
	require.NoError(t, err)
	var svcs []status.Service
	require.NoError(t, json.Unmarshal(out, &svcs))
	i := slices.IndexFunc(svcs, func(s status.Service) bool { return s.Name == "<daemon sd>" })
	require.GreaterOrEqual(t, i, 0, "%s", out)
	require.Regexp(t, `^refused: .*not a directory`, svcs[i].LogDropReason)
	require.Equal(t, 0, r.stop(t))
	require.Empty(t, readFile(victim))
	es, _ := os.ReadDir(elsewhere)
	require.Len(t, es, 1, "nothing written through the linked directory")
}

// `<daemon web>` and `<daemon web.>` keep separate directories.
func TestE2ELogDirNamesNeverShared(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "d.pr"), `<require-service <daemon web>>
<daemon web <one-shot "echo plain">>
<require-service <daemon web.>>
<daemon web. <one-shot "echo dotted">>
`)
	r := start(t, "--log-dir", logs, "-c", dir)
	eventually(t, 10*time.Second, "both files", func() bool {
		return strings.Contains(readFile(filepath.Join(logs, "daemon-web", "current")), "out: plain") &&
			r.stderr.Has(`"line":"dotted"`)
	})
	require.Equal(t, 0, r.stop(t))
	require.NotContains(t, readFile(filepath.Join(logs, "daemon-web", "current")), "dotted")
	matches, _ := filepath.Glob(filepath.Join(logs, "daemon-web@*", "current"))
	require.Len(t, matches, 1)
	require.Contains(t, readFile(matches[0]), "out: dotted")
}

// A log directory that cannot be written (here: the server's file size
// limit, as a full disk would): the lines lost are counted, logged, and
// the count is written into the file once it can be written again.
func TestE2ELogDirFullCounted(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit(1) is not installed")
	}
	dir, logs := t.TempDir(), t.TempDir()
	gate := filepath.Join(dir, "gate")
	writeFile(t, filepath.Join(dir, "d.pr"), `<require-service <daemon d>>
<daemon d "i=0; while :; do i=$((i+1)); echo line-$i-padding-padding-padding; if [ -e `+gate+` ]; then sleep 0.01; fi; done">
`)
	r := startWrapped(t, []string{"prlimit", "--fsize=4096:unlimited"}, "--log-dir", logs, "--service-output=false", "-c", dir)
	current := filepath.Join(logs, "daemon-d", "current")
	eventually(t, 10*time.Second, "the disk full", func() bool {
		return r.stderr.Has(`cannot write service log`, `file too large`)
	})
	require.NoError(t, os.WriteFile(gate, nil, 0o644)) // slow down
	pid := r.cmd.Process.Pid
	require.NoError(t, exec.Command("prlimit", "--pid", strconv.Itoa(pid), "--fsize=unlimited").Run())
	// The writer may already have recovered into a rotated file before
	// the limit was raised, so the count is looked for in every file of
	// the directory.
	all := func() string {
		var b strings.Builder
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(current), "*"))
		for _, f := range files {
			b.WriteString(readFile(f))
		}
		return b.String()
	}
	eventually(t, 10*time.Second, "the count in the file", func() bool {
		return strings.Contains(all(), "syndicate: lines lost, the log directory could not be written {dropped: ")
	})
	require.Regexp(t, `syndicate: lines lost, the log directory could not be written \{dropped: [1-9]\d*, reason: "file too large"\}`, all())
	eventually(t, 10*time.Second, "the warning", func() bool {
		return r.stderr.Has(`log directory writable again; lines were lost`, `"dropped":`)
	})
	require.Equal(t, 0, r.stop(t))
}
