//go:build race

package dataspace

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Under -race, Activate from inside a turn is a crash of the calling
// actor that says what to use instead, not a deadlock: the paced Activate
// on any actor, ActivateNow on the turn's own actor. ActivateNow on
// another actor stays allowed (the package doc's list).
func TestActivateInsideTurnIsCaught(t *testing.T) {
	s := newSys(t)
	other, _, _ := client(t, s, "other")
	cases := []struct {
		name string
		call func(t *Turn)
		want string // "" = allowed
	}{
		{"paced Activate of another actor", func(t *Turn) { other.Activate(func(*Turn) error { return nil }) }, "may wait for debt"},
		{"ActivateNow of itself", func(t *Turn) { t.FacetRef().ActivateNow(func(*Turn) error { return nil }) }, "would deadlock"},
		{"ActivateNow of another actor", func(t *Turn) { other.ActivateNow(func(*Turn) error { return nil }) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := s.Spawn("caller", func(t *Turn) error {
				c.call(t)
				return nil
			})
			select {
			case <-a.Done():
			case <-time.After(patience):
				t.Fatal("the calling actor neither ended nor crashed (a deadlock)")
			}
			if c.want == "" {
				require.NoError(t, a.Err())
				return
			}
			var pe *PanicError
			require.True(t, errors.As(a.Err(), &pe), "%v", a.Err())
			ae, ok := pe.Value.(*ActivateInTurnError)
			require.True(t, ok, "%v", pe.Value)
			require.Contains(t, ae.Error(), c.want)
		})
	}
}
