package index

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// recorder is a test Emitter: it issues handles, checks that retractions
// name live handles of the right observer, and logs every event.
type recorder struct {
	t      testing.TB
	next   uint64
	live   map[uint64]liveTuple
	events []event
	// reject, when set, plays an observer's attenuation.
	reject func(obs Observer, tuple preserves.Sequence) bool
}

type liveTuple struct {
	obs   Observer
	tuple string
}

type event struct {
	obs   Observer
	kind  byte // '+' assert, '-' retract, '!' message
	tuple string
}

func (e event) String() string { return fmt.Sprintf("%v%c%s", e.obs, e.kind, e.tuple) }

func newRecorder(t testing.TB) *recorder {
	return &recorder{t: t, live: map[uint64]liveTuple{}}
}

func text(v preserves.Value) string { return preserves.FormatText(preserves.Strip(v)) }

func (r *recorder) AssertTo(obs Observer, caps preserves.Sequence) (uint64, bool) {
	if caps == nil {
		r.t.Fatalf("AssertTo(%v): nil captures", obs)
	}
	if r.reject != nil && r.reject(obs, caps) {
		return 0, false
	}
	r.next++
	// obs may already hold an equal tuple through another registration;
	// the oracle compares event multisets, which counts those.
	tu := text(caps)
	r.live[r.next] = liveTuple{obs, tu}
	r.events = append(r.events, event{obs, '+', tu})
	return r.next, true
}

func (r *recorder) RetractFrom(obs Observer, h uint64) {
	l, ok := r.live[h]
	if !ok {
		r.t.Fatalf("RetractFrom(%v, %d): handle not live", obs, h)
	}
	if l.obs != obs {
		r.t.Fatalf("RetractFrom(%v, %d): handle belongs to %v", obs, h, l.obs)
	}
	delete(r.live, h)
	r.events = append(r.events, event{obs, '-', l.tuple})
}

func (r *recorder) SendTo(obs Observer, v preserves.Value) {
	caps, ok := v.(preserves.Sequence)
	if !ok || caps == nil {
		r.t.Fatalf("SendTo(%v): captures %#v, want a non-nil Sequence", obs, v)
	}
	r.events = append(r.events, event{obs, '!', text(caps)})
}

// take returns the events logged since the last call, sorted so that the
// order between observers (and, within one operation, between one
// observer's events) does not matter.
func (r *recorder) take() []string {
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.String()
	}
	r.events = r.events[:0]
	sort.Strings(out)
	return out
}

// holdings lists, per observer, the tuples it currently holds.
func (r *recorder) holdings() []string {
	var out []string
	for _, l := range r.live {
		out = append(out, fmt.Sprintf("%v%s", l.obs, l.tuple))
	}
	sort.Strings(out)
	return out
}

func parse(t testing.TB, src string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(src)
	if err != nil {
		t.Fatalf("ParseText(%q): %v", src, err)
	}
	return v
}

func pat(t testing.TB, src string) pattern.Pattern {
	t.Helper()
	p, err := pattern.FromValue(parse(t, src))
	if err != nil {
		t.Fatalf("pattern %s: %v", src, err)
	}
	return p
}

func expect(t *testing.T, r *recorder, what string, want ...string) {
	t.Helper()
	got := r.take()
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: events %q, want %q", what, got, want)
	}
}
