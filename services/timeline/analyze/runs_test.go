package analyze

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/timeline"
)

// Issue 27: analyze includes scheduled runs. A scheduled one-shot is
// ready once armed, so its history shows no run; its service-info's
// last and next runs are joined to it, listed after blame's table and
// in the JSON.
func TestAnalyzeScheduledRuns(t *testing.T) {
	t.Setenv("TZ", "UTC")
	b := sampleBoot(t)
	b.Now = t0.Add(time.Hour)
	u := UnitOf(mustName(t, "<daemon backup>"), []timeline.Change{change(1, "+require"), change(2, "+run"), change(3, "+started"), change(4, "+ready")}, 0)
	b.Units[u.Key] = u
	last := t0.Add(59 * time.Minute)
	info := services.Info{LastRun: last, Exit: "exit status: 0", ExitAt: last.Add(1500 * time.Millisecond),
		NextRun: t0.Add(61 * time.Minute), Skipped: 2}
	b.addInfo(mustName(t, "<daemon backup>"), info.ToValue())
	// A service without a schedule, and one without a history, are left alone.
	b.addInfo(mustName(t, "<daemon db>"), services.Info{Exit: "exit status: 1", ExitAt: t0}.ToValue())
	b.addInfo(mustName(t, "<daemon ghost>"), info.ToValue())

	require.Len(t, Scheduled(b), 1)
	var out strings.Builder
	WriteBlame(&out, b)
	require.True(t, strings.HasSuffix(out.String(), "\nscheduled runs:\n"+
		"  <daemon backup>: last run 00:59:00 (1m0s ago), took 1.500s, exit status: 0; next run 01:01:00 (in 1m0s); 2 skipped\n"), out.String())

	j, err := json.Marshal(b.JSONOf(b.Units[u.Key]))
	require.NoError(t, err)
	require.Contains(t, string(j), `"scheduledRuns":{"lastRun":"2026-01-01T00:59:00Z","lastRunEnded":"2026-01-01T00:59:01.5Z","lastExit":"exit status: 0","nextRun":"2026-01-01T01:01:00Z","skippedRuns":2}`)

	// While a run goes on, its end is not the previous run's.
	b.addInfo(mustName(t, "<daemon backup>"), services.Info{LastRun: last, Exit: "exit status: 0", ExitAt: last.Add(-time.Minute), NextRun: t0.Add(61 * time.Minute)}.ToValue())
	require.Equal(t, "last run 00:59:00 (1m0s ago), running; next run 01:01:00 (in 1m0s)", b.Units[u.Key].Runs.describe(b.Now))
}
