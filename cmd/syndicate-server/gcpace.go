package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The collector's headroom (issue 28). With the default GOGC of 100 the
// next collection comes once the heap has doubled, and a server's live
// heap is small (a few MiB with the shipped config): under message load it
// collected tens of times a second, and about a third of the server's CPU
// per message went to the collector (wire pub/sub at one message per
// turn: 690-745 CPU-ns per message at GOGC=100 against 430-465 ns at 400).
// The work of a collection is the live heap it marks, so that cost is the
// allocation rate times 100/GOGC whatever the heap's size: a small heap
// pays for its frequent cycles as much as a large one for its rare ones.
//
// The pacer therefore gives the heap an absolute headroom of gcHeadroom
// over what the last collection found live, instead of a doubling, when
// that is more: the next goal is max(2 x live, live + gcHeadroom). It
// recomputes the GC percent after every collection (a finalizer re-armed
// each cycle), so a heap that grows quickly (a large config loading) is
// collected at the default pace from its next cycle on, never with a
// multiplied goal: the headroom is at most gcHeadroom bytes of garbage
// beyond what GOGC=100 would allow. What the headroom holds while the
// server is busy is handed back when it goes quiet (returnMemory), so an
// idle server is as lean as before. A GOGC set in the environment is the
// operator's choice and turns the pacer off.
//
// A large live heap gets less than a doubling: its headroom stops growing
// at gcLargeLive and grows again only as half the live heap, so the goal
// is 2 x live up to 64 MiB live and 1.5 x live from 128 MiB. The RSS
// peak of loading a config file of 300,000 facts is the collector's goal
// over the script's turn (130 MB live): it was 2.2-2.3 times the settled
// RSS, 1.85-1.9 with this (issue 28: at most 2). Only such heaps pay the
// collections it adds, and they pay them in the memory they give back.
const gcHeadroom = 16 << 20

// gcLargeLive is the headroom at which a large heap's stops growing with
// it (until half the heap is more).
const gcLargeLive = 64 << 20

// gcPercentFor is the GC percent that puts the next heap goal at
// live + max(headroom, min(live, max(gcLargeLive, live/2))), counting a
// live heap under gcMinLive (nothing collected yet, or a nearly empty
// process) as gcMinLive: the goal must stay a bounded multiple of what is
// live.
func gcPercentFor(live, headroom uint64) int {
	live = max(live, gcMinLive)
	room := max(headroom, min(live, max(gcLargeLive, live/2)))
	return int(room * 100 / live)
}

// gcMinLive bounds the percent to gcHeadroom/gcMinLive x 100 (800).
const gcMinLive = 2 << 20

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcPacer re-sets the GC percent after each collection (see above).
type gcPacer struct {
	headroom uint64
	stopped  atomic.Bool
	cycles   atomic.Int64 // collections seen, for tests
	percent  atomic.Int64 // the percent set last
}

// gcSentinel is the object whose finalizer runs after each collection;
// it holds a pointer so that it is never a tiny allocation (whose
// finalizer might wait for its neighbours).
type gcSentinel struct{ p *gcPacer }

func (p *gcPacer) arm() {
	runtime.SetFinalizer(&gcSentinel{p: p}, func(s *gcSentinel) { s.p.afterGC() })
}

func (p *gcPacer) afterGC() {
	if p.stopped.Load() {
		return
	}
	p.cycles.Add(1)
	p.set()
	p.arm()
}

func (p *gcPacer) set() {
	pc := gcPercentFor(liveHeap(), p.headroom)
	if int64(pc) != p.percent.Load() {
		p.percent.Store(int64(pc))
		debug.SetGCPercent(pc)
	}
}

// startGCPacer starts pacing collections with headroom bytes of absolute
// headroom, unless GOGC is set in the environment. stop restores the
// default percent.
func startGCPacer(headroom uint64) (p *gcPacer, stop func()) {
	if os.Getenv("GOGC") != "" {
		return nil, func() {}
	}
	p = &gcPacer{headroom: headroom}
	p.set()
	p.arm()
	return p, func() {
		p.stopped.Store(true)
		debug.SetGCPercent(100)
	}
}
