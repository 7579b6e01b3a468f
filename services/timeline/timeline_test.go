package timeline

import (
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// fakeNow is a clock that advances one second per reading, so every
// change has a distinct, predictable time.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(time.Second)
	return f.t
}

// rig boots the recorder in a fresh system and mirrors the histories it
// asserts.
type rig struct {
	driver dataspace.FacetRef
	cfg    *dataspace.Ref
	warns  *testutil.Buffer

	mu      sync.Mutex
	hist    map[dataspace.Handle]preserves.Value
	origins int
}

type histMirror struct {
	dataspace.BaseEntity
	r *rig
}

func (m *histMirror) Assert(_ *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	caps := preserves.Unwrap(v).(preserves.Sequence)
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if _, ok := ParseOrigin(caps[0]); ok {
		m.r.origins++
		return nil
	}
	m.r.hist[h] = caps[0]
	return nil
}

func (m *histMirror) Retract(_ *dataspace.Turn, h dataspace.Handle) error {
	m.r.mu.Lock()
	delete(m.r.hist, h)
	m.r.mu.Unlock()
	return nil
}

func newRig(t *testing.T, opts Options) *rig {
	t.Helper()
	sys := dataspacetest.NewSystem(t, dataspace.Options{})
	r := &rig{hist: map[dataspace.Handle]preserves.Value{}, warns: &testutil.Buffer{}}
	clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if opts.Now == nil {
		opts.Now = clock.now
	}
	ready := make(chan struct{})
	sys.Spawn("rig", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		r.cfg = t.Create(dataspace.NewDataspace())
		env := services.Env{Config: r.cfg, Logger: zerolog.New(r.warns)}
		BootWith(t, env, opts)
		m := t.Create(&histMirror{r: r})
		for _, p := range []pattern.Pattern{
			pattern.Rec(syndicatego.LabelServiceHistory, pattern.Discard{}, pattern.Discard{}, pattern.Discard{}),
			pattern.Rec(syndicatego.LabelHistoryOrigin, pattern.Discard{}),
		} {
			t.Assert(r.cfg, dataspace.Observe(pattern.Bind{Pattern: p}, m))
		}
		r.driver = t.FacetRef()
		close(ready)
		return nil
	})
	<-ready
	return r
}

func (r *rig) assert(v preserves.Value) func() {
	var h dataspace.Handle
	r.driver.Activate(func(t *dataspace.Turn) error { h = t.Assert(r.cfg, v); return nil })
	return func() { r.driver.Activate(func(t *dataspace.Turn) error { t.Retract(h); return nil }) }
}

// history returns the changes of name, rendered as "+FACT@SECONDS".
func (r *rig) history(name preserves.Value) (changes []string, dropped int, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.hist {
		nm, cs, d, ok := ParseHistory(v)
		if !ok || !preserves.Equal(nm, name) {
			continue
		}
		n++
		dropped = d
		changes = nil
		for _, c := range cs {
			sign := "-"
			if c.Asserted {
				sign = "+"
			}
			changes = append(changes, sign+preserves.FormatText(c.Fact)+"@"+c.Time.Format("05"))
		}
	}
	return changes, dropped, n
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (r *rig) waitHistory(t *testing.T, name preserves.Value, want ...string) {
	t.Helper()
	var got []string
	testutil.WaitFor(t, "history "+preserves.FormatText(name), func() bool {
		var n int
		got, _, n = r.history(name)
		return n == 1 && equal(got, want)
	})
}

// Every change of every fact is recorded in order with its time, a fact
// asserted twice counts once, and the history outlives the facts.
func TestRecordsEveryChange(t *testing.T) {
	r := newRig(t, Options{})
	name := preserves.Rec("daemon", preserves.Symbol("db"))
	testutil.WaitFor(t, "origin", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.origins == 1 })
	// As a script asserts it: plain, its positions kept aside.
	req, err := preserves.ReadAllText([]byte("<require-service <daemon db>>"), preserves.TextOptions{File: "test.pr", Positions: true})
	if err != nil {
		t.Fatal(err)
	}
	unreq := r.assert(preserves.StripRemembering(req[0]))
	r.waitHistory(t, name, "+require-service@02")
	unrun := r.assert(services.RunService(name))
	r.waitHistory(t, name, "+require-service@02", "+run-service@03")
	started := r.assert(services.ServiceState(name, services.StateStarted))
	ready1 := r.assert(services.ServiceState(name, services.StateReady))
	ready2 := r.assert(services.ServiceState(name, services.StateReady)) // same fact, second party
	r.waitHistory(t, name, "+require-service@02", "+run-service@03", "+<service-state started>@04", "+<service-state ready>@05")
	ready1()
	ready2()
	r.waitHistory(t, name, "+require-service@02", "+run-service@03", "+<service-state started>@04", "+<service-state ready>@05",
		"-<service-state ready>@06")
	started()
	unrun()
	unreq()
	r.waitHistory(t, name, "+require-service@02", "+run-service@03", "+<service-state started>@04", "+<service-state ready>@05",
		"-<service-state ready>@06", "-<service-state started>@07", "-run-service@08", "-require-service@09")
}

