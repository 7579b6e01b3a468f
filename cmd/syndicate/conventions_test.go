package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/cmdline/cmdlinetest"
)

var update = flag.Bool("update", false, "rewrite golden files (man pages, pictures)")

// Every command, at every depth, answers -h with its help on stdout and
// status 0 (issue 26: `status -h`, `logs -h` and `bench reqrep -h` printed
// nothing).
func TestHelpOnEveryCommand(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		code, out, errs := cliRun(t, append(path, "-h")...)
		require.Equal(t, 0, code, "%v: %s", path, errs)
		require.Contains(t, out, "Usage:\n  "+c.CommandPath(), "%v", path)
		about := c.Long
		if about == "" {
			about = c.Short
		}
		require.True(t, strings.HasPrefix(out, about), "%v: %s", path, out)
		n++
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk((&cli{}).root())
	require.Greater(t, n, 20)
}

func TestVersion(t *testing.T) {
	code, out, _ := cliRun(t, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^syndicate \S+.* go1\.\S+\n$`, out)
}

// The spellings Go's flag package accepted keep working: one dash before
// a long flag, and a flag after the arguments.
func TestSingleDashSpellings(t *testing.T) {
	code, out, errs := cliRun(t, "-timeout=1s", "fmt", "-check")
	require.Equal(t, 0, code, errs)
	require.Empty(t, out)
	code, _, errs = cliRun(t, "-admin-socket", "/nonexistent/admin.sock", "status", "-json")
	require.Equal(t, 1, code)
	require.Equal(t, "syndicate: server not running (no admin socket /nonexistent/admin.sock)\n", errs)
	code, _, errs = cliRun(t, "-admin", "/nonexistent/admin.sock", "logs", "web", "-f", "-n", "3")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "server not running")
}

// The man pages in docs/man/syndicate are generated from the command
// table.
func TestManPages(t *testing.T) {
	cmdlinetest.ManPages(t, (&cli{}).root(), "../../docs/man/syndicate", *update)
}

// Shell completions offer the running server's services: bare words and
// whole names, without built-ins.
func TestCompletionOffersServices(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	s.assert(t, "<run-service <daemon web>>")
	s.assert(t, "<run-service <builtin logger>>")
	for _, cmd := range [][]string{{"status"}, {"logs"}, {"restart"}, {"analyze", "critical-chain"}} {
		code, out, errs := cliRun(t, append(append([]string{"--admin", s.path, "__complete"}, cmd...), "")...)
		require.Equal(t, 0, code, errs)
		require.Equal(t, "web\n<daemon web>\n:4\n", out, "%v", cmd)
	}
	code, out, _ := cliRun(t, "completion", "bash")
	require.Equal(t, 0, code)
	require.Contains(t, out, "bash completion V2 for syndicate")
}

// fmt takes directories, as check does (issue 26: `fmt etc` said `read
// etc: is a directory`).
func TestFmtTakesDirectories(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "services")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "a.pr"), []byte("<a>   <b>\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "notes.txt"), []byte("<a>   <b>\n"), 0o644))
	code, out, errs := cliRun(t, "fmt", "-l", dir)
	require.Equal(t, 0, code, errs)
	require.Equal(t, filepath.Join(sub, "a.pr")+"\n", out)
	code, _, errs = cliRun(t, "fmt", "-w", dir)
	require.Equal(t, 0, code, errs)
	b, err := os.ReadFile(filepath.Join(sub, "a.pr"))
	require.NoError(t, err)
	require.Equal(t, "<a>\n<b>\n", string(b))
	code, out, _ = cliRun(t, "fmt", "--check", dir)
	require.Equal(t, 0, code, out)
}
