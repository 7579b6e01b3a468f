package cgroup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotConfined is what Kill and Signal say for a Group without any
// cgroup directory: the caller signals the process group instead.
var ErrNotConfined = errors.New("cgroup: the daemon has no cgroup")

// Group is one daemon's cgroup: its directory in the unified hierarchy
// and in each v1 hierarchy the Manager uses.
type Group struct {
	m         *Manager
	v2        string            // "" when there is none
	fd        *os.File          // v2 directory, for CLONE_INTO_CGROUP
	v1        map[string]string // controller → directory
	unapplied []error
}

// New makes a cgroup for one run of daemon name and puts l in force. A
// limit that cannot be applied is in Unapplied; the error is for a cgroup
// that cannot be made at all.
//
// Each run gets a directory of its own, DirName(name)+"+N" ('+' is
// escaped in names, so no daemon's run can take another's): what is left
// of a run that is being killed never shares a cgroup with the next run.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	g := &Group{m: m, v1: map[string]string{}}
	base := DirName(name) + "+" + strconv.FormatInt(m.runs.Add(1), 10)
	if m.v2 != "" {
		dir := filepath.Join(m.v2, base)
		if err := mkdirTake(dir); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.v2 = dir
		fd, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			g.Remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.fd = fd
	}
	for _, c := range Controllers {
		inst, ok := m.v1[c]
		if !ok {
			continue
		}
		dir := filepath.Join(inst, base)
		if err := mkdirTake(dir); err != nil {
			g.Remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.v1[c] = dir
		if c == "memory" {
			// On the direct path the daemon joins its v1 groups just
			// after fork; its charges so far move with it, so that its
			// figures in status are not zero. Best effort: kernels that
			// dropped the knob have v2 memory instead.
			_ = os.WriteFile(filepath.Join(dir, "memory.move_charge_at_immigrate"), []byte("3"), 0)
		}
	}
	g.apply(l)
	return g, nil
}

// apply writes each limit of l that is set into the hierarchy that has
// its controller, v2 first.
func (g *Group) apply(l Limits) {
	for _, lim := range l.plan() {
		if !lim.set {
			continue
		}
		dir, sets := g.v2, lim.v2
		if !g.m.v2ctl[lim.controller] {
			dir, sets = g.v1[lim.controller], lim.v1
		}
		if dir == "" {
			g.unapplied = append(g.unapplied, &LimitError{Key: lim.key, Controller: lim.controller, Err: ErrNoController})
			continue
		}
		for _, s := range sets {
			if err := os.WriteFile(filepath.Join(dir, s.file), []byte(s.value), 0); err != nil {
				g.unapplied = append(g.unapplied, &LimitError{Key: lim.key, Controller: lim.controller, Err: err})
				break
			}
		}
	}
}

