package relay

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run when goroutines of this module outlive the tests:
// every actor, connection and task a test starts must be gone (shutdown
// waits for them) once the tests return. Only goroutines whose stack
// mentions the module are counted, so runtime and library helpers (signal
// handling, the netpoller) do not trip it.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := lingering(20 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines still running after the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// lingering polls until no goroutine but the caller runs module code,
// returning the stacks of those left when patience runs out.
func lingering(patience time.Duration) string {
	deadline := time.Now().Add(patience)
	for {
		buf := make([]byte, 1<<16)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		var left []string
		for i, g := range strings.Split(string(buf), "\n\n") {
			if i > 0 && strings.Contains(g, "github.com/syndicate-go/syndicate/") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
