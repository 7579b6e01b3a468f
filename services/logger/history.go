package logger

import (
	"math/big"
	"sort"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// `syndicate logs` over the admin socket (our protocol extension,
// docs/protocol.md). The client asserts, in the config dataspace,
//
//	<log-tail SERVICE N FOLLOW #:SINK>
//
// SERVICE is a service name, or #f for every service; N the number of
// recent lines wanted; FOLLOW #t to keep receiving new lines. The logger
// sends SINK the last N lines as `<log "TIMESTAMP" DETAIL>` messages, then
// `<log-caught-up>`, then, when following, each new line as it comes, and
// `<log-dropped N>` when N lines had to be skipped because the client did
// not keep up. Lines go out in batches, each followed by a sync round
// trip, and at most followQueue lines wait per client: a slow or stalled
// client costs the server a bounded amount of memory and slows nothing
// else down. Retracting the assertion ends it.

const (
	// totalHistoryBytes bounds the histories of all services together.
	totalHistoryBytes = 16 << 20
	followQueue       = 4096 // lines waiting for one client
	followBatch       = 256  // lines sent before each sync round trip
)

// ring is a service's recent lines, bounded in count and bytes.
type ring struct {
	evs   []Event
	head  int // index of the oldest
	n     int
	bytes int
}

func evSize(ev Event) int {
	if s, ok := ev.Line.(preserves.String); ok {
		return len(s) + 64
	}
	return 128
}

// add appends ev, dropping the oldest lines beyond max lines or
// historyBytes; it returns the change in the ring's bytes.
func (r *ring) add(ev Event, max int) int {
	before := r.bytes
	if r.evs == nil {
		r.evs = make([]Event, min(max, 64))
	}
	size := evSize(ev)
	for r.n > 0 && (r.n >= max || r.bytes+size > historyBytes) {
		r.dropOldest()
	}
	if r.n == len(r.evs) {
		// Grow (up to max): unroll into a bigger slice.
		grown := make([]Event, min(max, 2*len(r.evs)+1))
		for i := 0; i < r.n; i++ {
			grown[i] = r.evs[(r.head+i)%len(r.evs)]
		}
		r.evs, r.head = grown, 0
	}
	r.evs[(r.head+r.n)%len(r.evs)] = ev
	r.n++
	r.bytes += size
	return r.bytes - before
}

// dropOldest forgets the oldest line and returns its size.
func (r *ring) dropOldest() int {
	size := evSize(r.evs[r.head])
	r.bytes -= size
	r.evs[r.head] = Event{}
	r.head = (r.head + 1) % len(r.evs)
	r.n--
	return size
}

// remember keeps ev in s's ring, then trims the histories of all services
// to totalHistoryBytes, taking the oldest lines of the least recently
// heard services first.
func (l *logger) remember(s *svcState, ev Event) {
	l.histBytes += s.ring.add(ev, l.o.History)
	for l.histBytes > totalHistoryBytes {
		var victim *svcState
		for _, c := range l.svcs {
			if c.ring.n > 0 && c != s && (victim == nil || c.used < victim.used) {
				victim = c
			}
		}
		if victim == nil {
			victim = s
		}
		if victim.ring.n == 0 {
			return
		}
		l.histBytes -= victim.ring.dropOldest()
	}
}

// last appends the newest n lines, oldest first.
func (r *ring) last(out []Event, n int) []Event {
	for i := r.n - min(n, r.n); i < r.n; i++ {
		out = append(out, r.evs[(r.head+i)%len(r.evs)])
	}
	return out
}

// recent is the last n lines of service (nil: of every service), oldest
// first.
func (l *logger) recent(service preserves.Value, n int) []Event {
	if n <= 0 {
		return nil
	}
	if service != nil {
		s, ok := l.svcs[preserves.FormatText(service)]
		if !ok {
			return nil
		}
		return s.ring.last(nil, n)
	}
	var all []Event
	for _, s := range l.svcs {
		all = s.ring.last(all, n)
	}
	// The last n of every service (issue 26), interleaved in the order
	// they arrived: one chatty service no longer hides the others.
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
	return all
}

// follower is one `<log-tail …>` request.
type follower struct {
	service  preserves.Value // nil: all
	sink     *dataspace.Ref
	follow   bool
	pending  []Event
	limit    int  // most lines pending: the history, then followQueue
	caughtUp bool // <log-caught-up> sent
	dropped  int64
	inflight bool // waiting for a sync reply
	stopped  bool
}

// tail is the facet of one `<log-tail SERVICE N FOLLOW #:SINK>`.
func (l *logger) tail(t *dataspace.Turn, caps []preserves.Value) error {
	v := preserves.NewRecord(syndicatego.LabelLogTail, caps...)
	req, err := syndicatego.ParseLogTail(v)
	sink, ok := req.Sink.(*dataspace.Ref)
	if err != nil || !ok || sink == nil || req.Lines.Sign() < 0 {
		l.env.Logger.Warn().Str("request", preserves.Show(v)).Msg("malformed <log-tail SERVICE N FOLLOW #:SINK> request")
		return nil
	}
	f := &follower{sink: sink, follow: req.Follow}
	if req.Service != preserves.Bool(false) {
		f.service = req.Service
	}
	n := 1 << 20
	if req.Lines.IsInt64() {
		n = int(min(req.Lines.Int64(), 1<<20))
	}
	f.pending = l.recent(f.service, n)
	f.limit = len(f.pending) + followQueue
	if f.follow {
		l.followers[f] = struct{}{}
	}
	t.OnStop(func(*dataspace.Turn) error {
		f.stopped = true
		delete(l.followers, f)
		return nil
	})
	f.pump(t)
	return nil
}

// add queues a new line for the follower if it wants it.
func (f *follower) add(ev Event) {
	if f.service != nil && (ev.Service == nil || !preserves.Equal(f.service, ev.Service)) {
		return
	}
	if len(f.pending) >= f.limit {
		f.dropped++
		return
	}
	f.pending = append(f.pending, ev)
}

// pump sends the next batch unless one is still unconfirmed.
func (f *follower) pump(t *dataspace.Turn) {
	if f.inflight || f.stopped {
		return
	}
	if f.caughtUp && len(f.pending) == 0 && f.dropped == 0 {
		return
	}
	if f.dropped > 0 {
		t.Message(f.sink, syndicatego.LogSkipped{Count: big.NewInt(f.dropped)}.ToValue())
		f.dropped = 0
	}
	k := min(len(f.pending), followBatch)
	for _, ev := range f.pending[:k] {
		t.Message(f.sink, ev.Record())
	}
	f.pending = append(f.pending[:0], f.pending[k:]...)
	if !f.caughtUp && len(f.pending) == 0 {
		t.Message(f.sink, syndicatego.LogCaughtUp{}.ToValue())
		f.caughtUp = true
	}
	f.inflight = true
	t.Sync(f.sink, func(t *dataspace.Turn) error {
		f.inflight = false
		f.pump(t)
		return nil
	})
}
