package testutil

import (
	"bytes"
	"slices"
	"strings"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use that keeps everything
// written to it, for tests to inspect. It exists because what tests capture
// is written from other goroutines than the test's own: a zerolog logger
// handed to an actor system writes from the actors' goroutines, and a child
// process's stdout and stderr are copied in by os/exec's goroutines, so a
// plain bytes.Buffer would race with the test reading it. The zero value is
// ready to use.
//
// The bytes are kept as written. Lines, Has and Count look at them line by
// line; zerolog writes each event as one line, so there a line is an event.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns what was written so far split into lines, without their
// newlines. A last line not yet ended by a newline is included: a writer
// that is still running may finish it later.
func (b *Buffer) Lines() []string {
	s := b.String()
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// Has reports whether some line contains every one of subs (all of them on
// the same line, so they describe one log event).
func (b *Buffer) Has(subs ...string) bool {
	return slices.ContainsFunc(b.Lines(), func(l string) bool { return containsAll(l, subs) })
}

// Count returns how many lines contain sub.
func (b *Buffer) Count(sub string) int {
	n := 0
	for _, l := range b.Lines() {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

func containsAll(s string, subs []string) bool {
	return !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) })
}
