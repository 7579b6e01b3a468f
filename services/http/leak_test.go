package http

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if goroutines running this module's code (actors,
// linked tasks, connection handlers) are still alive once every test has
// shut its system down; they get a few seconds to wind down.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(20 * time.Second)
		for {
			left := moduleGoroutines()
			if left == "" {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goroutines still running after the tests:\n\n%s\n", left)
				code = 1
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	os.Exit(code)
}

// moduleGoroutines returns the stacks of other goroutines whose stack
// mentions the module, or "".
func moduleGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "github.com/syndicate-go/syndicate/") {
			left = append(left, g)
		}
	}
	return strings.Join(left, "\n\n")
}
