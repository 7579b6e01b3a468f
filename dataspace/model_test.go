package dataspace

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// The model-based test of the runtime. A program of random steps (spawns,
// nested facets, bulk asserts and retracts across every size threshold of
// the facet and index tables, messages, syncs, links, crashes and stops,
// including stop actions that stop siblings, and the scheduling of turn
// hand-offs: chains of forwarding actors longer than the hand-off budget,
// ping-pongs that re-enter the actor that started them, ActivateNow nested
// in a turn) runs against the real runtime
// and against a deliberately naive model: a set of live facts per facet and
// the facet tree. After every step each observer of the dataspace must see
// exactly the facts the model says are live, and exactly the messages sent.
//
// Programs are byte strings so that the same interpreter serves the seeded
// random runs, the deterministic threshold cases and FuzzRuntimeModel.

var (
	modelSteps    = flag.Int("model.steps", 0, "steps per random program in TestRuntimeModelRandom (0: a CI-sized default)")
	modelPrograms = flag.Int("model.programs", 4, "random programs in TestRuntimeModelRandom")
)

// mFacet is the model of one facet: what it has asserted, its live children,
// whether a preventer holds it, and the facets its stop action stops.
type mFacet struct {
	fr       FacetRef
	actor    *mActor
	parent   *mFacet
	children []*mFacet
	held     bool
	alive    bool
	facts    map[int64]Handle // serial → handle
	stopsToo []*mFacet        // stopped explicitly by this facet's stop action
	links    []*mActor        // actors spawned linked from this facet
}

type mActor struct {
	idx      int
	alive    bool
	root     *mFacet
	linkedTo *mFacet // the facet that spawned it linked, if any
}

// modelObs is one observer of the dataspace and the pattern it uses; want
// filters and projects a fact or message value into what the observer
// captures (ok=false: not its business).
type modelObs struct {
	rec  *liveRecorder
	want func(v preserves.Value) (preserves.Value, bool)
	// keep says whether a captured value is about facts or messages (a
	// catch-all also sees the Observe assertions themselves).
	keep func(captured preserves.Value) bool

	p      pattern.Pattern
	ref    *Ref              // the recorder's entity
	h      Handle            // its Observe assertion; 0 while it is not observing
	msgLog []preserves.Value // the messages it should have received
}

type modelRun struct {
	tb     testing.TB
	s      *System
	ds     *Ref
	obsFR  FacetRef
	obs    []modelObs
	actors []*mActor
	serial int64
	values map[int64]preserves.Value
	budget int // facts the program may still assert
	prog   []byte
	pc     int
	steps  []string // what ran, for failure messages

	chains map[int]*Ref // the head of a chain of n forwarding actors to ds
	echo   *Ref         // a bouncer in an actor of its own
}

const modelLabels = 6 // more than index.fewLabels

// modelBudget bounds the facts one program asserts: one 100,000-fact bulk
// and change.
const modelBudget = 110_000

// fuzzBudget bounds a fuzzed program: still several times every threshold.
const fuzzBudget = 6_000

// modelPatience bounds the model's waits, which only end late when the
// runtime is wrong: a sync behind 100,000 facts and their observers takes
// seconds under -race on a loaded 2-core machine.
const modelPatience = 60 * time.Second

func factLabel(l int) preserves.Symbol { return preserves.Symbol(fmt.Sprintf("fact%d", l)) }

// assertSizes are the bulk sizes a step can pick: both sides of the facet
// handle list's compaction threshold (32 entries, 4× stale), of the index's
// small-set and few-observer limits (8), and large bulks.
var assertSizes = []int{0, 1, 2, 7, 8, 9, 31, 32, 33, 34, 63, 64, 65, 127, 128, 129, 130, 200, 257, 1000, 4096}

func (m *modelRun) next() byte {
	if m.pc >= len(m.prog) {
		return 0
	}
	b := m.prog[m.pc]
	m.pc++
	return b
}

// pick always consumes one byte, so programs keep their layout whatever
// the state.
func (m *modelRun) pick(n int) int {
	b := int(m.next())
	if n <= 1 {
		return 0
	}
	return b % n
}

