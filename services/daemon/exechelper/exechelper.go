// Package exechelper puts a daemon's exec controls in force before its
// first instruction (issue 24): groups, user, umask, rlimits,
// no_new_privs and capabilities, then it execs the daemon.
//
// Go's SysProcAttr has no umask, rlimit, no-new-privileges or
// ambient-capability step, changing them in the server around a fork
// races with its other goroutines, and applying them after the start
// (prlimit) leaves a window. So the daemon service starts the server's own
// binary (/proc/self/exe) with argv[0] [Arg0] and the controls as
// argv[1]: [MaybeRun], called first thing in main (and in TestMain of the
// packages whose tests start daemons), recognises it, applies them on one
// locked OS thread (no_new_privs, capabilities and KEEPCAPS are per
// thread; the exec happens from that thread) and execs the daemon. What
// fails before the exec is written to the status descriptor, which the
// exec closes: the daemon service reads it to EOF, so an exec that
// happened and a failure are told apart exactly, and a failure is a
// cannot-start reason of the daemon.
//
// Order: the cgroup v1 directories and the rlimits and the bounding set
// while still privileged, then
// KEEPCAPS, groups, gid, uid, the kept capabilities (permitted,
// effective, inheritable, then ambient), umask, no_new_privs, and
// LISTEN_PID when LISTEN_FDS is given (socket activation: the daemon's pid
// is the helper's, known only here). Daemons without controls are started
// directly, as before.
package exechelper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
)

// Arg0 is argv[0] of the server binary re-executed as the helper.
const Arg0 = "syndicate-exec-helper"

// SelfPath is the binary the helper runs from: the running server's own,
// even when the file was replaced since.
const SelfPath = "/proc/self/exe"

// Config is what the helper applies, with ids resolved (Resolve).
type Config struct {
	SetUID, SetGID  bool
	UID, GID        int
	SetGroups       bool
	Groups          []int
	Umask           int // -1: unchanged
	Limits          []Limit
	NoNewPrivileges bool
	KeepCaps        bool  // Caps are the capabilities kept
	Caps            []int // capability numbers
	StatusFD        int   // where a failure is written; closed by the exec
	// Join are cgroup.procs files the helper writes "0" into first, while
	// still privileged: the daemon's cgroup v1 directories (a hybrid
	// system's memory and pids controllers), which clone3 cannot join at
	// fork as it joins the v2 one.
	Join []string `json:",omitempty"`
	Argv []string
}

// Limit is one rlimit.
type Limit struct {
	Resource   int
	Soft, Hard uint64
}

// ErrUnknownIdentity: the spec's user or group does not exist.
var ErrUnknownIdentity = errors.New("no such user or group")

// Resolve turns the spec's controls into a Config: names into ids, the
// user's groups from the group database unless groups is given.
func Resolve(x *externalservices.ExecControls, argv []string) (*Config, error) {
	c := &Config{Umask: -1, Argv: argv, NoNewPrivileges: x.NoNewPrivileges}
	if x.User != "" {
		u, err := lookupUser(x.User)
		if err != nil {
			return nil, err
		}
		c.SetUID, c.UID = true, atoi(u.Uid)
		c.SetGID, c.GID = true, atoi(u.Gid)
		if !x.HasGroups {
			gids, err := u.GroupIds()
			if err != nil {
				gids = []string{u.Gid} // no group database entry: its primary group only
			}
			c.SetGroups = true
			for _, g := range gids {
				c.Groups = append(c.Groups, atoi(g))
			}
		}
	}
	if x.Group != "" {
		gid, err := lookupGroup(x.Group)
		if err != nil {
			return nil, err
		}
		c.SetGID, c.GID = true, gid
	}
	if x.HasGroups {
		c.SetGroups, c.Groups = true, []int{}
		for _, g := range x.Groups {
			gid, err := lookupGroup(g)
			if err != nil {
				return nil, err
			}
			c.Groups = append(c.Groups, gid)
		}
	}
	if x.HasUmask {
		c.Umask = int(x.Umask)
	}
	for _, l := range x.Limits {
		c.Limits = append(c.Limits, Limit{Resource: l.Resource, Soft: l.Soft, Hard: l.Hard})
	}
	if x.HasCapabilities {
		c.KeepCaps, c.Caps = true, []int{}
		for _, cp := range x.Capabilities {
			c.Caps = append(c.Caps, cp.Number)
		}
	}
	return c, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func lookupUser(name string) (*user.User, error) {
	if _, err := strconv.Atoi(name); err == nil {
		if u, err := user.LookupId(name); err == nil {
			return u, nil
		}
		// A number with no passwd entry: that uid, with gid the same.
		return &user.User{Uid: name, Gid: name, Username: name}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: user %s", ErrUnknownIdentity, name)
	}
	return u, nil
}

func lookupGroup(name string) (int, error) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("%w: group %s", ErrUnknownIdentity, name)
	}
	return atoi(g.Gid), nil
}

// Args are the helper's argv for c.
func (c *Config) Args() []string {
	b, _ := json.Marshal(c)
	return append([]string{Arg0, string(b)}, c.Argv...)
}

