package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/services/admin/cmdline/cmdlinetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestFlagsReferenceSpellings(t *testing.T) {
	o, err := parseFlags([]string{"-c", "a", "--config", "b", "-p", "8001", "--port=9001",
		"-s", "/tmp/s1", "--socket", "/tmp/s2", "--inferior", "--debt-reporter", "--no-banner",
		"-t", "trace.pr", "--control"})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, o.configs)
	require.Equal(t, []transport.Address{transport.TCPAddr("0.0.0.0", 8001), transport.TCPAddr("0.0.0.0", 9001)}, o.ports)
	require.Equal(t, []transport.Address{transport.UnixAddr("/tmp/s1"), transport.UnixAddr("/tmp/s2")}, o.sockets)
	require.True(t, o.inferior && o.debtReporter && o.noBanner && o.control)
	require.Equal(t, "trace.pr", o.traceFile)
}

func TestFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-p", "70000"},
		{"-p", "http"},
		{"--log-format", "xml"},
		{"stray.pr"},
		{"--no-such-flag"},
	} {
		_, err := parseFlags(args)
		require.Error(t, err, "%v", args)
	}
}

func TestFlagsCheckTakesFiles(t *testing.T) {
	o, err := parseFlags([]string{"--check", "-c", "etc", "x.pr", "y.pr"})
	require.NoError(t, err)
	require.True(t, o.check)
	require.Equal(t, []string{"x.pr", "y.pr"}, o.checkFiles)
}

// --check prints warnings with their place and exits 0 when there are only
// warnings.
func TestCheckWarningsDoNotFail(t *testing.T) {
	f := filepath.Join(t.TempDir(), "net.pr")
	require.NoError(t, os.WriteFile(f, []byte("let ?n = <* $config [<reject <not <rec Observe>>>]>\n"), 0o644))
	var out, errb bytes.Buffer
	require.Equal(t, 0, runCheck(&options{checkFiles: []string{f}}, &out, &errb))
	require.Contains(t, out.String(), f+":1:30: warning: <not <rec Observe>> is a literal here")
	require.Equal(t, "syndicate-server: 1 warning(s)\n", errb.String())
}

func TestFlagsAdminSocket(t *testing.T) {
	t.Setenv("SYNDICATE_ADMIN_SOCKET", "/tmp/from-env.sock")
	o, err := parseFlags(nil)
	require.NoError(t, err)
	require.Equal(t, "/tmp/from-env.sock", o.adminSocket)
	o, err = parseFlags([]string{"--admin", "/tmp/alias.sock"})
	require.NoError(t, err)
	require.Equal(t, "/tmp/alias.sock", o.adminSocket)
	o, err = parseFlags([]string{"--admin-socket", "/tmp/flag.sock"})
	require.NoError(t, err)
	require.Equal(t, "/tmp/flag.sock", o.adminSocket)
}

// The spellings Go's flag package accepted keep working (one dash before a
// long flag); -h and --version (and clap's -V) answer on stdout with
// status 0.
func TestFlagsConventions(t *testing.T) {
	o, err := parseFlags([]string{"-config", "a", "-port=9001", "-no-banner", "-log-format", "json"})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, o.configs)
	require.Equal(t, []transport.Address{transport.TCPAddr("0.0.0.0", 9001)}, o.ports)
	require.True(t, o.noBanner)
	require.Equal(t, "json", o.logFormat)
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), errb.String())
		require.Contains(t, out.String(), "-c, --config PATH")
		require.Contains(t, out.String(), "-t, --trace-file PATH")
	}
	for _, args := range [][]string{{"--version"}, {"-V"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), errb.String())
		require.Regexp(t, `^syndicate-server \S+.* go1\.\S+\n$`, out.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"--no-such-flag"}, &out, &errb))
	require.Equal(t, "syndicate-server: unknown flag: --no-such-flag\n", errb.String())
}

// The man page in docs/man/syndicate-server is generated from the flags.
func TestManPage(t *testing.T) {
	cmdlinetest.ManPages(t, command(&options{}, nil), "../../docs/man/syndicate-server", *update)
}