// size picks a bulk size, within the program's budget of facts, so that
// every program (a fuzzed one included) ends in seconds.
func (m *modelRun) size() int {
	b := m.next()
	n := assertSizes[int(b)%len(assertSizes)]
	if b == 0xff { // the rare huge bulk
		n = 100_000
	}
	n = min(n, m.budget)
	m.budget -= n
	return n
}

func newModelRun(tb testing.TB, prog []byte, budget int) *modelRun {
	m := &modelRun{tb: tb, prog: prog, values: map[int64]preserves.Value{}, budget: budget}
	m.s = newSys(tb)
	_, m.ds = hold(tb, m.s, "ds", NewDataspace())
	// Observers: several catch-alls (more than index.fewObservers share
	// one leaf when the program asks for it), one per label, and one with
	// a constant field.
	nCatch := 1 + m.pick(12)
	var fr FacetRef
	var recs []*liveRecorder
	fr, _, _ = client(tb, m.s, "observers")
	m.obsFR = fr
	isOurs := func(v preserves.Value) bool {
		r, ok := v.(*preserves.Record)
		if !ok {
			return false
		}
		l, ok := r.Label.(preserves.Symbol)
		return ok && (strings.HasPrefix(string(l), "fact") || l == "msg")
	}
	for range nCatch {
		m.obs = append(m.obs, modelObs{rec: newLiveRecorder(), want: func(v preserves.Value) (preserves.Value, bool) {
			return preserves.Sequence{v}, isOurs(v)
		}, keep: func(c preserves.Value) bool {
			cs, ok := c.(preserves.Sequence)
			return ok && len(cs) == 1 && isOurs(cs[0])
		}})
	}
	for l := range modelLabels {
		label := factLabel(l)
		m.obs = append(m.obs, modelObs{rec: newLiveRecorder(), want: func(v preserves.Value) (preserves.Value, bool) {
			r := v.(*preserves.Record)
			if !preserves.Equal(r.Label, label) {
				return nil, false
			}
			return preserves.Sequence{r.Fields[0], r.Fields[1]}, true
		}})
	}
	m.obs = append(m.obs, modelObs{rec: newLiveRecorder(), want: func(v preserves.Value) (preserves.Value, bool) {
		r := v.(*preserves.Record)
		if !preserves.Equal(r.Label, factLabel(0)) || !preserves.Equal(r.Fields[0], preserves.Int(0)) {
			return nil, false
		}
		return preserves.Sequence{r.Fields[1]}, true
	}})
	for _, o := range m.obs {
		recs = append(recs, o.rec)
	}
	do(tb, fr, func(t *Turn) error {
		for i, r := range recs {
			o := &m.obs[i]
			switch {
			case i < nCatch:
				o.p = pattern.Capture()
			case i < nCatch+modelLabels:
				o.p = pattern.Rec(factLabel(i-nCatch), pattern.Capture(), pattern.Capture())
			default:
				o.p = pattern.Rec(factLabel(0), pattern.Lit{Value: preserves.Int(0)}, pattern.Capture())
			}
			o.ref = t.Create(r)
			o.h = t.Assert(m.ds, Observe(o.p, o.ref))
		}
		return nil
	})
	settle(tb, fr, m.ds)
	m.spawn()
	return m
}

// spawn starts a top-level actor whose root facet a preventer holds.
func (m *modelRun) spawn() *mActor {
	a := &mActor{idx: len(m.actors), alive: true}
	fr, _, _ := client(m.tb, m.s, fmt.Sprintf("a%d", a.idx))
	a.root = &mFacet{fr: fr, actor: a, held: true, alive: true, facts: map[int64]Handle{}}
	m.actors = append(m.actors, a)
	return a
}

// liveFacets lists every live facet of live actors, in a stable order.
func (m *modelRun) liveFacets() []*mFacet {
	var out []*mFacet
	var walk func(f *mFacet)
	walk = func(f *mFacet) {
		out = append(out, f)
		for _, c := range f.children {
			walk(c)
		}
	}
	for _, a := range m.actors {
		if a.alive {
			walk(a.root)
		}
	}
	return out
}

func (m *modelRun) factValue(a *mActor, label int) (int64, preserves.Value) {
	m.serial++
	v := preserves.Rec(string(factLabel(label)), preserves.Int(int64(a.idx)), preserves.Int(m.serial))
	m.values[m.serial] = v
	return m.serial, v
}