// A crash loop keeps the boot record and the latest changes, and says how
// many it dropped in between.
func TestBoundedPerService(t *testing.T) {
	r := newRig(t, Options{Head: 2, Tail: 3})
	name := preserves.Rec("daemon", preserves.Symbol("loop"))
	for i := 0; i < 5; i++ {
		r.assert(services.ServiceState(name, services.StateStarted))()
	}
	// 10 changes at seconds 02..11: head 02,03; tail 09,10,11; 5 dropped.
	testutil.WaitFor(t, "bounded history", func() bool {
		got, dropped, n := r.history(name)
		return n == 1 && dropped == 5 && equal(got, []string{
			"+<service-state started>@02", "-<service-state started>@03",
			"-<service-state started>@09", "+<service-state started>@10", "-<service-state started>@11"})
	})
}

// The table of services is bounded: an idle service's history makes room
// for a new one; when every service is live, new ones are not recorded and
// a warning says so once.
func TestBoundedServices(t *testing.T) {
	r := newRig(t, Options{MaxServices: 2})
	a, b, c, d := preserves.Symbol("a"), preserves.Symbol("b"), preserves.Symbol("c"), preserves.Symbol("d")
	r.assert(services.RequireService(a))() // a is idle afterwards
	retractB := r.assert(services.RequireService(b))
	r.waitHistory(t, b, "+require-service@04")
	r.assert(services.RequireService(c)) // evicts a
	testutil.WaitFor(t, "a evicted, c recorded", func() bool {
		_, _, na := r.history(a)
		_, _, nc := r.history(c)
		return na == 0 && nc == 1
	})
	r.assert(services.RequireService(d)) // b and c are live: d is not recorded
	testutil.WaitFor(t, "warning", func() bool { return r.warns.Has("history table full") })
	if _, _, n := r.history(d); n != 0 {
		t.Errorf("d recorded beyond MaxServices")
	}
	// Once b holds no fact, it makes room again (the full table is not
	// taken for full for good).
	retractB()
	e := preserves.Symbol("e")
	r.assert(services.RequireService(e))
	testutil.WaitFor(t, "b evicted, e recorded", func() bool {
		_, _, nb := r.history(b)
		_, _, ne := r.history(e)
		return nb == 0 && ne == 1
	})
}

// Histories read back exactly what was recorded.
func TestHistoryRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC)
	in := []Change{{Time: at, Asserted: true, Fact: FactRequire},
		{Time: at.Add(time.Millisecond), Asserted: false, Fact: preserves.Rec("service-state", preserves.Symbol("ready"))}}
	v, err := preserves.ParseText(preserves.FormatText(HistoryRecord(preserves.Symbol("x"), in, 7)))
	if err != nil {
		t.Fatal(err)
	}
	name, out, dropped, ok := ParseHistory(v)
	if !ok || !preserves.Equal(name, preserves.Symbol("x")) || dropped != 7 || len(out) != 2 {
		t.Fatalf("got %v %v %d %v", name, out, dropped, ok)
	}
	for i := range in {
		if !out[i].Time.Equal(in[i].Time) || out[i].Asserted != in[i].Asserted || !preserves.Equal(out[i].Fact, in[i].Fact) {
			t.Errorf("change %d: %+v, want %+v", i, out[i], in[i])
		}
	}
	if s, ok := StateOf(out[1].Fact); !ok || s != preserves.Symbol("ready") {
		t.Errorf("StateOf = %v %v", s, ok)
	}
}

// A reader skips the changes it cannot read (a newer server's, a bad
// time) and rejects what is not a history at all.
func TestParseHistoryIsLenient(t *testing.T) {
	v, err := preserves.ParseText(`<service-history x [<asserted "2026-03-04T05:06:07Z" run-service> <renamed "2026-03-04T05:06:08Z" y> <retracted "yesterday" run-service> 5] 2>`)
	if err != nil {
		t.Fatal(err)
	}
	name, out, dropped, ok := ParseHistory(v)
	if !ok || !preserves.Equal(name, preserves.Symbol("x")) || dropped != 2 || len(out) != 1 || !out[0].Asserted || out[0].Fact != FactRun {
		t.Fatalf("got %v %+v %d %v", name, out, dropped, ok)
	}
	for _, src := range []string{`<service-history x [] many>`, `<service-history x>`, `<history-origin "2026-03-04T05:06:07Z">`} {
		v, _ := preserves.ParseText(src)
		if _, _, _, ok := ParseHistory(v); ok {
			t.Errorf("%s read as a history", src)
		}
	}
	if _, ok := ParseOrigin(preserves.Rec("history-origin", preserves.String("soon"))); ok {
		t.Error("an origin that is no time was read")
	}
}
