package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/transport"
)

func TestFlagsReferenceSpellings(t *testing.T) {
	o, err := parseFlags([]string{"-c", "a", "--config", "b", "-p", "8001", "--port=9001",
		"-s", "/tmp/s1", "--socket", "/tmp/s2", "--inferior", "--debt-reporter", "--no-banner",
		"-t", "trace.pr", "--control"}, &bytes.Buffer{})
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
		_, err := parseFlags(args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
}

func TestFlagsCheckTakesFiles(t *testing.T) {
	o, err := parseFlags([]string{"--check", "-c", "etc", "x.pr", "y.pr"}, &bytes.Buffer{})
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
	o, err := parseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "/tmp/from-env.sock", o.adminSocket)
	o, err = parseFlags([]string{"--admin", "/tmp/alias.sock"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "/tmp/alias.sock", o.adminSocket)
	o, err = parseFlags([]string{"--admin-socket", "/tmp/flag.sock"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "/tmp/flag.sock", o.adminSocket)
}
