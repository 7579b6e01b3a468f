package idleread

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Lingering: a reader waits in the runtime's poller first and parks only
// once its stream has been idle for a while. Parking costs a wake-up
// through this package's poller and a new goroutine per input, which on
// a connection in a request/reply exchange doubled the round trip's
// latency when every wait parked; a stream idle for a second is seldom
// about to be busy. One sweeper goroutine (running only while some
// Idler is registered) ticks every LingerTick; a reader found waiting
// over two ticks is interrupted by a read deadline in the past, and its
// Leave reports it, so that it parks.

// LingerTick is the sweeper's period: a reader waiting for input parks
// after one to two ticks.
const LingerTick = 500 * time.Millisecond

// Deadliner is a stream with read deadlines.
type Deadliner interface {
	SetReadDeadline(time.Time) error
}

// An Idler tracks one reader's waits for input. Enter before a read that
// waits, Leave after it; Close when the reader ends.
type Idler struct {
	d  Deadliner
	mu sync.Mutex
	// since: the sweeper's tick when the current wait began; 0 when the
	// reader is not waiting.
	since       uint64
	interrupted bool // the sweeper set a deadline in the past
	cut         bool // Cut: the past deadline stays
}

type sweeper struct {
	mu      sync.Mutex
	idlers  map[*Idler]struct{}
	running bool
	tick    atomic.Uint64
	empty   chan struct{} // the last Idler closed: the loop may end now
}

var theSweeper = sweeper{empty: make(chan struct{}, 1)}

// NewIdler registers a reader of d with the sweeper.
func NewIdler(d Deadliner) *Idler {
	i := &Idler{d: d}
	s := &theSweeper
	s.mu.Lock()
	if s.idlers == nil {
		s.idlers = make(map[*Idler]struct{})
	}
	s.idlers[i] = struct{}{}
	if !s.running {
		s.running = true
		go s.loop()
	}
	s.mu.Unlock()
	return i
}

// Close unregisters i.
func (i *Idler) Close() {
	s := &theSweeper
	s.mu.Lock()
	delete(s.idlers, i)
	if len(s.idlers) == 0 && s.running {
		select {
		case s.empty <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// Enter marks the start of a wait for input.
func (i *Idler) Enter() {
	t := theSweeper.tick.Load() + 1 // never 0
	i.mu.Lock()
	i.since = t
	i.mu.Unlock()
}

// Leave marks its end. It reports whether the sweeper interrupted the
// wait (the read failed with os.ErrDeadlineExceeded, or raced it): the
// stream has been idle long enough to park. The deadline is cleared.
func (i *Idler) Leave() (lingered bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.since = 0
	if !i.interrupted || i.cut {
		return false
	}
	i.interrupted = false
	_ = i.d.SetReadDeadline(time.Time{})
	return true
}

// Cut ends the reader's reads for good, as a read deadline in the past
// would, but one that neither Leave nor the sweeper clears (a plain
// SetReadDeadline may be undone by Leave when it races the sweeper's).
// From now on Leave reports no linger, so the reader sees the deadline's
// error and ends. A reader that may be parked must be unparked after Cut
// (Waiter.Unpark), and one that parks must check WasCut after Park.
func (i *Idler) Cut() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cut = true
	i.interrupted = false
	return i.d.SetReadDeadline(time.Unix(1, 0))
}

// WasCut reports whether Cut has been called.
func (i *Idler) WasCut() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cut
}

// Lingered reports whether err is what an interrupted wait returns.
func Lingered(lingered bool, err error) bool {
	return lingered && os.IsTimeout(err)
}

func (s *sweeper) loop() {
	tk := time.NewTicker(LingerTick)
	defer tk.Stop()
	var due []*Idler
	for {
		var now uint64
		select {
		case <-tk.C:
			now = s.tick.Add(1)
		case <-s.empty:
			now = s.tick.Load()
		}
		s.mu.Lock()
		if len(s.idlers) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		due = due[:0]
		for i := range s.idlers {
			due = append(due, i)
		}
		s.mu.Unlock()
		for _, i := range due {
			i.mu.Lock()
			// since is the tick after the one current at Enter, so a
			// wait of two ticks or more has since+1 <= now.
			if i.since != 0 && !i.interrupted && !i.cut && i.since+1 <= now {
				i.interrupted = true
				_ = i.d.SetReadDeadline(time.Unix(1, 0))
			}
			i.mu.Unlock()
		}
		clear(due)
	}
}
