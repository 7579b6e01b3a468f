//go:build e2e

package main

// Every assertion retracted, end to end: a facet that stops with many
// assertions (a removed file, an edited file, a `?` handler whose trigger
// goes) must take every one of them with it — and so every daemon they
// required.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sleepersWith counts live (non-zombie) processes whose command line is
// `sleep <marker>.N` for some N.
func sleepersWith(marker string) int { return len(sleeperPids(marker)) }

// killSleepers ends every `sleep <marker>.N` process: daemons run in
// process groups of their own, so a failed test whose server is killed
// would otherwise leave them behind.
func killSleepers(marker string) {
	for _, pid := range sleeperPids(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func sleeperPids(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid := 0
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid <= 0 {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cl, []byte("sleep\x00"+marker+".")) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// dumpLines runs `syndicate dump PATTERN` and returns the lines it prints.
func dumpLines(t *testing.T, client, sock, pattern string) []string {
	t.Helper()
	out, err := exec.Command(client, "--admin", sock, "dump", pattern).Output()
	if err != nil {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestE2ERemovingAFileOf1000DaemonsStopsAll(t *testing.T) {
	const n = 1000
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	// A marker nobody else's sleep carries, so concurrent tests do not
	// count each other's processes.
	marker := fmt.Sprint(500000 + rand.IntN(400000))
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<require-service <daemon d%d>>\n<daemon d%d {argv: [\"sleep\" \"%s.%d\"]}>\n", i, i, marker, i)
	}
	writeFile(t, filepath.Join(cfg, "many.pr"), b.String())
	// Registered before start's own cleanup, so it runs after the server
	// has been killed and can restart nothing.
	t.Cleanup(func() { killSleepers(marker) })
	r := start(t, "-c", cfg)
	eventually(t, 120*time.Second, fmt.Sprintf("%d daemons to run", n), func() bool { return sleepersWith(marker) == n })

	require.NoError(t, os.Remove(filepath.Join(cfg, "many.pr")))
	eventually(t, 120*time.Second, "every daemon to stop", func() bool { return sleepersWith(marker) == 0 })
	require.Equal(t, 0, r.stop(t))
}

func TestE2EEditingAFileOf1000AssertionsLeavesTheNewVersion(t *testing.T) {
	client := buildClient(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "admin.sock")
	cfg := filepath.Join(dir, "config")
	facts := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "<fact %d>\n", i)
		}
		return b.String()
	}
	writeFile(t, filepath.Join(cfg, "facts.pr"), facts(0, 1000))
	r := start(t, "-c", cfg, "--admin-socket", sock)
	eventually(t, 30*time.Second, "1000 facts", func() bool { return len(dumpLines(t, client, sock, "<fact _>")) == 1000 })

	// The new version shares no fact with the old, so a left-behind
	// assertion cannot hide behind an identical new one.
	writeFile(t, filepath.Join(cfg, "facts.pr"), facts(1000, 2000))
	want := map[string]bool{}
	for i := 1000; i < 2000; i++ {
		want[fmt.Sprintf("<fact %d>", i)] = true
	}
	var got []string
	eventually(t, 30*time.Second, "exactly the new version's 1000 facts", func() bool {
		got = dumpLines(t, client, sock, "<fact _>")
		if len(got) != len(want) {
			return false
		}
		for _, l := range got {
			if !want[l] {
				return false
			}
		}
		return true
	})

	require.NoError(t, os.Remove(filepath.Join(cfg, "facts.pr")))
	eventually(t, 30*time.Second, "no facts once the file is gone", func() bool {
		out, err := exec.Command(client, "--admin", sock, "dump", "<fact _>").Output()
		return err == nil && strings.TrimSpace(string(out)) == ""
	})
	require.Equal(t, 0, r.stop(t))
}

func TestE2EStoppingAHandlerFacetOf1000AssertionsLeavesNone(t *testing.T) {
	client := buildClient(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "admin.sock")
	cfg := filepath.Join(dir, "config")
	var b strings.Builder
	b.WriteString("? <trigger> [\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  <inner %d>\n", i)
	}
	b.WriteString("]\n")
	writeFile(t, filepath.Join(cfg, "handler.pr"), b.String())
	writeFile(t, filepath.Join(cfg, "trigger.pr"), "<trigger>\n")
	r := start(t, "-c", cfg, "--admin-socket", sock)
	eventually(t, 30*time.Second, "1000 inner assertions", func() bool { return len(dumpLines(t, client, sock, "<inner _>")) == 1000 })

	// The trigger goes; the handler's facet stops and takes all 1000.
	require.NoError(t, os.Remove(filepath.Join(cfg, "trigger.pr")))
	eventually(t, 30*time.Second, "no inner assertion left", func() bool {
		out, err := exec.Command(client, "--admin", sock, "dump", "<inner _>").Output()
		return err == nil && strings.TrimSpace(string(out)) == ""
	})
	require.Equal(t, 0, r.stop(t))
}
