package analyze

import (
	"time"

	"github.com/syndicate-go/syndicate/preserves"
)

// PictureUnit is one service as the pictures draw it (`analyze plot` and
// `graph`, and the live view of `syndicate ui`): times in seconds since
// the history origin, nil when it never happened.
type PictureUnit struct {
	Key       string   `json:"key"`
	Name      string   `json:"name"`
	State     string   `json:"state"`
	BarState  string   `json:"barState"` // the colour: see barState
	Requested *float64 `json:"requested"`
	Start     *float64 `json:"start"`
	Up        *float64 `json:"up"`
	Failed    *float64 `json:"failed"`
	End       float64  `json:"end"`   // where its bar ends (up, failed or now)
	Layer     int      `json:"layer"` // its column in the graph
	Deps      []Dep    `json:"deps"`
}

// Picture is the boot as the pictures draw it, in timeline order.
type Picture struct {
	Now   float64       `json:"now"`
	Units []PictureUnit `json:"units"`
}

// PictureOf lays out b.
func PictureOf(b *Boot) Picture {
	at := func(t time.Time) *float64 {
		if t.IsZero() {
			return nil
		}
		f := b.since(t).Seconds()
		return &f
	}
	lay := layers(b)
	p := Picture{Now: b.since(b.Now).Seconds(), Units: []PictureUnit{}}
	for _, u := range b.sorted() {
		deps := append([]Dep{}, u.Deps...)
		p.Units = append(p.Units, PictureUnit{Key: u.Key, Name: u.Name, State: u.State, BarState: u.barState(),
			Requested: at(u.Requested), Start: at(u.start()), Up: at(u.Up), Failed: at(u.Failed),
			End: b.since(u.end(b.Now)).Seconds(), Layer: lay[u.Key], Deps: deps})
	}
	return p
}

// FromValues analyses assertions a client keeps itself (the live view,
// which also sees them go): `<history-origin …>` and `<service-history …>`
// records, and the [NAME, AWAITED] of each `<depends-on …>`.
func FromValues(origins, hists []preserves.Value, deps [][]preserves.Value, now time.Time) (*Boot, error) {
	c := Collector{origins: origins, hists: hists, deps: deps}
	return c.Boot(now)
}
