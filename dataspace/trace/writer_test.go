package trace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/protocol"
	traceschema "github.com/syndicate-go/syndicate/dataspace/schemas/trace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

var waitFor = testutil.WaitFor

// readEntries parses a trace file back, checking that every line holds
// exactly one value.
func readEntries(tb testing.TB, path string) []*preserves.Record {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []*preserves.Record
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		r := preserves.NewTextReader(strings.NewReader(line), preserves.TextOptions{})
		v, err := r.Next()
		if err != nil {
			tb.Fatalf("line %d %q: %v", i+1, line, err)
		}
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			tb.Fatalf("line %d holds more than one value: %q", i+1, line)
		}
		rec, ok := v.(*preserves.Record)
		if !ok || rec.Label != traceschema.LabelTrace || len(rec.Fields) != 3 {
			tb.Fatalf("line %d is not <trace TS ACTOR ITEM>: %q", i+1, line)
		}
		if _, ok := rec.Fields[0].(preserves.Double); !ok {
			tb.Fatalf("line %d: timestamp is not a double: %q", i+1, line)
		}
		out = append(out, rec)
	}
	return out
}

func label(v preserves.Value) preserves.Value {
	if r, ok := v.(*preserves.Record); ok {
		return r.Label
	}
	return v
}

func field(v preserves.Value, i int) preserves.Value { return v.(*preserves.Record).Fields[i] }

// byActor groups entries by actor id, keeping their order.
func byActor(es []*preserves.Record) map[preserves.Value][]preserves.Value {
	m := map[preserves.Value][]preserves.Value{}
	for _, e := range es {
		m[e.Fields[1]] = append(m[e.Fields[1]], e.Fields[2])
	}
	return m
}

type msgEntity struct {
	dataspace.BaseEntity
	fn func(t *dataspace.Turn, v preserves.Value) error
}

func (e *msgEntity) Message(t *dataspace.Turn, v preserves.Value) error { return e.fn(t, v) }

var errCrash = errors.New("crash on purpose")

// A small program traced to a file: a server actor answers one request and
// stops; a second request makes it crash. The file reads back as
// TraceEntry records: each actor's start first, turns with causes, a stop
// last (`ok` or `<error …>`), and embedded capabilities as strings.
func TestFileTraceShapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.pr")
	w, err := NewFileWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sys := dataspace.NewSystem(dataspace.Options{Trace: w})

	refs := make(chan *dataspace.Ref, 2)
	good := sys.Spawn("good", func(t *dataspace.Turn) error {
		refs <- t.Create(&msgEntity{fn: func(t *dataspace.Turn, v preserves.Value) error {
			t.StopRoot()
			return nil
		}})
		t.PreventInertCheck()
		return nil
	})
	bad := sys.Spawn("bad", func(t *dataspace.Turn) error {
		refs <- t.Create(&msgEntity{fn: func(*dataspace.Turn, preserves.Value) error { return errCrash }})
		t.PreventInertCheck()
		return nil
	})
	gref, bref := <-refs, <-refs
	if gref.Actor() != good {
		gref, bref = bref, gref
	}
	client := sys.Spawn("client", func(t *dataspace.Turn) error {
		t.Message(gref, preserves.Rec("request", dataspace.Embed(bref)))
		t.Message(bref, preserves.Rec("request", dataspace.Embed(gref)))
		return nil
	})
	for _, a := range []*dataspace.Actor{good, bad, client} {
		select {
		case <-a.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not end", a.Name())
		}
	}
	if err := sys.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Dropped() != 0 {
		t.Fatalf("%d records dropped", w.Dropped())
	}

	entries := readEntries(t, path)
	if uint64(len(entries)) != w.Written() {
		t.Fatalf("%d entries read, %d written", len(entries), w.Written())
	}
	acts := byActor(entries)
	turnIDs := map[preserves.Value]bool{}
	for _, items := range acts {
		for _, it := range items {
			if label(it) == traceschema.LabelTurn {
				turnIDs[field(it, 0)] = true
			}
		}
	}
	for _, c := range []struct {
		a    *dataspace.Actor
		stop preserves.Value
	}{{good, symOK}, {bad, protocol.LabelError}, {client, symOK}} {
		items := acts[preserves.Int(c.a.ID())]
		if len(items) < 3 {
			t.Fatalf("%s: %d entries, want start, turns, stop", c.a.Name(), len(items))
		}
		checkActorEntries(t, c.a.Name(), items, c.stop, turnIDs)
	}
	// The crash is an <error "message" detail>.
	bi := acts[preserves.Int(bad.ID())]
	status := field(bi[len(bi)-1], 0)
	if msg, ok := field(status, 0).(preserves.String); !ok || !strings.Contains(string(msg), "crash on purpose") {
		t.Fatalf("bad's exit status %v", status)
	}
	checkDequeuedRequest(t, acts[preserves.Int(good.ID())], bref)
}

