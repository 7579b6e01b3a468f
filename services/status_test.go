package services

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
)

// TestInfoRoundTrips: every key of the info dictionary is written as the
// schema (syndicateGo.prs) says and read back; zero fields are left out.
func TestInfoRoundTrips(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 4, 5, 600, time.UTC)
	i := Info{Since: at, Restarts: 3, Recent: 1, Exit: "exit status: 2", ExitAt: at.Add(time.Second),
		Phase: PhaseBackoff, Reasons: []string{"a", "b"}, Pos: "x.pr:1:2"}
	v := i.ToValue()
	require.Equal(t, `{exit: "exit status: 2", exit-at: "2026-11-25T03:04:06.0000006Z", phase: backoff, pos: "x.pr:1:2", reason: ["a" "b"], recent: 1, restarts: 3, since: "2026-11-25T03:04:05.0000006Z"}`,
		preserves.FormatText(v))
	require.Equal(t, i, ParseInfo(v))
	require.Equal(t, "{}", preserves.FormatText(Info{}.ToValue()))
	require.Equal(t, `<service-info <daemon x> {restarts: 1}>`, preserves.FormatText(ServiceInfo(preserves.Rec("daemon", preserves.Symbol("x")), Info{Restarts: 1})))
}

// TestParseInfoIsLenient: what an older or newer server may write is read
// as far as it makes sense: missing keys, unknown keys, ill-typed values
// (ignored), a single reason string, and no dictionary at all.
func TestParseInfoIsLenient(t *testing.T) {
	for src, want := range map[string]Info{
		`{}`:                          {},
		`{restarts: 2 future: [1 2]}`: {Restarts: 2},
		`{restarts: "2" recent: 1 since: 5 phase: "x" pos: 7 exit: gone}`: {Recent: 1},
		`{reason: "only one"}`:                    {Reasons: []string{"only one"}},
		`{reason: [1 "mixed"]}`:                   {},
		`{since: "not a time" exit: "signal: 9"}`: {Exit: "signal: 9"},
		`{restarts: 100000000000000000000}`:       {},
		`[restarts 2]`:                            {},
		`<service-info x {}>`:                     {},
	} {
		v, err := preserves.ParseText(src)
		require.NoError(t, err)
		require.Equal(t, want, ParseInfo(v), src)
	}
}
