package services

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// modelHarness tracks a StatusModel in the harness actor; read runs f in
// that actor once everything asserted so far has reached the model.
func modelHarness(t *testing.T, key func(preserves.Value) string) (*harness, func(f func(m *StatusModel))) {
	var m *StatusModel
	changes := 0
	h := newHarness(t, func(t *dataspace.Turn, env Env) error {
		m = NewStatusModel(key)
		m.Changed = func(*dataspace.Turn) { changes++ }
		m.Track(t, env.Config)
		return nil
	})
	read := func(f func(m *StatusModel)) {
		t.Helper()
		h.settle()
		done := make(chan struct{})
		h.driver.Activate(func(*dataspace.Turn) error {
			defer close(done)
			assert.Positive(t, changes, "Changed never ran")
			f(m)
			return nil
		})
		<-done
	}
	return h, read
}

// TestStatusModelCountsAndDependencies: the model follows assertions as
// they come and go, reads service-state dependencies apart from other awaited
// assertions, finds unmet ones and cycles, and forgets a service once its
// last assertion goes.
func TestStatusModelCountsAndDependencies(t *testing.T) {
	h, read := modelHarness(t, nil)
	a, b := preserves.Rec("daemon", sym("a")), preserves.Rec("daemon", sym("b"))
	reqA1 := h.assert(RequireService(a))
	reqA2 := h.assert(RequireService(a))
	h.assert(RequireService(b))
	h.assert(DependsOn(a, ServiceState(b, StateReady)))
	h.assert(DependsOn(a, preserves.Rec("file-exists", preserves.String("/x"))))
	undep := h.assert(DependsOn(b, ServiceState(a, StateReady)))
	h.assert(RunService(b))
	stB := h.assert(ServiceState(b, StateStarted))

	read(func(m *StatusModel) {
		// The dataspace shows the two identical requirements as one.
		assert.Equal(t, map[string]int{"<daemon a>": 1, "<daemon b>": 1}, m.Required)
		assert.Equal(t, map[string]int{"<daemon b>": 1}, m.Running)
		assert.Equal(t, map[string]map[string]int{"<daemon b>": {"started": 1}}, m.States)
		assert.True(t, m.Waiting("<daemon a>"))
		assert.False(t, m.Waiting("<daemon b>"))
		assert.Equal(t, []Awaited{
			{Text: "<file-exists \"/x\">"},
			{Text: "<service-state <daemon b> ready>", Service: "<daemon b>", State: "ready"},
		}, m.Awaits("<daemon a>"))
		assert.Equal(t, []string{"<daemon b>"}, m.Dependees("<daemon a>", true))
		assert.Equal(t, []string{"<daemon a>", "<daemon b>", "<daemon a>"}, m.Cycle("<daemon a>"))
		assert.True(t, preserves.Equal(a, m.Names["<daemon a>"]))
	})

	// b becomes ready: a's dependency holds, the cycle is broken.
	h.assert(ServiceState(b, StateReady))
	read(func(m *StatusModel) {
		assert.True(t, m.Met(Awaited{Service: "<daemon b>", State: "ready"}))
		assert.Empty(t, m.Dependees("<daemon a>", true))
		assert.Equal(t, []string{"<daemon b>"}, m.Dependees("<daemon a>", false))
		assert.Nil(t, m.Cycle("<daemon a>"))
	})

	// One of two identical requirements goes: a is still required.
	reqA1()
	stB()
	read(func(m *StatusModel) {
		assert.Equal(t, 1, m.Required["<daemon a>"])
		assert.Equal(t, map[string]int{"ready": 1}, m.States["<daemon b>"])
	})
	// The last goes; a is still referenced as b's dependee until that
	// dependency goes too.
	reqA2()
	read(func(m *StatusModel) {
		assert.NotContains(t, m.Required, "<daemon a>")
		assert.True(t, m.Referenced("<daemon a>"))
	})
	undep()
	read(func(m *StatusModel) {
		assert.NotContains(t, m.Deps, "<daemon b>")
		assert.True(t, m.Referenced("<daemon a>"), "a's own dependencies are still asserted")
		assert.True(t, m.Referenced("<daemon b>"))
	})
}

// TestStatusModelKeyFunction: a key function (the dry run's HideRefs)
// renders names, states and awaited assertions alike.
func TestStatusModelKeyFunction(t *testing.T) {
	h, read := modelHarness(t, func(v preserves.Value) string { return preserves.FormatText(HideRefs(v)) })
	var ref *dataspace.Ref
	h.driver.Activate(func(t *dataspace.Turn) error { ref = t.Create(&dataspace.BaseEntity{}); return nil })
	name := preserves.Rec("relay-listener", sym("x"), dataspace.Embed(ref))
	h.assert(RequireService(name))
	h.assert(DependsOn(name, ServiceState(name, StateReady)))
	read(func(m *StatusModel) {
		assert.Equal(t, map[string]int{"<relay-listener x #:ref>": 1}, m.Required)
		assert.Equal(t, []string{"<relay-listener x #:ref>"}, m.Dependees("<relay-listener x #:ref>", true))
		assert.Equal(t, []string{"<relay-listener x #:ref>", "<relay-listener x #:ref>"}, m.Cycle("<relay-listener x #:ref>"))
	})
}

func TestShortName(t *testing.T) {
	name := preserves.Rec("config-watcher", preserves.String("/etc/x"), preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("config"), Value: preserves.NewEmbedded(struct{ x int }{1})}))
	require.Equal(t, `<config-watcher "/etc/x" {config: #:ref}>`, ShortName(name))
	long := preserves.Rec("milestone", preserves.String(strings.Repeat("x", 100)))
	s := ShortName(long)
	require.Equal(t, MaxNameWidth, len([]rune(s)))
	require.True(t, strings.HasSuffix(s, "…"))
}
