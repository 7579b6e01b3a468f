package testutil

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

func TestBufferLinesHasCount(t *testing.T) {
	var b Buffer
	if b.String() != "" || b.Lines() != nil || b.Has() || b.Count("") != 0 {
		t.Fatalf("a fresh Buffer is not empty: %q %q", b.String(), b.Lines())
	}
	// Writes need not be whole lines: a line may arrive in pieces and one
	// write may carry several lines.
	for _, s := range []string{`{"level":"warn","message":"one"}` + "\n", `{"level":"info",`, `"message":"two"}` + "\nthree\nfour"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	want := []string{`{"level":"warn","message":"one"}`, `{"level":"info","message":"two"}`, "three", "four"}
	if got := b.Lines(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Lines() = %q, want %q", got, want)
	}
	if got, want := b.String(), want[0]+"\n"+want[1]+"\nthree\nfour"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if !b.Has(`"warn"`, "one") || !b.Has("two") || !b.Has("fou") {
		t.Error("Has misses substrings on one line")
	}
	if b.Has(`"warn"`, "two") || b.Has("three", "four") || b.Has("nowhere") {
		t.Error("Has matched substrings that are on different lines, or absent")
	}
	if n := b.Count("level"); n != 2 {
		t.Errorf(`Count("level") = %d, want 2`, n)
	}
	if n := b.Count(`"message"`); n != 2 {
		t.Errorf(`Count("message") = %d, want 2`, n)
	}
	// A trailing newline ends the last line without adding an empty one.
	b.Write([]byte("\n"))
	if got := b.Lines(); len(got) != 4 || got[3] != "four" {
		t.Errorf("after the final newline Lines() = %q", got)
	}
}

// Run with -race: writers on other goroutines and a reader on the test's
// never race, and no write is lost or torn.
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
			_ = b.Has("writer 0", "line 0")
		}
	}
	for w := 0; w < writers; w++ {
		if n := b.Count(fmt.Sprintf("writer %d ", w)); n != each {
			t.Errorf("writer %d: %d lines, want %d", w, n, each)
		}
	}
}
