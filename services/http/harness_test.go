package http

import (
	"github.com/rs/zerolog"
	"strings"
	"sync"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

var waitFor = testutil.WaitFor

// harness: a config dataspace and an HTTPD dataspace ("web"), both
// mirrored, with the HTTP services booted.
type harness struct {
	sys  *dataspace.System
	fr   dataspace.FacetRef
	cfg  *dataspace.Ref
	web  *dataspace.Ref
	logs *testutil.Buffer

	mu      sync.Mutex
	present map[string]int
}

func newHarness(tb testing.TB, opts Options) *harness {
	h := &harness{sys: dataspacetest.NewSystem(tb, dataspace.Options{}), present: make(map[string]int), logs: &testutil.Buffer{}}
	ch := make(chan struct{})
	h.sys.Spawn("harness", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		h.fr = t.FacetRef()
		h.cfg = t.Create(dataspace.NewDataspace())
		h.web = t.Create(dataspace.NewDataspace())
		for _, ds := range []struct {
			prefix string
			ref    *dataspace.Ref
		}{{"cfg ", h.cfg}, {"web ", h.web}} {
			t.During(ds.ref, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
				k := ds.prefix + preserves.FormatText(caps[0])
				h.mu.Lock()
				h.present[k]++
				h.mu.Unlock()
				t.OnStop(func(*dataspace.Turn) error {
					h.mu.Lock()
					if h.present[k]--; h.present[k] == 0 {
						delete(h.present, k)
					}
					h.mu.Unlock()
					return nil
				})
				return nil
			})
		}
		env := services.Env{Config: h.cfg, Logger: zerolog.New(h.logs)}
		if err := BootWith(t, env, opts); err != nil {
			return err
		}
		close(ch)
		return nil
	})
	<-ch
	return h
}

func (h *harness) do(fn func(t *dataspace.Turn)) {
	h.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

// has reports whether "cfg V" or "web V" (text) is asserted.
func (h *harness) has(where string, v preserves.Value) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.present[where+" "+preserves.FormatText(v)] > 0
}

// sink records what reaches an entity, in order.
type sink struct {
	dataspace.BaseEntity
	mu  sync.Mutex
	log []string
}

func (k *sink) Assert(_ *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	k.add("+" + preserves.FormatText(v))
	return nil
}

func (k *sink) Retract(_ *dataspace.Turn, _ dataspace.Handle) error {
	k.add("-")
	return nil
}

func (k *sink) Message(_ *dataspace.Turn, v preserves.Value) error {
	k.add("!" + preserves.FormatText(v))
	return nil
}

func (k *sink) add(s string) {
	k.mu.Lock()
	k.log = append(k.log, s)
	k.mu.Unlock()
}

func (k *sink) events() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.log...)
}

func (k *sink) joined() string { return strings.Join(k.events(), " ") }
