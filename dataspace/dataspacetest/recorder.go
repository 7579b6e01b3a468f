package dataspacetest

import (
	"sync"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Recorder is an entity that keeps what is asserted at it and what is
// sent to it, for a test to poll from its own goroutine: the assertions
// present now, every change in arrival order ("+TEXT" when asserted,
// "-TEXT" when retracted), and the messages. Make it with NewRecorder.
type Recorder struct {
	dataspace.BaseEntity
	captured bool

	mu       sync.Mutex
	present  map[dataspace.Handle]preserves.Value
	history  []string
	messages []preserves.Value
}

// NewRecorder returns an empty Recorder that keeps values as they arrive.
func NewRecorder() *Recorder {
	return &Recorder{present: map[dataspace.Handle]preserves.Value{}}
}

// NewCaptureRecorder returns a Recorder for an Observe whose pattern is
// one capture: it keeps the captured value, not the captures sequence.
func NewCaptureRecorder() *Recorder {
	r := NewRecorder()
	r.captured = true
	return r
}

func (r *Recorder) value(v preserves.Value) preserves.Value {
	if r.captured {
		return preserves.Unwrap(v).(preserves.Sequence)[0]
	}
	return v
}

// Assert records v as present.
func (r *Recorder) Assert(_ *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	v = r.value(v)
	r.mu.Lock()
	r.present[h] = v
	r.history = append(r.history, "+"+preserves.FormatText(v))
	r.mu.Unlock()
	return nil
}

// Retract records that h's value is gone.
func (r *Recorder) Retract(_ *dataspace.Turn, h dataspace.Handle) error {
	r.mu.Lock()
	if v, ok := r.present[h]; ok {
		r.history = append(r.history, "-"+preserves.FormatText(v))
		delete(r.present, h)
	}
	r.mu.Unlock()
	return nil
}

// Message records v.
func (r *Recorder) Message(_ *dataspace.Turn, v preserves.Value) error {
	v = r.value(v)
	r.mu.Lock()
	r.messages = append(r.messages, v)
	r.mu.Unlock()
	return nil
}

// Note appends entry to the history, for a test that interleaves its own
// events with the recorded ones.
func (r *Recorder) Note(entry string) {
	r.mu.Lock()
	r.history = append(r.history, entry)
	r.mu.Unlock()
}

// Present returns the values asserted now, in no particular order.
func (r *Recorder) Present() []preserves.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]preserves.Value, 0, len(r.present))
	for _, v := range r.present {
		out = append(out, v)
	}
	return out
}

// Messages returns the messages received so far, in arrival order.
func (r *Recorder) Messages() []preserves.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]preserves.Value(nil), r.messages...)
}

// History returns the changes so far, in arrival order.
func (r *Recorder) History() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.history...)
}

// Has reports whether a value equal to v is asserted now.
func (r *Recorder) Has(v preserves.Value) bool {
	return r.Find(func(x preserves.Value) bool { return preserves.Equal(x, v) })
}

// Find reports whether some value asserted now satisfies match.
func (r *Recorder) Find(match func(preserves.Value) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.present {
		if match(v) {
			return true
		}
	}
	return false
}

// Count returns how many history entries equal entry.
func (r *Recorder) Count(entry string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.history {
		if e == entry {
			n++
		}
	}
	return n
}