// assertIn asserts n facts from the active facet (of model facet f).
func (m *modelRun) assertIn(t *Turn, f *mFacet, n int) {
	label := m.pick(modelLabels)
	for range n {
		s, v := m.factValue(f.actor, label)
		f.facts[s] = t.Assert(m.ds, v)
	}
}

// --- the model's semantics -------------------------------------------------

// inert mirrors runtime spec §4.3; a linked spawn leaves the facet an
// assertion of its own (to the child), held until the facet stops.
func (f *mFacet) inert() bool {
	if f.held || len(f.children) > 0 {
		return false
	}
	return f.parent == nil || (len(f.facts) == 0 && len(f.links) == 0)
}

// stop mirrors runtime spec §4.6 at the level the observers can see.
func (m *modelRun) stop(f *mFacet, atOrAbove bool) {
	if !f.alive {
		return
	}
	f.alive = false
	children := f.children
	f.children = nil
	for _, c := range children {
		m.stop(c, false)
	}
	p := f.parent
	if atOrAbove && p != nil {
		p.children = slices.DeleteFunc(p.children, func(c *mFacet) bool { return c == f })
	}
	for _, g := range f.stopsToo {
		m.stop(g, true)
	}
	clear(f.facts)
	for _, c := range f.links {
		m.terminate(c)
	}
	if f.parent == nil {
		m.terminate(f.actor)
	}
	if atOrAbove && p != nil && p.alive && p.inert() {
		m.stop(p, true)
	}
}

// terminate ends an actor (normally or by a crash): its facts vanish, and
// the facet it is linked to stops.
func (m *modelRun) terminate(a *mActor) {
	if !a.alive {
		return
	}
	a.alive = false
	m.stop(a.root, true)
	if l := a.linkedTo; l != nil && l.alive {
		m.stop(l, true)
	}
}

// --- steps -----------------------------------------------------------------

// errCrash is what a crashing step's turn fails with.
var errCrash = errors.New("model: deliberate crash")

func (m *modelRun) step() bool {
	if m.pc >= len(m.prog) {
		return false
	}
	op := m.next() % 15
	facets := m.liveFacets()
	if len(facets) == 0 {
		m.spawn()
		m.steps = append(m.steps, "spawn (none left)")
		return true
	}
	f := facets[m.pick(len(facets))]
	a := f.actor
	switch op {
	case 0: // spawn a top-level actor
		m.spawn()
		m.steps = append(m.steps, "spawn")
	case 1, 2: // a child facet, held or not, with a bulk of facts
		m.childFacet(f)
	case 3: // a bulk of facts in an existing facet
		n := m.size()
		do(m.tb, f.fr, func(t *Turn) error { m.assertIn(t, f, n); return nil })
		m.steps = append(m.steps, fmt.Sprintf("assert %d", n))
	case 4: // retract some of a facet's facts, in one turn
		m.retractSome(f)
	case 5, 6: // stop a facet (the root: the actor ends)
		below := m.factsBelow(f)
		do(m.tb, f.fr, func(t *Turn) error { t.Stop(); return nil })
		m.stop(f, true)
		m.steps = append(m.steps, fmt.Sprintf("stop (%d facts at or below)", below))
	case 7: // two sibling facets; stopping the first stops the second
		m.pairWithStopAction(f)
	case 8: // a message through the dataspace
		_, v := m.factValue(a, 0)
		v = preserves.Rec("msg", v.(*preserves.Record).Fields...)
		do(m.tb, f.fr, func(t *Turn) error { t.Message(m.ds, v); return nil })
		m.sent(v)
		m.steps = append(m.steps, "message")
	case 9: // a sync whose continuation asserts a fact
		s, v := m.factValue(a, m.pick(modelLabels))
		var h Handle
		do(m.tb, f.fr, func(t *Turn) error {
			t.Sync(m.ds, func(t *Turn) error { h = t.Assert(m.ds, v); return nil })
			return nil
		})
		settleWithin(m.tb, f.fr, m.ds, modelPatience)
		f.facts[s] = h
		m.steps = append(m.steps, "sync")
	case 10: // a crash, a linked spawn, or a crash of a linked child
		switch m.next() % 3 {
		case 0:
			m.crash(f)
		default:
			m.spawnLinked(f)
		}
	case 11: // an observer leaves, or comes back (index slots swap)
		o := &m.obs[m.pick(len(m.obs))]
		if o.h != 0 {
			do(m.tb, m.obsFR, func(t *Turn) error { t.Retract(o.h); return nil })
			o.h = 0
			m.steps = append(m.steps, "unobserve")
		} else {
			do(m.tb, m.obsFR, func(t *Turn) error { o.h = t.Assert(m.ds, Observe(o.p, o.ref)); return nil })
			m.steps = append(m.steps, "observe again")
		}
	case 12: // messages and a fact through a chain of forwarding actors
		m.viaChain(f)
	case 13: // a ping-pong between this actor and another, then a message
		m.pingPong(f)
	case 14: // ActivateNow of another actor nested in a turn
		m.nested(f, facets)
	}
	return true
}

