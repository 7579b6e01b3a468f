package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin/cmdline/cmdlinetest"
)

// Colours only on a terminal, and never with NO_COLOR; console format by
// default on a terminal, JSON elsewhere; service output follows both.
func TestColoursOnlyOnATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	_, tty := cmdlinetest.OpenPTY(t)
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

// The banner only on a terminal with console logs (issue 26: it went to
// stderr even with --log-format json, breaking `2>&1 | jq`).
func TestBannerOnlyOnAConsoleTerminal(t *testing.T) {
	_, tty := cmdlinetest.OpenPTY(t)
	require.True(t, showBanner(&options{}, tty))
	require.False(t, showBanner(&options{logFormat: "json"}, tty))
	require.False(t, showBanner(&options{noBanner: true}, tty))
	require.False(t, showBanner(&options{inferior: true}, tty))
	require.False(t, showBanner(&options{}, &bytes.Buffer{}))
	require.False(t, showBanner(&options{logFormat: "console"}, &bytes.Buffer{}))
}

// Durations in the server's log carry their unit (issue 26: took=313.179779,
// delay=8000).
func TestLogDurationsHaveUnits(t *testing.T) {
	var out bytes.Buffer
	log, err := newLogger(&options{logFormat: "json"}, &out)
	require.NoError(t, err)
	log.Info().Dur("took", 313*time.Millisecond).Dur("restartWindow", time.Minute).Msg("x")
	require.Contains(t, out.String(), `"took":"313ms"`)
	require.Contains(t, out.String(), `"restartWindow":"1m0s"`)
}
