// Package cgrouptest opens cgroup managers for tests: each under its own
// instance directory, removed when the test ends, and failing rather than
// skipping under CI=true when the machine lacks what the test needs.
package cgrouptest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
)

var seq atomic.Int64

// Instance is a fresh instance directory name for one test.
func Instance() string {
	return fmt.Sprintf("syndicate-test.%d.%d", os.Getpid(), seq.Add(1))
}

// Open opens a Manager under the test process's own cgroups. need lists
// what the test cannot do without: "v2" (a writable unified hierarchy:
// join at fork, cgroup.kill) and controller names ("memory", "pids").
// Lacking one, the test is skipped, or fails when CI=true. The instance
// directories are removed when the test ends; a group the test left
// behind fails it.
func Open(t testing.TB, need ...string) *cgroup.Manager {
	t.Helper()
	m, err := cgroup.Open(cgroup.Options{Instance: Instance()})
	if err != nil {
		testutil.Missing(t, err.Error())
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("cgroups left behind: %v", err)
		}
	})
	for _, n := range need {
		ok := m.Where(n) != ""
		if n == "v2" {
			ok = m.Unified()
		}
		if !ok {
			testutil.Missing(t, fmt.Sprintf("cgroup %s not available: %v", n, m.Notes()))
		}
	}
	return m
}

// New makes a group for the test and, when the test ends, kills whatever
// is left in it and removes it.
func New(t testing.TB, m *cgroup.Manager, name string, l cgroup.Limits) *cgroup.Group {
	t.Helper()
	g, err := m.New(name, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Remove(t, g) })
	return g
}

// Remove kills what is left in g, waits for it to empty and removes it.
func Remove(t testing.TB, g *cgroup.Group) {
	t.Helper()
	if g.Populated() {
		_ = g.Kill()
		testutil.WaitFor(t, "the group to empty", func() bool { return !g.Populated() })
	}
	if err := g.Remove(); err != nil {
		t.Errorf("removing %s: %v", g.Path(), err)
	}
}

// Exited reports whether pid has exited (a zombie waiting for its reaper
// counts: it runs nothing).
func Exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