// childFacet starts a child facet of f, held or not, with a bulk of
// facts.
func (m *modelRun) childFacet(f *mFacet) {
	a := f.actor
	held := m.next()%2 == 0
	n := m.size()
	c := &mFacet{actor: a, parent: f, held: held, alive: true, facts: map[int64]Handle{}}
	do(m.tb, f.fr, func(t *Turn) error {
		_, err := t.Facet(func(t *Turn) error {
			c.fr = t.FacetRef()
			if held {
				t.PreventInertCheck()
			}
			m.assertIn(t, c, n)
			return nil
		})
		return err
	})
	f.children = append(f.children, c)
	if c.inert() { // the inert check at commit
		m.stop(c, true)
	}
	m.steps = append(m.steps, fmt.Sprintf("facet(held=%v, %d facts)", held, n))
}

// crash fails a turn of f's actor after churning assertions; rollback
// must not resurrect or lose any of them.
func (m *modelRun) crash(f *mFacet) {
	a := f.actor
	n := m.size()
	do(m.tb, f.fr, func(t *Turn) error {
		for range n {
			_, v := m.factValue(a, 1)
			t.Retract(t.Assert(m.ds, v))
		}
		for _, h := range f.facts {
			t.Retract(h)
			break
		}
		return errCrash
	})
	m.terminate(a)
	m.steps = append(m.steps, fmt.Sprintf("crash after %d churned", n))
}

// chainLengths are the chain lengths a step can pick: short ones, and
// both sides of the hand-off budget (a runner gives the rest of a longer
// chain goroutines of their own).
var chainLengths = []int{1, 2, 3, 8, handoffBudget - 1, handoffBudget, handoffBudget + 1, 2*handoffBudget + 5}

// chain returns the head of a chain of n forwarding actors ending at the
// dataspace, building it the first time.
func (m *modelRun) chain(n int) *Ref {
	if r := m.chains[n]; r != nil {
		return r
	}
	if m.chains == nil {
		m.chains = map[int]*Ref{}
	}
	next := m.ds
	for i := range n {
		_, next = hold(m.tb, m.s, fmt.Sprintf("fw%d.%d", n, i), &modelForwarder{next: next, out: map[Handle]Handle{}})
	}
	m.chains[n] = next
	return next
}

// messageValue makes a fresh message the model expects every interested
// observer to receive, in order.
func (m *modelRun) messageValue(a *mActor) preserves.Value {
	_, v := m.factValue(a, 0)
	v = preserves.Rec("msg", v.(*preserves.Record).Fields...)
	m.sent(v)
	return v
}

func (m *modelRun) sent(v preserves.Value) {
	for i := range m.obs {
		if w, ok := m.obs[i].want(v); ok && m.obs[i].h != 0 {
			m.obs[i].msgLog = append(m.obs[i].msgLog, w)
		}
	}
}