// MaybeRun runs the helper when this process was started as one, and
// then never returns; otherwise it returns at once. Call it first in main.
func MaybeRun() {
	if len(os.Args) < 3 || os.Args[0] != Arg0 {
		return
	}
	runtime.LockOSThread() // every per-thread step and the exec on one thread
	var c Config
	if err := json.Unmarshal([]byte(os.Args[1]), &c); err != nil {
		fail(3, "exec helper: bad configuration: %v", err)
	}
	c.Argv = os.Args[2:]
	// The exec closes the status descriptor: EOF tells the server the
	// daemon runs.
	unix.CloseOnExec(c.StatusFD)
	status := os.NewFile(uintptr(c.StatusFD), "status")
	if err := c.apply(); err != nil {
		report(status, err)
	}
	err := c.exec()
	report(status, err)
}

// report writes err to the status descriptor and exits.
func report(status *os.File, err error) {
	var errno syscall.Errno
	msg := err.Error()
	if errors.As(err, &errno) {
		msg = strconv.Itoa(int(errno)) + " " + msg
	} else {
		msg = "0 " + msg
	}
	_, _ = status.WriteString(msg)
	os.Exit(127)
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

// apply puts the controls in force, in the order of the package doc.
func (c *Config) apply() error {
	for _, f := range c.Join {
		// A cgroup that cannot be joined is a limit not in force: the
		// daemon does not run without it (fail closed).
		if err := os.WriteFile(f, []byte("0"), 0); err != nil {
			return fmt.Errorf("cgroup: joining %s: %w", strings.TrimSuffix(f, "/cgroup.procs"), err)
		}
	}
	for _, l := range c.Limits {
		if err := unix.Setrlimit(l.Resource, &unix.Rlimit{Cur: l.Soft, Max: l.Hard}); err != nil {
			return fmt.Errorf("rlimit %d: %w", l.Resource, err)
		}
	}
	if c.KeepCaps {
		if err := dropBounding(c.Caps); err != nil {
			return err
		}
		if c.SetUID && c.UID != 0 {
			if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
				return fmt.Errorf("keepcaps: %w", err)
			}
		}
	}
	if err := c.setIDs(); err != nil {
		return err
	}
	if c.KeepCaps && c.SetUID && c.UID != 0 {
		if err := ambient(c.Caps); err != nil {
			return err
		}
	}
	if c.Umask >= 0 {
		unix.Umask(c.Umask)
	}
	if c.NoNewPrivileges {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	return nil
}

// setIDs sets the groups, then the gid, then the uid (the order that
// keeps the right to do the next).
func (c *Config) setIDs() error {
	if c.SetGroups {
		if err := syscall.Setgroups(c.Groups); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
	}
	if c.SetGID {
		if err := syscall.Setresgid(c.GID, c.GID, c.GID); err != nil {
			return fmt.Errorf("setgid %d: %w", c.GID, err)
		}
	}
	if c.SetUID {
		if err := syscall.Setresuid(c.UID, c.UID, c.UID); err != nil {
			return fmt.Errorf("setuid %d: %w", c.UID, err)
		}
	}
	return nil
}

// lastCap is the highest capability number of the running kernel.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil {
		return n
	}
	return unix.CAP_LAST_CAP
}

// dropBounding removes every capability but keep from the bounding set:
// not even a setuid-root program run later gets them back.
func dropBounding(keep []int) error {
	for cp := 0; cp <= lastCap(); cp++ {
		if !contains(keep, cp) {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(cp), 0, 0, 0); err != nil && err != unix.EINVAL {
				return fmt.Errorf("bounding set: drop %d: %w", cp, err)
			}
		}
	}
	return nil
}

// ambient keeps caps across the exec of a non-root daemon: permitted,
// effective and inheritable are exactly caps, and each is raised in the
// ambient set (which needs it in permitted and inheritable).
func ambient(caps []int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for _, cp := range caps {
		data[cp/32].Permitted |= 1 << (cp % 32)
	}
	for i := range data {
		data[i].Effective, data[i].Inheritable = data[i].Permitted, data[i].Permitted
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	for _, cp := range caps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(cp), 0, 0); err != nil {
			return fmt.Errorf("ambient capability %d: %w", cp, err)
		}
	}
	return nil
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// exec replaces the helper with the daemon, found in the daemon's PATH.
func (c *Config) exec() error {
	env := os.Environ()
	if os.Getenv("LISTEN_FDS") != "" {
		env = setEnv(env, "LISTEN_PID", strconv.Itoa(os.Getpid()))
	}
	prog := c.Argv[0]
	if !strings.Contains(prog, "/") {
		p, err := exec.LookPath(prog)
		if err != nil {
			return err
		}
		prog = p
	}
	return syscall.Exec(prog, c.Argv, env)
}

func setEnv(env []string, k, v string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// ParseStatus turns what a failed helper wrote into an error: the errno,
// when there is one, is wrapped (so that errors.Is(err, fs.ErrNotExist)
// holds for a missing program), with the helper's message.
func ParseStatus(b []byte) error {
	num, msg, _ := strings.Cut(string(b), " ")
	n, _ := strconv.Atoi(num)
	if n != 0 {
		return &StatusError{Msg: msg, Errno: syscall.Errno(n)}
	}
	return &StatusError{Msg: msg}
}

// StatusError is a failure the helper reported before the exec.
type StatusError struct {
	Msg   string
	Errno syscall.Errno // 0 if none
}

func (e *StatusError) Error() string { return e.Msg }

func (e *StatusError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}
