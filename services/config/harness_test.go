package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// recorder observes every assertion in the config dataspace and keeps a
// history of what appeared and disappeared, numbered by the recorder's turn,
// so tests can tell whether two assertions arrived together.
type recorder struct {
	dataspace.BaseEntity

	mu      sync.Mutex
	handles map[dataspace.Handle]string
	count   map[string]int
	events  []recEvent
	turn    int
	inTurn  bool

	notify chan string // if set, every new assertion's text (never blocks)
}

type recEvent struct {
	add  bool
	v    string
	turn int
	at   time.Time
}

func (r *recorder) mark(t *dataspace.Turn) int {
	// Called with r.mu held. A pre-commit action ends the turn's group.
	if !r.inTurn {
		r.inTurn = true
		r.turn++
		t.PreCommit(func(*dataspace.Turn) error {
			r.mu.Lock()
			r.inTurn = false
			r.mu.Unlock()
			return nil
		})
	}
	return r.turn
}

func (r *recorder) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	caps, ok := preserves.Unwrap(v).(preserves.Sequence)
	if !ok || len(caps) != 1 {
		return nil
	}
	s := preserves.FormatText(preserves.Strip(caps[0]))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handles[h] = s
	r.count[s]++
	r.events = append(r.events, recEvent{true, s, r.mark(t), time.Now()})
	if r.notify != nil {
		select {
		case r.notify <- s:
		default:
		}
	}
	return nil
}

func (r *recorder) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.handles[h]
	if !ok {
		return nil
	}
	delete(r.handles, h)
	if r.count[s]--; r.count[s] == 0 {
		delete(r.count, s)
	}
	r.events = append(r.events, recEvent{false, s, r.mark(t), time.Now()})
	return nil
}

// world is a running actor system with a config dataspace, the config
// watcher service booted in it, and a recorder of everything asserted.
type world struct {
	t    testing.TB
	sys  *dataspace.System
	cfg  *dataspace.Ref
	rec  *recorder
	logs *testutil.Buffer
	fr   dataspace.FacetRef
}

// testOptions are fast restart delays for tests.
func testOptions() Options {
	return Options{Supervise: services.SuperviseOptions{
		Delay:   10 * time.Millisecond,
		Backoff: 50 * time.Millisecond,
	}}
}

func newWorld(t testing.TB, opts Options) *world {
	t.Helper()
	logs := &testutil.Buffer{}
	log := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t)))
	if _, bench := t.(*testing.B); bench {
		log = zerolog.New(logs).Level(zerolog.WarnLevel)
	}
	w := &world{t: t, logs: logs, rec: &recorder{handles: map[dataspace.Handle]string{}, count: map[string]int{}}}
	w.sys = dataspace.NewSystem(dataspace.Options{Logger: log})
	booted := make(chan error, 1)
	w.sys.Spawn("test", func(t *dataspace.Turn) error {
		w.cfg = t.Create(dataspace.NewDataspace())
		t.Assert(w.cfg, dataspace.Observe(pattern.Bind{Pattern: pattern.Discard{}}, t.Create(w.rec)))
		w.fr = t.FacetRef()
		env := services.Env{Config: w.cfg, Logger: log}
		// The framework's dependency tracker turns require-service into
		// run-service, as in the server.
		if err := services.Boot(t, env); err != nil {
			booted <- err
			return err
		}
		err := BootWith(t, env, opts)
		booted <- err
		return err
	})
	if err := <-booted; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		checkNoLeak(t)
	})
	return w
}

// do runs fn as a turn of the test actor.
func (w *world) do(fn func(t *dataspace.Turn)) {
	w.t.Helper()
	if !w.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil }) {
		w.t.Fatal("test actor is dead")
	}
}

func watcherName(path string, env *preserves.Dictionary) preserves.Value {
	if env == nil {
		env = preserves.NewDictionary()
	}
	return preserves.Rec("config-watcher", preserves.String(path), env)
}

// run asserts <run-service <config-watcher PATH ENV>> and returns its handle.
func (w *world) run(name preserves.Value) dataspace.Handle {
	var h dataspace.Handle
	w.do(func(t *dataspace.Turn) { h = t.Assert(w.cfg, preserves.Rec("run-service", name)) })
	return h
}

func stateText(name preserves.Value, st string) string {
	return preserves.FormatText(services.ServiceState(name, preserves.Symbol(st)))
}

func (w *world) has(v string) bool {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	return w.rec.count[v] > 0
}

func (w *world) waitHas(v string) {
	w.t.Helper()
	eventually(w.t, v+" to be asserted", func() bool { return w.has(v) })
}

// waitSeen waits until v has been asserted at some point (it may be gone
// again: short-lived states such as a restart's complete).
func (w *world) waitSeen(v string) {
	w.t.Helper()
	eventually(w.t, v+" to have been asserted", func() bool { return strings.Contains(w.eventsOf(v), "+") })
}

func (w *world) waitGone(v string) {
	w.t.Helper()
	eventually(w.t, v+" to be retracted", func() bool { return !w.has(v) })
}

func (w *world) waitLog(sub string) {
	w.t.Helper()
	eventually(w.t, "log containing "+sub, func() bool { return strings.Contains(w.logs.String(), sub) })
}

// events returns a copy of the recorder's history.
func (w *world) events() []recEvent {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	return slices.Clone(w.rec.events)
}

// eventsOf returns "+"/"-" for every event about v, in order.
func (w *world) eventsOf(v string) string {
	var b strings.Builder
	for _, e := range w.events() {
		if e.v == v {
			if e.add {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}

// liveWith lists the live assertions whose text starts with prefix.
func (w *world) liveWith(prefix string) []string {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	var out []string
	for v := range w.rec.count {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// barrier asserts a fresh value through a new script and waits for it: the
// watcher applies changes in order, so everything written before has been
// handled.
var worldBarrierSeq int

func (w *world) barrier(dir string) {
	w.t.Helper()
	worldBarrierSeq++
	v := fmt.Sprintf("<barrier %d>", worldBarrierSeq)
	writeAtomic(w.t, filepath.Join(dir, "zzz-barrier.pr"), v)
	w.waitHas(v)
}

// writeAtomic writes content to p the way editors save: a temporary file
// renamed over the target.
func writeAtomic(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func tempRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}