// viaChain sends 1–4 messages, in one turn or one turn each, and asserts
// one fact, all through one chain: per-pair order along the chain keeps
// the messages in order, and the fact is retracted through the chain
// when f's facet retracts or stops.
func (m *modelRun) viaChain(f *mFacet) {
	n := chainLengths[m.pick(len(chainLengths))]
	k := 1 + m.pick(4)
	oneTurn := m.next()%2 == 0
	head := m.chain(n)
	vs := make([]preserves.Value, k)
	for i := range vs {
		vs[i] = m.messageValue(f.actor)
	}
	s, fact := m.factValue(f.actor, m.pick(modelLabels))
	if oneTurn {
		do(m.tb, f.fr, func(t *Turn) error {
			for _, v := range vs {
				t.Message(head, v)
			}
			f.facts[s] = t.Assert(head, fact)
			return nil
		})
	} else {
		for _, v := range vs {
			do(m.tb, f.fr, func(t *Turn) error { t.Message(head, v); return nil })
		}
		do(m.tb, f.fr, func(t *Turn) error { f.facts[s] = t.Assert(head, fact); return nil })
	}
	m.steps = append(m.steps, fmt.Sprintf("chain(%d actors, %d messages, one turn %v)", n, k, oneTurn))
}

// pingPong bounces a counter between a bouncer in f's actor and one in an
// actor of its own, past the hand-off budget for long counts; the last
// bounce sends a message to the dataspace. f's actor is re-entered by
// turns its own activation handed off.
func (m *modelRun) pingPong(f *mFacet) {
	counts := []int{0, 1, 2, handoffBudget / 2, handoffBudget, 3 * handoffBudget}
	n := counts[m.pick(len(counts))]
	if m.echo == nil {
		e := &bouncer{ds: m.ds}
		_, e.self = hold(m.tb, m.s, "echo", e)
		m.echo = e.self
	}
	final := m.messageValue(f.actor)
	do(m.tb, f.fr, func(t *Turn) error {
		b := &bouncer{ds: m.ds}
		b.self = t.Create(b)
		t.Message(m.echo, preserves.Sequence{preserves.Int(int64(n)), Embed(b.self), final})
		return nil
	})
	m.steps = append(m.steps, fmt.Sprintf("ping-pong %d", n))
}

// nested runs, inside a turn of f's actor, an ActivateNow of another
// actor's facet that sends a message, then sends one itself: the nested
// turn commits first, so its message reaches the dataspace first.
func (m *modelRun) nested(f *mFacet, facets []*mFacet) {
	var other *mFacet
	for _, g := range facets[m.pick(len(facets)):] {
		if g.actor != f.actor {
			other = g
			break
		}
	}
	if other == nil {
		m.steps = append(m.steps, "nested (no other actor)")
		return
	}
	inner, outer := m.messageValue(other.actor), m.messageValue(f.actor)
	do(m.tb, f.fr, func(t *Turn) error {
		other.fr.ActivateNow(func(t *Turn) error { t.Message(m.ds, inner); return nil })
		t.Message(m.ds, outer)
		return nil
	})
	m.steps = append(m.steps, "nested ActivateNow")
}

// modelForwarder passes messages, assertions and retractions on to next.
type modelForwarder struct {
	BaseEntity
	next *Ref
	out  map[Handle]Handle // its actor's turns only
}

func (w *modelForwarder) Message(t *Turn, v preserves.Value) error {
	t.Message(w.next, v)
	return nil
}

func (w *modelForwarder) Assert(t *Turn, v preserves.Value, h Handle) error {
	w.out[h] = t.Assert(w.next, v)
	return nil
}

func (w *modelForwarder) Retract(t *Turn, h Handle) error {
	t.Retract(w.out[h])
	delete(w.out, h)
	return nil
}

// bouncer answers [N peer final] with [N-1 self final] to peer, or sends
// final to the dataspace when N is 0.
type bouncer struct {
	BaseEntity
	self, ds *Ref
}

func (b *bouncer) Message(t *Turn, v preserves.Value) error {
	xs := v.(preserves.Sequence)
	n := xs[0].(preserves.Int)
	if n == 0 {
		t.Message(b.ds, xs[2])
		return nil
	}
	peer, _ := RefOf(xs[1])
	t.Message(peer, preserves.Sequence{n - 1, Embed(b.self), xs[2]})
	return nil
}

func (m *modelRun) factsBelow(f *mFacet) int {
	n := len(f.facts)
	for _, c := range f.children {
		n += m.factsBelow(c)
	}
	return n
}

