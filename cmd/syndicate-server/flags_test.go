package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlagsReferenceSpellings(t *testing.T) {
	o, err := parseFlags([]string{"-c", "a", "--config", "b", "-p", "8001", "--port=9001",
		"-s", "/tmp/s1", "--socket", "/tmp/s2", "--inferior", "--debt-reporter", "--no-banner",
		"-t", "trace.pr", "--control"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, o.configs)
	require.Equal(t, []uint16{8001, 9001}, o.ports)
	require.Equal(t, []string{"/tmp/s1", "/tmp/s2"}, o.sockets)
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
