package daemon

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
)

// Dependency-ordered stop (operator issue; a deviation from the reference,
// which signals every process at once). A daemon's process is signalled
// only once every running daemon that depends on it has stopped: on
// shutdown, and whenever the dependee stops or restarts, dependents stop
// first. Dependents start only after their dependees are ready, so this is
// reverse start order along every dependency chain; daemons that do not
// depend on each other stop in parallel.
//
// The dependents go first without help: a stopping daemon's `ready`
// assertion goes at once, so the dependency tracker withdraws the
// dependents' run-service. The gate only holds the dependee's SIGTERM back
// until their processes are gone, each within its own stopTimeout; it
// never waits longer than their stopTimeouts added up, plus stopSlack.
//
// Dependencies are read from `<depends-on <daemon A> <service-state
// <daemon B> _>>`, and remembered for each running daemon as they were
// when its process started, because at shutdown the scripts that asserted
// them are being stopped too.

// stopSlack is added to the dependents' stop timeouts to bound the wait.
const stopSlack = 2 * time.Second

// stopOrder is the daemon service's record of which daemons run and what
// they depend on. Runner goroutines and the service actor share it.
type stopOrder struct {
	mu      sync.Mutex
	deps    map[string]map[string]int // depender → dependee → depends-on assertions
	live    map[string]*liveDaemon    // daemons with processes
	changed chan struct{}             // closed (and replaced) when live changes
	nextID  uint64
	clock   Clock
}

// liveDaemon is a daemon with running processes.
type liveDaemon struct {
	procs map[uint64]time.Duration // process token → its stopTimeout
	deps  map[string]bool
}

func newStopOrder(clock Clock) *stopOrder {
	return &stopOrder{deps: map[string]map[string]int{}, live: map[string]*liveDaemon{}, changed: make(chan struct{}), clock: clock}
}

// daemonKey is the key of a daemon service name.
func daemonKey(name preserves.Value) string { return preserves.FormatText(name) }

// track observes depends-on assertions between daemons in the active facet.
func (o *stopOrder) track(t *dataspace.Turn, cfg *dataspace.Ref) {
	p := pattern.Rec(service.LabelDependsOn,
		pattern.Bind{Pattern: pattern.Rec(externalservices.LabelDaemon, pattern.Discard{})},
		pattern.Rec(service.LabelServiceState, pattern.Bind{Pattern: pattern.Rec(externalservices.LabelDaemon, pattern.Discard{})}, pattern.Discard{}))
	t.During(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		a, b := daemonKey(caps[0]), daemonKey(caps[1])
		o.dependency(a, b, +1)
		t.OnStop(func(*dataspace.Turn) error { o.dependency(a, b, -1); return nil })
		return nil
	})
}

func (o *stopOrder) dependency(a, b string, d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.deps[a]
	if m == nil {
		m = map[string]int{}
		o.deps[a] = m
	}
	m[b] += d
	if m[b] <= 0 {
		delete(m, b)
	}
	if len(m) == 0 {
		delete(o.deps, a)
	}
}

// up records a process of daemon k started, with its stop timeout, and
// returns its token for down.
func (o *stopOrder) up(k string, timeout time.Duration) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.live[k]
	if l == nil {
		l = &liveDaemon{procs: map[uint64]time.Duration{}, deps: map[string]bool{}}
		o.live[k] = l
	}
	o.nextID++
	l.procs[o.nextID] = timeout
	for b := range o.deps[k] {
		l.deps[b] = true
	}
	return o.nextID
}

// down records the process of daemon k with token id gone.
func (o *stopOrder) down(k string, id uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if l := o.live[k]; l != nil {
		delete(l.procs, id)
		if len(l.procs) == 0 {
			delete(o.live, k)
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// dependents returns the processes of running daemons that depend on k,
// directly or not, and their stop timeouts added up. Called with o.mu held.
func (o *stopOrder) dependents(k string) (map[uint64]string, time.Duration) {
	found := map[uint64]string{}
	seen := map[string]bool{k: true}
	var total time.Duration
	var visit func(k string)
	visit = func(k string) {
		for a, l := range o.live {
			if seen[a] || !(l.deps[k] || o.deps[a][k] > 0) {
				continue
			}
			seen[a] = true
			for id, timeout := range l.procs {
				found[id] = a
				total += timeout
			}
			visit(a)
		}
	}
	visit(k)
	return found, total
}

// gone reports which of procs are still running. Called with o.mu held.
func (o *stopOrder) running(procs map[uint64]string) []string {
	var out []string
	for id, k := range procs {
		if l := o.live[k]; l != nil {
			if _, ok := l.procs[id]; ok {
				out = append(out, k)
			}
		}
	}
	return out
}

// waitDependents blocks until the processes of every daemon that depends
// on k, running when it is called, are gone, or their stop timeouts (plus
// stopSlack) have passed. Dependents started meanwhile (after a restart)
// are not waited for. It returns how long it waited and the dependents
// still running when it gave up.
func (o *stopOrder) waitDependents(k string) (waited time.Duration, late []string) {
	return o.await(o.snapshot(k))
}

// stopWait is the set of dependent processes a stop waits for.
type stopWait struct {
	procs map[uint64]string
	limit time.Duration
}

func (o *stopOrder) snapshot(k string) stopWait {
	o.mu.Lock()
	defer o.mu.Unlock()
	procs, total := o.dependents(k)
	return stopWait{procs: procs, limit: total + stopSlack}
}

func (o *stopOrder) await(w stopWait) (waited time.Duration, late []string) {
	if len(w.procs) == 0 {
		return 0, nil
	}
	began := o.clock.Now()
	expired, release := timeout(o.clock, w.limit)
	defer release()
	for {
		o.mu.Lock()
		left := o.running(w.procs)
		ch := o.changed
		o.mu.Unlock()
		if len(left) == 0 {
			return since(o.clock, began), nil
		}
		select {
		case <-ch:
		case <-expired:
			slices.Sort(left)
			return since(o.clock, began), slices.Compact(left)
		}
	}
}

// idleLimit bounds how long a restart waits for the old processes.
const idleLimit = 5 * time.Minute

// waitIdle blocks until daemon k has no running process, ctx ends, or
// idleLimit passes (each stop is itself bounded, so this is a safety net).
func (o *stopOrder) waitIdle(ctx context.Context, k string) {
	expired, release := timeout(o.clock, idleLimit)
	defer release()
	for {
		o.mu.Lock()
		_, busy := o.live[k]
		ch := o.changed
		o.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-expired:
			return
		}
	}
}