// retractSome retracts a pattern of f's facts: the oldest k, every other
// one, or all but the newest — the last two leave holes that make the
// facet's handle list compact.
func (m *modelRun) retractSome(f *mFacet) {
	serials := make([]int64, 0, len(f.facts))
	for s := range f.facts {
		serials = append(serials, s)
	}
	slices.Sort(serials)
	var drop []int64
	switch m.next() % 3 {
	case 0:
		k := m.size()
		drop = serials[:min(k, len(serials))]
	case 1:
		for i, s := range serials {
			if i%2 == 0 {
				drop = append(drop, s)
			}
		}
	case 2:
		if len(serials) > 0 {
			drop = serials[:len(serials)-1]
		}
	}
	do(m.tb, f.fr, func(t *Turn) error {
		for _, s := range drop {
			t.Retract(f.facts[s])
		}
		return nil
	})
	for _, s := range drop {
		delete(f.facts, s)
	}
	m.steps = append(m.steps, fmt.Sprintf("retract %d of %d", len(drop), len(serials)))
}

// pairWithStopAction makes two held children of f; the first one's stop
// action stops the second explicitly, so stopping f walks a child list
// that a stop action shrinks.
func (m *modelRun) pairWithStopAction(f *mFacet) {
	n1, n2 := m.size(), m.size()
	first := &mFacet{actor: f.actor, parent: f, held: true, alive: true, facts: map[int64]Handle{}}
	second := &mFacet{actor: f.actor, parent: f, held: true, alive: true, facts: map[int64]Handle{}}
	first.stopsToo = []*mFacet{second}
	do(m.tb, f.fr, func(t *Turn) error {
		var secondID FacetID
		if _, err := t.Facet(func(t *Turn) error {
			first.fr = t.FacetRef()
			t.PreventInertCheck()
			m.assertIn(t, first, n1)
			t.OnStop(func(t *Turn) error { t.StopFacet(secondID); return nil })
			return nil
		}); err != nil {
			return err
		}
		secondID, _ = t.Facet(func(t *Turn) error {
			second.fr = t.FacetRef()
			t.PreventInertCheck()
			m.assertIn(t, second, n2)
			return nil
		})
		return nil
	})
	f.children = append(f.children, first, second)
	m.steps = append(m.steps, fmt.Sprintf("pair(%d, %d facts)", n1, n2))
}

// spawnLinked spawns an actor linked to f whose held root asserts a bulk.
func (m *modelRun) spawnLinked(f *mFacet) {
	n := m.size()
	c := &mActor{idx: len(m.actors), alive: true, linkedTo: f}
	c.root = &mFacet{actor: c, held: true, alive: true, facts: map[int64]Handle{}}
	label := m.pick(modelLabels)
	type fact struct {
		s int64
		v preserves.Value
	}
	facts := make([]fact, n)
	for i := range facts {
		facts[i].s, facts[i].v = m.factValue(c, label)
	}
	booted := make(chan struct{})
	do(m.tb, f.fr, func(t *Turn) error {
		t.SpawnLink(fmt.Sprintf("a%d", c.idx), func(t *Turn) error {
			c.root.fr = t.FacetRef()
			t.PreventInertCheck()
			for _, x := range facts {
				c.root.facts[x.s] = t.Assert(m.ds, x.v)
			}
			close(booted)
			return nil
		})
		return nil
	})
	select {
	case <-booted:
	case <-time.After(patience):
		m.tb.Fatal("linked actor did not boot")
	}
	m.actors = append(m.actors, c)
	f.links = append(f.links, c)
	m.steps = append(m.steps, fmt.Sprintf("spawn linked (%d facts)", n))
}

// liveRecorder keeps what an observer holds now and the messages it got,
// so that checking after every step costs the live state, not the whole
// history (the package's recorder replays its log).
type liveRecorder struct {
	BaseEntity
	mu   sync.Mutex
	live map[Handle]preserves.Value
	msgs []preserves.Value
}

func newLiveRecorder() *liveRecorder { return &liveRecorder{live: map[Handle]preserves.Value{}} }

func (r *liveRecorder) Assert(_ *Turn, v preserves.Value, h Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.live[h]; dup {
		return fmt.Errorf("handle %d asserted twice", h)
	}
	r.live[h] = v
	return nil
}