// checkDequeuedRequest checks that one of a server actor's turns
// (items) dequeues the request message, whose embedded capability bref
// is written as a descriptive string.
func checkDequeuedRequest(t *testing.T, items []preserves.Value, bref *dataspace.Ref) {
	t.Helper()
	// The good actor's request turn dequeues the message; the embedded
	// capability in it is written as a descriptive string.
	found := false
	for _, it := range items {
		if label(it) != traceschema.LabelTurn {
			continue
		}
		for _, act := range field(it, 2).(preserves.Sequence) {
			if label(act) != traceschema.LabelDequeue {
				continue
			}
			detail := field(field(act, 0), 1) // <event TARGET DETAIL>
			if label(detail) != traceschema.LabelMessage {
				continue
			}
			body := field(detail, 0) // <value V>
			want := preserves.Rec("request", preserves.String(bref.String()))
			if !preserves.Equal(field(body, 0), want) {
				t.Fatalf("dequeued body %v, want %v", body, want)
			}
			if label(field(it, 1)) != traceschema.LabelCausedBy {
				t.Fatalf("request turn cause %v", field(it, 1))
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no dequeued request message in the good actor's turns")
	}
}

// checkActorEntries checks the trace entries of one actor: its start,
// turns caused by known turns or from outside, its stop with the given
// status label.
func checkActorEntries(t *testing.T, name string, items []preserves.Value, stop preserves.Value, turnIDs map[preserves.Value]bool) {
	t.Helper()
	first, last := items[0], items[len(items)-1]
	if label(first) != traceschema.LabelStart || !preserves.Equal(field(first, 0), preserves.Rec("named", preserves.String(name))) {
		t.Fatalf("%s: first entry %v", name, first)
	}
	if label(last) != traceschema.LabelStop || label(field(last, 0)) != stop {
		t.Fatalf("%s: last entry %v, want a stop with %v", name, last, stop)
	}
	for _, it := range items[1 : len(items)-1] {
		if label(it) != traceschema.LabelTurn {
			t.Fatalf("%s: middle entry %v is not a turn", name, it)
		}
		cause := field(it, 1)
		switch label(cause) {
		case traceschema.LabelCausedBy:
			if !turnIDs[field(cause, 0)] {
				t.Fatalf("%s: turn %v caused by an unknown turn", name, it)
			}
		case traceschema.LabelExternal, traceschema.LabelCleanup, traceschema.LabelLinkedTaskRelease:
		default:
			t.Fatalf("%s: turn %v has cause %v", name, it, cause)
		}
		if _, ok := field(it, 2).(preserves.Sequence); !ok {
			t.Fatalf("%s: turn actions are not a sequence: %v", name, it)
		}
	}
}

// blockingWriter blocks every Write until released, announcing the first.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func stopRecord(id uint64) *dataspace.TraceRecord {
	return &dataspace.TraceRecord{Time: time.Now(), Actor: id, Kind: dataspace.TraceKindStop, Status: dataspace.Normal}
}

// When the output is stuck, Trace neither blocks nor grows without bound:
// records beyond the buffer are dropped, counted and reported.
func TestTraceDropsWhenStuck(t *testing.T) {
	out := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	logs := &testutil.Buffer{}
	w := NewWriter(out, Options{Buffer: 2, FlushInterval: time.Millisecond, Logger: zerolog.New(logs)})
	w.Trace(stopRecord(1))
	<-out.entered // the writer goroutine is now stuck in a flush
	for i := 0; i < 10; i++ {
		w.Trace(stopRecord(uint64(i + 2)))
	}
	if got := w.Dropped(); got != 8 {
		t.Fatalf("dropped %d, want 8 (10 offered, 2 buffered)", got)
	}
	close(out.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Written() != 3 {
		t.Fatalf("written %d, want 3", w.Written())
	}
	out.mu.Lock()
	lines := strings.Count(out.buf.String(), "\n")
	out.mu.Unlock()
	if lines != 3 {
		t.Fatalf("%d lines written, want 3", lines)
	}
	if !strings.Contains(logs.String(), `"dropped_total":8`) {
		t.Fatalf("drops not reported: %s", logs.String())
	}
	// After Close, Trace is ignored and Close reports ErrClosed.
	w.Trace(stopRecord(99))
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// Waiting records are bounded by their actions too, not only by count.
func TestTraceBoundsPendingActions(t *testing.T) {
	out := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	w := NewWriter(out, Options{Buffer: 100, MaxPendingActions: 20, FlushInterval: time.Millisecond})
	w.Trace(stopRecord(1))
	<-out.entered // stuck in a flush, nothing waiting
	big := &dataspace.TraceRecord{Time: time.Now(), Actor: 1, Kind: dataspace.TraceKindTurn,
		Turn: &dataspace.TraceTurn{ID: 1, Cause: dataspace.TraceCause{Kind: dataspace.CauseCleanup}, Actions: make([]dataspace.TraceAction, 15)}}
	w.Trace(big)           // weight 16: fits
	w.Trace(big)           // 32 > 20: dropped
	w.Trace(stopRecord(2)) // 17: fits
	if got := w.Dropped(); got != 1 {
		t.Fatalf("dropped %d, want 1", got)
	}
	close(out.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Written() != 3 {
		t.Fatalf("written %d, want 3", w.Written())
	}
}

// Entries become readable within the flush interval, without Close.
func TestTracePeriodicFlush(t *testing.T) {
	out := &testutil.Buffer{}
	w := NewWriter(out, Options{FlushInterval: 5 * time.Millisecond})
	defer w.Close()
	w.Trace(&dataspace.TraceRecord{Time: time.Now(), Actor: 7, Kind: dataspace.TraceKindStart, Name: "x"})
	waitFor(t, "the entry to be flushed", func() bool { return strings.HasSuffix(out.String(), "\n") })
	v, err := preserves.ParseText(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := preserves.Rec("start", preserves.Rec("named", preserves.String("x")))
	if !preserves.Equal(field(v, 2), want) || !preserves.Equal(field(v, 1), preserves.Int(7)) {
		t.Fatalf("entry %v", v)
	}
}

type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

// A write error stops tracing (records are dropped from then on) and is
// returned by Close; it never reaches the runtime.
func TestTraceWriteError(t *testing.T) {
	w := NewWriter(failingWriter{}, Options{FlushInterval: time.Millisecond})
	w.Trace(stopRecord(1))
	waitFor(t, "the write error", func() bool {
		w.Trace(stopRecord(2))
		return w.Dropped() > 0
	})
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Close: %v, want the write error", err)
	}
}

func TestEntryShapes(t *testing.T) {
	at := time.Unix(1700000000, 500_000_000)
	turn := &dataspace.TraceTurn{ID: 5, Cause: dataspace.TraceCause{Kind: dataspace.CauseTaskRelease, Task: 3}, Actions: []dataspace.TraceAction{
		{Kind: dataspace.ActEnqueue, Event: dataspace.TraceAssert, Target: dataspace.TraceTarget{Actor: 2, Facet: 4, OID: 6}, Value: preserves.Int(1), Handle: 8},
		{Kind: dataspace.ActDequeueInternal, Event: dataspace.TraceMessage, Target: dataspace.TraceTarget{Actor: 1, Facet: 4, OID: 9}},
		{Kind: dataspace.ActEnqueue, Event: dataspace.TraceSync, Target: dataspace.TraceTarget{Actor: 2, Facet: 4, OID: 6}, Peer: dataspace.TraceTarget{Actor: 1, Facet: 3, OID: 10}},
		{Kind: dataspace.ActDequeue, Event: dataspace.TraceRetract, Target: dataspace.TraceTarget{Actor: 1, Facet: 3, OID: 11}, Handle: 12},
		{Kind: dataspace.ActSpawn, Child: 13, Link: true},
		{Kind: dataspace.ActLink, Child: 13, ChildToParent: 14, ParentToChild: 15},
		{Kind: dataspace.ActFacetStart, Path: []dataspace.FacetID{1, 4}},
		{Kind: dataspace.ActFacetStop, Path: []dataspace.FacetID{1, 4}, Reason: dataspace.StopInert},
		{Kind: dataspace.ActLinkedTaskStart, TaskName: "t", Task: 16},
	}}
	got := preserves.FormatText(Entry(&dataspace.TraceRecord{Time: at, Actor: 1, Kind: dataspace.TraceKindTurn, Turn: turn}))
	want := `<trace 1.7000000005e+09 1 <turn 5 <linked-task-release 3 normal> [` +
		`<enqueue <event <entity 2 4 6> <assert <value 1> 8>>> ` +
		`<dequeue-internal <event <entity 1 4 9> <message <opaque "internal continuation">>>> ` +
		`<enqueue <event <entity 2 4 6> <sync <entity 1 3 10>>>> ` +
		`<dequeue <event <entity 1 3 11> <retract 12>>> ` +
		`<spawn #t 13> <link 1 14 13 15> <facet-start [1 4]> <facet-stop [1 4] inert> ` +
		`<linked-task-start <named "t"> 16>]>>`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	stop := Entry(&dataspace.TraceRecord{Time: at, Actor: 1, Kind: dataspace.TraceKindStop, Status: dataspace.Failed,
		Err: &dataspace.PanicError{Value: "oops"}})
	if s := preserves.FormatText(field(stop, 2)); s != `<stop <error "dataspace: panic in actor: oops" "oops">>` {
		t.Fatalf("stop %s", s)
	}
	for _, c := range []struct {
		cause dataspace.TraceCause
		want  string
	}{
		{dataspace.TraceCause{Kind: dataspace.CauseDelay, Turn: 4, Period: 1500 * time.Millisecond}, `<delay 4 1.5>`},
		{dataspace.TraceCause{Kind: dataspace.CausePeriodic, Period: time.Second}, `<periodic-activation 1.0>`},
		{dataspace.TraceCause{Kind: dataspace.CauseCleanup}, `<cleanup>`},
		{dataspace.TraceCause{Kind: dataspace.CauseTurn, Turn: 2}, `<caused-by 2>`},
		{dataspace.TraceCause{Kind: dataspace.CauseExternal, Description: "release"}, `<external "release">`},
	} {
		e := Entry(&dataspace.TraceRecord{Time: at, Actor: 1, Kind: dataspace.TraceKindTurn, Turn: &dataspace.TraceTurn{ID: 9, Cause: c.cause}})
		if s := preserves.FormatText(field(field(e, 2), 1)); s != c.want {
			t.Fatalf("cause %s, want %s", s, c.want)
		}
	}
	anon := Entry(&dataspace.TraceRecord{Time: at, Actor: 1, Kind: dataspace.TraceKindStart})
	if s := preserves.FormatText(field(anon, 2)); s != `<start <anonymous>>` {
		t.Fatalf("start %s", s)
	}
}

type payload struct{}

func TestDescribe(t *testing.T) {
	plain := preserves.Rec("a", preserves.Sequence{preserves.Int(1)})
	if Describe(plain) != preserves.Value(plain) {
		t.Fatal("a value without embedded parts was copied")
	}
	v := preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("k"), Value: preserves.NewSet(preserves.NewEmbedded(payload{}))},
		preserves.DictEntry{Key: preserves.Symbol("z"), Value: preserves.Annotate(preserves.Int(2), preserves.String("note"))},
	)
	got := preserves.FormatText(Describe(v))
	if got != `{k: #{"embedded<trace.payload>"}, z: 2}` {
		t.Fatalf("got %s", got)
	}
}

// counter counts the messages it receives and signals when it has n.
type counter struct {
	dataspace.BaseEntity
	n    int
	want int
	done chan struct{}
}

func (c *counter) Message(*dataspace.Turn, preserves.Value) error {
	c.n++
	if c.n == c.want {
		close(c.done)
	}
	return nil
}

// pump sends n messages to a counter in another actor, 100 per turn, and
// waits until all have arrived.
func pump(tb testing.TB, sys *dataspace.System, n int) {
	tb.Helper()
	c := &counter{want: n, done: make(chan struct{})}
	refs := make(chan *dataspace.Ref, 1)
	sys.Spawn("counter", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		refs <- t.Create(c)
		return nil
	})
	ref := <-refs
	frs := make(chan dataspace.FacetRef, 1)
	sys.Spawn("sender", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		frs <- t.FacetRef()
		return nil
	})
	fr := <-frs
	msg := preserves.Rec("m", preserves.Int(1))
	for sent := 0; sent < n; {
		k := min(100, n-sent)
		fr.Activate(func(t *dataspace.Turn) error {
			for i := 0; i < k; i++ {
				t.Message(ref, msg)
			}
			return nil
		})
		sent += k
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		tb.Fatal("messages did not arrive")
	}
}

// A trace output that never accepts a byte does not slow the runtime
// down to its pace: the workload completes and the excess is dropped.
func TestStuckTraceDoesNotBlockRuntime(t *testing.T) {
	out := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	w := NewWriter(out, Options{Buffer: 16, FlushInterval: time.Millisecond})
	sys := dataspace.NewSystem(dataspace.Options{Trace: w})
	pump(t, sys, 20000)
	if err := sys.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Dropped() == 0 {
		t.Fatal("nothing dropped although the output never accepted a byte")
	}
	close(out.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTracedMessages measures delivery with tracing on, rendering to
// io.Discard (msgs/s; compare BenchmarkPublish/PubSub in dataspace for the
// untraced runtime). Records the writer could not keep up with are
// reported as dropped/op.
func BenchmarkTracedMessages(b *testing.B) {
	w := NewWriter(io.Discard, Options{})
	sys := dataspace.NewSystem(dataspace.Options{Trace: w})
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	pump(b, sys, b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	if err := sys.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(w.Dropped())/float64(b.N), "dropped/op")
}
