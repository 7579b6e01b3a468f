package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// maxEvents bounds the events a feed holds for a slow browser; past it the
// queue is dropped and the view sends its whole state again (reset).
const maxEvents = 1000

// event is one Server-Sent Event: a name and a JSON document.
type event struct {
	name string
	data []byte
}

// feed hands a view's documents from its actor to the HTTP goroutine that
// writes them to the browser. The actor replaces the latest document of a
// kind (a state: only the newest matters) or appends an event (a change:
// each matters, up to maxEvents); the writer takes whatever is pending when
// it wakes, so a burst of changes becomes one write and a browser that
// reads slowly costs the server at most maxEvents events.
type feed struct {
	wake chan struct{} // capacity 1: "something is pending"

	mu      sync.Mutex
	docs    map[string][]byte // kind → latest document
	order   []string          // kinds in the order they were first set
	events  []event
	overrun bool // events were dropped: the view must send a reset
}

func newFeed() *feed {
	return &feed{wake: make(chan struct{}, 1), docs: map[string][]byte{}}
}

func (f *feed) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// set replaces the pending document of kind name.
func (f *feed) set(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
		name = "error"
	}
	f.mu.Lock()
	if _, ok := f.docs[name]; !ok {
		f.order = append(f.order, name)
	}
	f.docs[name] = b
	f.mu.Unlock()
	f.poke()
}

// push queues one event; it reports false when the queue overran (the
// caller then sends its state again with set, which clears the queue).
func (f *feed) push(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return true // not representable: skip it
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.overrun {
		return false
	}
	if len(f.events) >= maxEvents {
		f.events, f.overrun = nil, true
		return false
	}
	f.events = append(f.events, event{name, b})
	f.poke()
	return true
}

// resync sends the state document name, v, replacing every queued event
// (they are older than the state).
func (f *feed) resync(name string, v any) {
	f.mu.Lock()
	f.events, f.overrun = nil, false
	f.mu.Unlock()
	f.set(name, v)
}

// take returns what is pending, documents first.
func (f *feed) take() []event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []event
	for _, k := range f.order {
		out = append(out, event{k, f.docs[k]})
	}
	f.docs, f.order = map[string][]byte{}, nil
	out = append(out, f.events...)
	f.events = nil
	return out
}

// writeSSE streams f to w until ctx ends or done is closed (the view's
// actor stopped; its last documents are written first).
func writeSSE(ctx context.Context, w http.ResponseWriter, f *feed, done <-chan struct{}) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	write := func() bool {
		for _, e := range f.take() {
			// JSON has no raw newlines, so one data line carries it.
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data); err != nil {
				return false
			}
		}
		// A browser that stopped reading must not hold this goroutine
		// (and the view) forever.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		return rc.Flush() == nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
			if !write() {
				return
			}
		case <-done:
			write()
			return
		}
	}
}
