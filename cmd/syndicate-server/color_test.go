package main

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY returns the terminal side of a fresh pseudo-terminal, or skips.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// Colours only on a terminal, and never with NO_COLOR; console format by
// default on a terminal, JSON elsewhere; service output follows both.
func TestColoursOnlyOnATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	tty := openPTY(t)
	file, err := os.CreateTemp(t.TempDir(), "log")
	require.NoError(t, err)
	defer file.Close()

	s := &server{opts: &options{serviceOutput: true}}
	lo := s.loggerOptions(tty)
	require.True(t, lo.Color && !lo.JSON, "a terminal: console lines, coloured")
	lo = s.loggerOptions(file)
	require.True(t, !lo.Color && lo.JSON, "a file: JSON")
	lo = s.loggerOptions(&bytes.Buffer{})
	require.True(t, !lo.Color && lo.JSON, "a pipe or buffer: JSON")

	s.opts.logFormat = "console"
	lo = s.loggerOptions(file)
	require.True(t, !lo.Color && !lo.JSON, "forced console into a file: no colours")

	t.Setenv("NO_COLOR", "1")
	lo = s.loggerOptions(tty)
	require.False(t, lo.Color, "NO_COLOR")

	s.opts.serviceOutput = false
	require.Nil(t, s.loggerOptions(tty).Console, "--service-output=false")
}
