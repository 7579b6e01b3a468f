package testutil

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// modulePath marks the goroutines the leak check counts: only those whose
// stack runs this module's code, so runtime and library helpers (signal
// handling, the netpoller) do not trip it.
const modulePath = "github.com/syndicate-go/syndicate/"

// LeakCheckMain runs the tests and then fails the run if goroutines of this
// module outlive them: every actor, connection and task a test starts must
// be gone (shutdown waits for them) once the tests return. Use it as a
// package's TestMain:
//
//	func TestMain(m *testing.M) { testutil.LeakCheckMain(m) }
func LeakCheckMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := Lingering(20 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines still running after the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// Lingering polls until no goroutine but the caller runs module code,
// returning the stacks of those left when patience runs out ("" if none).
func Lingering(patience time.Duration) string {
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
			if i > 0 && strings.Contains(g, modulePath) {
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
