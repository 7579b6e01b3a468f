package analyze

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
)

func TestPictureOf(t *testing.T) {
	p := PictureOf(sampleBoot(t))
	require.InDelta(t, 1.5, p.Now, 1e-9)
	byName := map[string]PictureUnit{}
	var order []string
	for _, u := range p.Units {
		byName[u.Name] = u
		order = append(order, u.Name)
	}
	require.Equal(t, []string{"<daemon app>", "<milestone services>", "<daemon db>", "<daemon hello>", "<daemon heartbeat>"}, order, "timeline order: by start")
	hb := byName["<daemon heartbeat>"]
	require.Equal(t, 2, hb.Layer)
	require.Equal(t, "ready", hb.BarState)
	require.InDelta(t, 1.201, *hb.Start, 1e-9)
	require.InDelta(t, 1.210, *hb.Up, 1e-9)
	require.Equal(t, []Dep{{Key: "<daemon hello>", Awaits: "complete"}}, hb.Deps)
	db := byName["<daemon db>"]
	require.Equal(t, "failed", db.BarState)
	require.Nil(t, db.Up)
	require.InDelta(t, 0.3, db.End, 1e-9, "a failed bar ends at the failure")
	app := byName["<daemon app>"]
	require.InDelta(t, 0.001, *app.Start, 1e-9, "never run: its bar starts when it was requested")
	require.InDelta(t, 1.5, app.End, 1e-9, "a bar still going ends now")
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.Contains(t, string(b), `"deps":[{"key":"\u003cdaemon hello\u003e","awaits":"complete"}]`)
}

func TestFromValues(t *testing.T) {
	v := func(text string) preserves.Value { return mustName(t, text) }
	_, err := FromValues(nil, nil, nil, ms(5))
	require.ErrorIs(t, err, ErrNoHistory)
	b, err := FromValues([]preserves.Value{v(`<history-origin "2026-01-01T00:00:00Z">`)},
		[]preserves.Value{v(`<service-history <daemon a> [<asserted "2026-01-01T00:00:00.001Z" require-service> <asserted "2026-01-01T00:00:00.002Z" run-service> <asserted "2026-01-01T00:00:00.004Z" <service-state ready>>] 0>`)},
		[][]preserves.Value{{v(`<daemon a>`), v(`<service-state <daemon b> ready>`)}}, ms(5))
	require.NoError(t, err)
	require.Equal(t, t0, b.Origin)
	require.Equal(t, ms(4), b.Units["<daemon a>"].Up)
	require.Equal(t, []Dep{{Key: "<daemon b>", Awaits: "ready"}}, b.Units["<daemon a>"].Deps)
}