func (r *liveRecorder) Retract(_ *Turn, h Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[h]; !ok {
		return fmt.Errorf("handle %d retracted but not held", h)
	}
	delete(r.live, h)
	return nil
}

func (r *liveRecorder) Message(_ *Turn, v preserves.Value) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, v)
	r.mu.Unlock()
	return nil
}

// serialOf finds the fact serial in what an observer captured: every
// pattern here captures the serial last, directly or inside the record.
func serialOf(c preserves.Value) int64 {
	cs, _ := c.(preserves.Sequence)
	if len(cs) == 0 {
		return -1
	}
	last := cs[len(cs)-1]
	if r, ok := last.(*preserves.Record); ok && len(r.Fields) > 0 {
		last = r.Fields[len(r.Fields)-1]
	}
	n, ok := last.(preserves.Int)
	if !ok {
		return -1
	}
	return int64(n)
}

// compareState checks observer o's live captures against the model's live
// facts by serial (hashing, not sorting, so a step costs O(live)), and
// each capture against the value the model says it must be.
func (m *modelRun) compareState(o modelObs) string {
	keep := o.keep
	if keep == nil {
		keep = func(preserves.Value) bool { return true }
	}
	want := map[int64]bool{}
	if o.h != 0 {
		for _, f := range m.liveFacets() {
			for s := range f.facts {
				if _, ok := o.want(m.values[s]); ok {
					want[s] = true
				}
			}
		}
	}
	o.rec.mu.Lock()
	defer o.rec.mu.Unlock()
	seen := make(map[int64]bool, len(want))
	for _, c := range o.rec.live {
		if !keep(c) {
			continue
		}
		s := serialOf(c)
		if seen[s] {
			return fmt.Sprintf("holds %v twice", c)
		}
		seen[s] = true
		if !want[s] {
			return fmt.Sprintf("holds %v, which the model has retracted (or never asserted)", c)
		}
		if w, _ := o.want(m.values[s]); !preserves.Equal(c, w) {
			return fmt.Sprintf("holds %v for fact %d, the model %v", c, s, w)
		}
	}
	if len(seen) != len(want) {
		for s := range want {
			if !seen[s] {
				return fmt.Sprintf("holds %d values, the model %d; e.g. missing %v", len(seen), len(want), m.values[s])
			}
		}
	}
	var msgs []preserves.Value
	for _, v := range o.rec.msgs {
		if keep(v) {
			msgs = append(msgs, v)
		}
	}
	if !equalVals(msgs, o.msgLog) {
		return fmt.Sprintf("received %d messages, the model sent it %d", len(msgs), len(o.msgLog))
	}
	return ""
}

// check compares every observer with the model. Effects that cross actors
// asynchronously (links) settle by themselves, so it polls with a deadline.
func (m *modelRun) check() {
	m.tb.Helper()
	settleWithin(m.tb, m.obsFR, m.ds, modelPatience)
	agree := func() (string, bool) {
		for i, o := range m.obs {
			if why := m.compareState(o); why != "" {
				return fmt.Sprintf("observer %d %s", i, why), false
			}
		}
		return "", true
	}
	if _, ok := agree(); ok {
		return
	}
	deadline := time.Now().Add(modelPatience)
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
		settleWithin(m.tb, m.obsFR, m.ds, modelPatience)
		if _, ok := agree(); ok {
			return
		}
	}
	why, _ := agree()
	m.tb.Fatalf("runtime and model disagree after step %d (%s): %s\nsteps: %s",
		len(m.steps), m.lastStep(), why, strings.Join(m.steps, "; "))
}

func (m *modelRun) lastStep() string {
	if len(m.steps) == 0 {
		return "setup"
	}
	return m.steps[len(m.steps)-1]
}

// runModel runs prog to the end, checking after every step.
func runModel(tb testing.TB, prog []byte) { runModelBudget(tb, prog, modelBudget) }

func runModelBudget(tb testing.TB, prog []byte, budget int) {
	m := newModelRun(tb, prog, budget)
	m.check()
	for m.step() {
		m.check()
	}
}

