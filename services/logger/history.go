package logger

import (
	"math"
	"math/big"
	"sort"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
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

// ring is a service's recent lines, bounded in count and bytes. A slot
// holds a daemon's line as its text and a pointer to what the lines of
// its read share (time, pid, stream), and becomes an Event only when it
// is read (issue 28): 40 bytes and no allocation per line, where a whole
// Event was 150 bytes and a boxed string. Any other event is a run of
// its own.
type ring struct {
	slots []slot
	head  int // index of the oldest
	n     int
	bytes int
}

// slot is one line of a ring.
type slot struct {
	seq    uint64
	text   string // a daemon's line, when run.daemon
	run    *lineRun
	size   int32 // evSize of its event
	binary bool  // text is not UTF-8: its line is a byte string
}

// lineRun is an event, or, when daemon, what consecutive lines of a
// daemon share: all of their Event but Seq and Line.
type lineRun struct {
	ev     Event
	daemon bool
}

// event is the slot's line as an Event.
func (sl *slot) event() Event {
	ev := sl.run.ev
	if sl.run.daemon {
		ev.Seq, ev.Line = sl.seq, daemonLine(sl.text, sl.binary)
	}
	return ev
}

// daemonLine is the `line` of a daemon's output line (services.OutputLine.
// LineValue): a string, or a byte string when the text is not UTF-8.
func daemonLine(text string, binary bool) preserves.Value {
	if binary {
		return preserves.ByteString(text)
	}
	return preserves.String(text)
}

func evSize(ev Event) int {
	if s, ok := ev.Line.(preserves.String); ok {
		return len(s) + 64
	}
	return 128
}

// daemonLineSize is evSize of a daemon line's event.
func daemonLineSize(text string, binary bool) int {
	if binary {
		return 128
	}
	return len(text) + 64
}

// eventSlot is the slot of an event that is not one of a daemon's lines.
func eventSlot(ev Event) slot {
	return slot{seq: ev.Seq, run: &lineRun{ev: ev}, size: int32(min(evSize(ev), math.MaxInt32))}
}

// slotOf is ev's slot in s's ring. A daemon's line that came as a
// `<log …>` message (while something observes the log) shares the run of
// the line before it when their time, pid and stream are the same, as the
// lines of one read do on the short way; any other event is a run of its
// own.
func (l *logger) slotOf(s *svcState, ev Event) slot {
	var text string
	var binary bool
	switch line := ev.Line.(type) {
	case preserves.String:
		text = string(line)
	case preserves.ByteString:
		text, binary = string(line), true
	default:
		return eventSlot(ev)
	}
	if ev.Source != services.SourceDaemon || len(ev.Extra) > 0 {
		return eventSlot(ev)
	}
	r := l.lastRun
	if r == nil || l.lastRunSvc != s || !r.ev.Time.Equal(ev.Time) || !sameValue(r.ev.Pid, ev.Pid) || !sameValue(r.ev.Stream, ev.Stream) {
		shared := ev
		shared.Seq, shared.Line = 0, nil
		r = &lineRun{ev: shared, daemon: true}
		l.lastRun, l.lastRunSvc = r, s
	}
	return slot{seq: ev.Seq, text: text, run: r, size: int32(daemonLineSize(text, binary)), binary: binary}
}

// sameValue is preserves.Equal, nil included.
func sameValue(a, b preserves.Value) bool {
	return (a == nil) == (b == nil) && (a == nil || preserves.Equal(a, b))
}

// add appends sl, dropping the oldest lines beyond max lines or
// historyBytes; it returns the change in the ring's bytes.
func (r *ring) add(sl slot, max int) int {
	before := r.bytes
	if r.slots == nil {
		r.slots = make([]slot, min(max, 64))
	}
	size := int(sl.size)
	for r.n > 0 && (r.n >= max || r.bytes+size > historyBytes) {
		r.dropOldest()
	}
	if r.n == len(r.slots) {
		// Grow (up to max): unroll into a bigger slice.
		grown := make([]slot, min(max, 2*len(r.slots)+1))
		for i := 0; i < r.n; i++ {
			grown[i] = r.slots[(r.head+i)%len(r.slots)]
		}
		r.slots, r.head = grown, 0
	}
	r.slots[(r.head+r.n)%len(r.slots)] = sl
	r.n++
	r.bytes += size
	return r.bytes - before
}

// dropOldest forgets the oldest line and returns its size.
func (r *ring) dropOldest() int {
	size := int(r.slots[r.head].size)
	r.bytes -= size
	r.slots[r.head] = slot{}
	r.head = (r.head + 1) % len(r.slots)
	r.n--
	return size
}

// remember keeps sl in s's ring, then trims the histories of all services
// to totalHistoryBytes, taking the oldest lines of the least recently
// heard services first.
func (l *logger) remember(s *svcState, sl slot) {
	l.histBytes += s.ring.add(sl, l.o.History)
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
		out = append(out, r.slots[(r.head+i)%len(r.slots)].event())
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
