package status

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
)

func TestCut(t *testing.T) {
	for _, c := range []struct {
		in     string
		n      int
		middle bool
		want   string
	}{
		{"short", 10, true, "short"},
		{`<config-watcher "/etc/x" {}>`, 12, true, `<confi…" {}>`},
		{"restart limit reached", 10, false, "restart l…"},
		{"abc", 1, true, "a"},
	} {
		require.Equal(t, c.want, cut(c.in, c.n, c.middle), "%q", c.in)
	}
}

// FOR is the time in the current state: the latest of the state change,
// the newest process's start and the last exit (issue 26: `started,ready
// 27s` one second after a crash).
func TestHeldIsTimeInCurrentState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	since := now.Add(-27 * time.Second)
	s := Service{Since: &since, Processes: []Process{{PID: 1, Since: now.Add(-time.Second)}}}
	require.Equal(t, "1s", s.held(now))
	exit := now.Add(-3 * time.Second)
	s = Service{Since: &since, ExitAt: &exit}
	require.Equal(t, "3s", s.held(now))
	require.Equal(t, "-", Service{}.held(now))
	require.Equal(t, "5h3m", ago(now, now.Add(-5*time.Hour-3*time.Minute-4*time.Second)))
	require.Equal(t, "2d1h", ago(now, now.Add(-49*time.Hour)))
}

// Rows never exceed the width; REASON moves under its row when it does
// not fit beside the rest.
func TestWriteTableFits(t *testing.T) {
	now := time.Now()
	svcs := []Service{
		{name: preserves.Rec("daemon", preserves.Symbol("web")), Name: "<daemon web>", Required: true, States: []string{"failed"},
			Reasons: []string{strings.Repeat("very long reason ", 10)}},
		{name: preserves.Rec("config-watcher", preserves.String(strings.Repeat("/long/path", 10))), States: []string{"ready"}},
	}
	var b strings.Builder
	WriteTable(&b, svcs, now, 80)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 4, b.String())
	for _, l := range lines {
		require.LessOrEqual(t, len([]rune(l)), 80, l)
	}
	require.True(t, strings.HasPrefix(lines[2], "  ↳ very long reason"), b.String())
	b.Reset()
	WriteTable(&b, svcs, now, 0)
	require.Len(t, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), 3, "no limit: one line per service")
}
