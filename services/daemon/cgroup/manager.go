package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Controllers are the controllers daemons' limits use, in the order they
// are enabled.
var Controllers = []string{"memory", "pids", "cpu"}

// Options configure Open. The zero value is the server's: its own cgroups,
// found through /proc/self.
type Options struct {
	// Instance is the directory made under the server's cgroup in each
	// hierarchy; "" means "syndicate.PID".
	Instance string
	// MoveSelf lets Open move the process into Instance/server when that
	// is needed to enable controllers for the daemons (v2's "no internal
	// processes" rule). The server sets it; tests, which share their
	// cgroup, do not.
	MoveSelf bool
	// Mountinfo and Self name /proc/self/mountinfo and /proc/self/cgroup
	// ("" for those); tests point them at a fake tree.
	Mountinfo, Self string
	// Pid is the process MoveSelf moves (0 for this one).
	Pid int
}

// Manager makes the daemons' cgroups. It is read-only after Open, but for
// the run counter.
type Manager struct {
	runs    atomic.Int64    // numbers the groups New makes
	v2      string          // the instance directory in the unified hierarchy, or ""
	v2ctl   map[string]bool // controllers enabled for the daemons in v2
	v1      map[string]string
	moved   string // the leaf the process moved into, or ""
	created []string
	notes   []string
}

// Open finds the server's cgroups and makes its instance directories. It
// fails only when /proc cannot be read; what is missing (a hierarchy, write
// access, a controller) is in Notes, and the Manager does what it can.
func Open(o Options) (*Manager, error) {
	if o.Mountinfo == "" {
		o.Mountinfo = "/proc/self/mountinfo"
	}
	if o.Self == "" {
		o.Self = "/proc/self/cgroup"
	}
	if o.Pid == 0 {
		o.Pid = os.Getpid()
	}
	sweep := o.Instance == ""
	if sweep {
		o.Instance = "syndicate." + strconv.Itoa(os.Getpid())
	}
	at, err := discover(o.Mountinfo, o.Self)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	m := &Manager{v2ctl: map[string]bool{}, v1: map[string]string{}}
	if sweep {
		for _, dir := range append(slices.Collect(maps.Values(at.v1)), at.v2) {
			sweepStale(dir)
		}
	}
	if at.v2 == "" {
		m.note("no cgroup v2 hierarchy: a daemon's stop reaches its process group only")
	} else {
		m.openV2(at.v2, o)
	}
	for _, c := range Controllers {
		if m.v2ctl[c] {
			continue
		}
		dir, ok := at.v1[c]
		if !ok {
			m.note("no %s controller (cgroup v2 or v1): limits that need it are not applied", c)
			continue
		}
		inst := filepath.Join(dir, o.Instance)
		if err := m.mkdir(inst); err != nil {
			m.note("cgroup v1 %s not writable (%v): limits that need it are not applied", c, err)
			continue
		}
		m.v1[c] = inst
	}
	return m, nil
}

// openV2 makes the instance directory in the unified hierarchy and
// enables what it can of Controllers for the daemons.
func (m *Manager) openV2(own string, o Options) {
	inst := filepath.Join(own, o.Instance)
	if err := m.mkdir(inst); err != nil {
		m.note("cgroup v2 not writable (%v): a daemon's stop reaches its process group only", err)
		return
	}
	m.v2 = inst
	avail := fields(readString(filepath.Join(own, "cgroup.controllers")))
	var want []string
	for _, c := range Controllers {
		if slices.Contains(avail, c) {
			want = append(want, c)
		}
	}
	if len(want) == 0 {
		return
	}
	enabled := fields(readString(filepath.Join(own, "cgroup.subtree_control")))
	if o.MoveSelf && !isRoot(own) {
		leaf := filepath.Join(inst, "server")
		if err := m.mkdir(leaf); err == nil {
			err = os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(o.Pid)), 0)
			if err == nil {
				m.moved = leaf
			} else {
				m.note("cgroup v2: cannot move the server into %s: %v", leaf, err)
			}
		}
	}
	for _, c := range want {
		var err error
		if !slices.Contains(enabled, c) {
			err = os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte("+"+c), 0)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(inst, "cgroup.subtree_control"), []byte("+"+c), 0)
		}
		if err != nil {
			m.note("cgroup v2: cannot enable %s for the daemons (%v)", c, err)
			continue
		}
		m.v2ctl[c] = true
	}
}

// sweepStale removes what servers that died without closing their
// Manager left in dir: the empty directories of `syndicate.PID` whose
// process is gone. A directory still holding a process stays (rmdir
// fails), and so does everything of a live server.
func sweepStale(dir string) {
	if dir == "" {
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "syndicate."))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "syndicate.") || err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
			continue
		}
		inst := filepath.Join(dir, e.Name())
		subs, _ := os.ReadDir(inst)
		for _, sub := range subs {
			if sub.IsDir() {
				_ = os.Remove(filepath.Join(inst, sub.Name()))
			}
		}
		_ = os.Remove(inst)
	}
}

// Sweep removes, under this process's own cgroups, what servers that
// died without closing their Manager left: as Open does, without making
// anything. A harness that killed a server calls it once the server's
// daemons are gone (package ledger stops them).
func Sweep() error {
	at, err := discover("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	for _, dir := range append(slices.Collect(maps.Values(at.v1)), at.v2) {
		sweepStale(dir)
	}
	return nil
}

// isRoot reports whether dir is the root of its hierarchy (which may hold
// processes and enable controllers at once).
func isRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return errors.Is(err, fs.ErrNotExist)
}

func (m *Manager) note(format string, args ...any) {
	m.notes = append(m.notes, fmt.Sprintf(format, args...))
}

// mkdir makes dir (an existing one is taken over) and remembers to remove
// it on Close.
func (m *Manager) mkdir(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if err == nil {
		m.created = append(m.created, dir)
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// Notes are what is missing, one line each, for the server to log once.
func (m *Manager) Notes() []string { return m.notes }

// Confined reports whether daemons get a cgroup at all (else only their
// process group holds them together).
func (m *Manager) Confined() bool { return m.v2 != "" || len(m.v1) > 0 }

// Close removes the directories Open made once they are empty; the
// daemons' own must have been removed first ([Group.Remove]). A process
// that moved itself into a leaf stays there.
func (m *Manager) Close() error {
	var errs []error
	for _, dir := range slices.Backward(m.created) {
		if m.moved != "" && strings.HasPrefix(m.moved, dir) {
			continue
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readString reads a small cgroup file ("" when it cannot).
func readString(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func fields(s string) []string { return strings.Fields(s) }

// Where says which hierarchy serves controller c for the daemons: "v2",
// "v1" or "" (none).
func (m *Manager) Where(c string) string {
	switch {
	case m.v2ctl[c]:
		return "v2"
	case m.v1[c] != "":
		return "v1"
	}
	return ""
}

// Unified reports whether daemons get a v2 cgroup (joined at fork, killed
// with cgroup.kill).
func (m *Manager) Unified() bool { return m.v2 != "" }
