package testutil

import (
	"strings"
	"testing"
	"time"
)

func blockUntil(ch chan struct{}) { <-ch }

func TestLingeringSeesModuleGoroutines(t *testing.T) {
	release := make(chan struct{})
	go blockUntil(release)
	left := Lingering(50 * time.Millisecond)
	if !strings.Contains(left, "testutil.blockUntil") {
		t.Fatalf("a blocked module goroutine was not reported; got:\n%s", left)
	}
	close(release)
	if left := Lingering(5 * time.Second); left != "" {
		t.Fatalf("goroutines reported after they ended:\n%s", left)
	}
}