func mkdirTake(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// DirName is the directory of daemon name: `daemon-` and the name, bytes
// outside [A-Za-z0-9_.@-] written %XX; a name too long for a directory is
// cut and ends with a hash of the whole.
func DirName(name string) string {
	var b strings.Builder
	b.WriteString("daemon-")
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '.', c == '@', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	s := b.String()
	if len(s) > 200 {
		sum := sha256.Sum256([]byte(name))
		s = s[:180] + "~" + hex.EncodeToString(sum[:8])
	}
	return s
}

// Dirs are the group's directories by hierarchy: "v2", and each v1
// controller's name (the record a later server reopens them from).
func (g *Group) Dirs() map[string]string {
	out := map[string]string{}
	if g.v2 != "" {
		out["v2"] = g.v2
	}
	for c, d := range g.v1 {
		out[c] = d
	}
	return out
}

// Reopen is the group of dirs (as Dirs gave them), made by a server that
// is gone: to stop what is left in it and remove it. Only Signal, Kill,
// Procs, Populated and Remove apply. A directory that is not a daemon
// run's (`syndicate.…/daemon-…`) is left out.
func Reopen(dirs map[string]string) *Group {
	g := &Group{v1: map[string]string{}}
	for k, d := range dirs {
		d = filepath.Clean(d)
		if !filepath.IsAbs(d) || !strings.HasPrefix(filepath.Base(d), "daemon-") ||
			!strings.HasPrefix(filepath.Base(filepath.Dir(d)), "syndicate.") {
			continue
		}
		if k == "v2" {
			g.v2 = d
		} else if slices.Contains(Controllers, k) {
			g.v1[k] = d
		}
	}
	return g
}

// Unapplied are the limits not in force, each a *LimitError.
func (g *Group) Unapplied() []error { return g.unapplied }

// Confined reports whether the group has a directory in some hierarchy.
func (g *Group) Confined() bool { return g != nil && (g.v2 != "" || len(g.v1) > 0) }

// Path is the group's directory in the unified hierarchy, or else in the
// first v1 hierarchy ("" when it has none).
func (g *Group) Path() string {
	if g.v2 != "" {
		return g.v2
	}
	for _, c := range Controllers {
		if d, ok := g.v1[c]; ok {
			return d
		}
	}
	return ""
}

// SysProcAttr makes a process started with attr begin life in the
// group's v2 cgroup (clone3 with CLONE_INTO_CGROUP). The v1 directories
// are joined by Attach.
func (g *Group) SysProcAttr(attr *syscall.SysProcAttr) {
	if g.fd != nil {
		attr.UseCgroupFD = true
		attr.CgroupFD = int(g.fd.Fd())
	}
}

// V1Procs are the cgroup.procs files of the group's v1 directories: a
// process writes "0" into each to join them itself (the exec helper,
// before it execs the daemon).
func (g *Group) V1Procs() []string {
	var out []string
	for _, d := range g.v1dirs() {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// Attach moves process pid into the group's v1 directories (it is born
// in the v2 one).
func (g *Group) Attach(pid int) error {
	for _, f := range g.V1Procs() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: joining %s: %w", filepath.Dir(f), err)
		}
	}
	return nil
}

// v1dirs are the distinct v1 directories (cpu and cpuacct may share one).
func (g *Group) v1dirs() []string {
	var out []string
	for _, c := range Controllers {
		if d, ok := g.v1[c]; ok && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// procsDir is the directory whose cgroup.procs lists the group's
// processes.
func (g *Group) procsDir() string {
	if g.v2 != "" {
		return g.v2
	}
	if d := g.v1dirs(); len(d) > 0 {
		return d[0]
	}
	return ""
}

// Procs are the processes in the group now.
func (g *Group) Procs() []int {
	dir := g.procsDir()
	if dir == "" {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var pids []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Populated reports whether a process is left in the group.
func (g *Group) Populated() bool {
	if g.v2 != "" {
		for _, l := range strings.Split(readString(filepath.Join(g.v2, "cgroup.events")), "\n") {
			if v, ok := strings.CutPrefix(l, "populated "); ok {
				return v != "0"
			}
		}
	}
	return len(g.Procs()) > 0
}

// Signal sends sig to every process in the group, except the members of
// process group pgid (0: none), which the caller has signalled as a
// group already: a daemon's process must get an operator's HUP once, not
// once per way of reaching it (a shell's HUP trap ran twice). It serves
// `syndicate kill` and the SIGTERM of a stop; a process forked meanwhile
// may miss it, which Kill does not.
func (g *Group) Signal(sig syscall.Signal, pgid int) error {
	if !g.Confined() {
		return ErrNotConfined
	}
	for _, pid := range g.Procs() {
		if pgid > 0 {
			if pg, err := unix.Getpgid(pid); err == nil && pg == pgid {
				continue
			}
		}
		_ = unix.Kill(pid, sig)
	}
	return nil
}

// Kill SIGKILLs every process in the group. With cgroup v2 that is one
// write to cgroup.kill, which no fork can escape; a v1-only group is
// signalled process by process.
func (g *Group) Kill() error {
	if !g.Confined() {
		return ErrNotConfined
	}
	if g.v2 != "" {
		err := os.WriteFile(filepath.Join(g.v2, "cgroup.kill"), []byte("1"), 0)
		if err == nil {
			return nil
		}
	}
	return g.Signal(unix.SIGKILL, 0)
}

// Remove deletes the group's directories; they must be empty (wait for
// Populated to turn false after Kill). Removing twice is harmless.
func (g *Group) Remove() error {
	var errs []error
	if g.fd != nil {
		g.fd.Close()
		g.fd = nil
	}
	for _, d := range append(g.v1dirs(), g.v2) {
		if d == "" {
			continue
		}
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}