// Hand-made programs that cross each size threshold on the way down: a
// facet with that many facts stopped (directly and as a descendant), bulks
// retracted with holes, stop actions shrinking a child list.
func modelSeeds() map[string][]byte {
	idx := func(n int) byte { return byte(slices.Index(assertSizes, n)) }
	seeds := map[string][]byte{}
	for _, n := range []int{0, 1, 31, 32, 33, 64, 128, 129, 1000} {
		// one observer; child facet (held) with n facts; stop it.
		seeds[fmt.Sprintf("stop-%d", n)] = []byte{0, 1, 1, 0, idx(n), 0, 5, 1}
		// child with n facts, grandchild with n facts; stop the child.
		seeds[fmt.Sprintf("nested-%d", n)] = []byte{0, 1, 0, 0, idx(n), 0, 1, 1, 0, idx(n), 0, 5, 1}
		// n facts, retract every other one, stop.
		seeds[fmt.Sprintf("holes-%d", n)] = []byte{10, 3, 0, idx(n), 0, 4, 0, 1, 5, 0}
		// a pair with a sibling-stopping stop action, stop the parent.
		// The root keeps one fact, so a crash (not a clean stop) would show.
		seeds[fmt.Sprintf("pair-%d", n)] = []byte{9, 3, 0, idx(1), 0, 1, 0, 0, idx(n), 0, 7, 1, idx(n), idx(n), 0, 0, 5, 1}
	}
	seeds["crash-churn"] = []byte{0, 3, 0, idx(200), 0, 10, 0, 0, idx(129)}
	// Catch-all observers past index.fewObservers leave and come back.
	seeds["observers"] = []byte{10, 3, 0, idx(33), 0, 11, 0, 0, 11, 0, 5, 8, 0, 11, 0, 0, 4, 0, 1, 5, 0}
	seeds["linked"] = []byte{0, 10, 0, 1, idx(65), 0, 5, 0}
	seeds["messages-syncs"] = []byte{0, 8, 0, 9, 0, 0, 8, 0, 3, 0, idx(33), 0, 5, 0}
	// Hand-off scheduling: chains on both sides of the budget, in one turn
	// and turn by turn, then stopping the facet that asserted through them;
	// ping-pongs past the budget; a nested ActivateNow.
	chain := func(i int) byte { return byte(i) }
	seeds["handoff-chains"] = []byte{0, 12, 0, chain(5), 3, 0, 0, 12, 0, chain(7), 0, 1, 0, 12, 0, chain(3), 2, 0, 0, 5, 0}
	seeds["handoff-pingpong"] = []byte{0, 13, 0, 5, 13, 0, 4, 13, 0, 0, 0, 1, 0, 0, 0, 13, 1, 2}
	seeds["handoff-nested"] = []byte{0, 0, 0, 14, 0, 0, 14, 1, 0, 12, 1, chain(6), 1, 1, 14, 0, 1}
	return seeds
}

func TestRuntimeModelSeeds(t *testing.T) {
	seeds := modelSeeds()
	names := make([]string, 0, len(seeds))
	for name := range seeds {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { runModel(t, seeds[name]) })
	}
}

// TestRuntimeModelRandom runs seeded random programs; -model.steps makes
// them longer for a soak.
func TestRuntimeModelRandom(t *testing.T) {
	steps, programs := *modelSteps, *modelPrograms
	if steps == 0 {
		steps = 40
		if testing.Short() {
			programs, steps = min(programs, 2), 30
		}
	}
	for seed := range uint64(programs) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			prog := make([]byte, steps*4)
			for i := range prog {
				prog[i] = byte(r.IntN(255)) // 0xff (100,000 facts) only in the dedicated test
			}
			runModel(t, prog)
		})
	}
}

// TestStopFacetHundredThousand is the largest case: a facet
// holding 100,000 assertions stops and leaves none.
func TestStopFacetHundredThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	runModel(t, []byte{0, 1, 1, 0, 0xff, 1, 5, 1}) // label 1: two observers see the bulk
}

// FuzzRuntimeModel runs arbitrary programs; the seeds cross every size
// threshold of the facet handle list and the index tables.
func FuzzRuntimeModel(f *testing.F) {
	for _, prog := range modelSeeds() {
		f.Add(prog)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 128 {
			prog = prog[:128]
		}
		// Each input must run in well under a second for the fuzzer to
		// explore; TestStopFacetHundredThousand covers the huge bulk.
		runModelBudget(t, prog, fuzzBudget)
	})
}
