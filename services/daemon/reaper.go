package daemon

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Reaping adopted orphans without stealing our own children's exit statuses.
//
// When the server is PID 1 (a container's init) or has set
// PR_SET_CHILD_SUBREAPER, processes orphaned anywhere below it — typically
// grandchildren of a daemon whose shell exited — are re-parented to it and
// stay zombies until it waits for them. A classic reaper loops on
// wait4(-1, WNOHANG), but that would also collect our own daemon children
// and the goroutine blocked in their exec.Cmd.Wait would then lose the exit
// status (and report a bogus error).
//
// The reaper therefore never waits for "any child". On SIGCHLD (and on a
// slow backstop tick) it lists the zombies whose parent is this process by
// scanning /proc/*/stat, and calls wait4 on each specific pid that is NOT in
// the children table. The table holds every child this package started and
// has not yet reaped itself. Registration is made atomic with fork by a
// read/write lock: starts hold the read lock across cmd.Start and the table
// insert (so starts run concurrently), and a reaper pass holds the write
// lock, so it never sees a freshly forked child of ours that is not yet in
// the table. A pid leaves the table only after its own Wait returned, so the
// one goroutine that owns each child is always the one that reaps it.
//
// Limitation: children started by other packages of the same process with
// os/exec directly are not in the table; when the reaper is running, they
// should be started through this package (or be tolerant of ECHILD).

// childTable is the set of live children started by this package.
type childTable struct {
	fork sync.RWMutex // read: a start in progress; write: a reaper pass
	mu   sync.Mutex   // guards pids
	pids map[int]struct{}
}

var children = &childTable{pids: map[int]struct{}{}}

func (c *childTable) start(cmd *exec.Cmd) error {
	c.fork.RLock()
	defer c.fork.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	c.mu.Lock()
	c.pids[cmd.Process.Pid] = struct{}{}
	c.mu.Unlock()
	return nil
}

func (c *childTable) remove(pid int) {
	c.mu.Lock()
	delete(c.pids, pid)
	c.mu.Unlock()
}

func (c *childTable) has(pid int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pids[pid]
	return ok
}

// BecomeSubreaper sets PR_SET_CHILD_SUBREAPER on this process, so orphans
// below it are re-parented here instead of to init.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// IsSubreaper reports whether orphans are re-parented to this process: it
// is PID 1 or has PR_SET_CHILD_SUBREAPER set.
func IsSubreaper() bool {
	if os.Getpid() == 1 {
		return true
	}
	// PR_GET_CHILD_SUBREAPER stores an int through its pointer argument;
	// a heap object does not move, and KeepAlive holds it past the call.
	v := new(int32)
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(v)), 0, 0, 0)
	runtime.KeepAlive(v)
	return err == nil && *v != 0
}

// reaperBackstop bounds how long an orphan can stay a zombie if a SIGCHLD
// was coalesced away while a pass was running.
const reaperBackstop = 2 * time.Second

// StartReaper starts reaping adopted orphans (see the comment above) when
// this process is PID 1 or a subreaper, and returns a function that stops it
// and waits for its goroutine. Otherwise it does nothing (orphans go to
// init) and the returned function is a no-op.
func StartReaper(log zerolog.Logger) (stop func()) {
	if !IsSubreaper() {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(reaperBackstop)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
			case <-tick.C:
			}
			for _, pid := range reapOrphans() {
				log.Debug().Int("pid", pid).Msg("reaped adopted orphan")
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		cancel()
		<-done
	}
}

// reapOrphans performs one pass and returns the pids it reaped.
func reapOrphans() []int {
	children.fork.Lock()
	defer children.fork.Unlock()
	var reaped []int
	for _, pid := range zombieChildren(os.Getpid()) {
		if children.has(pid) {
			continue // ours: its own Wait goroutine reaps it
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			reaped = append(reaped, pid)
		}
	}
	return reaped
}

// zombieChildren lists the zombie processes whose parent is ppid. It
// reads only ppid's children, from each of its threads' children lists
// (an orphan is re-parented to one of them), not every process's stat:
// the backstop pass runs every two seconds, and on a busy machine a scan
// of all of /proc cost CPU and garbage in proportion to every process on
// it, while the server itself was idle. Kernels without the children
// lists (CONFIG_PROC_CHILDREN) get the whole scan.
func zombieChildren(ppid int) []int {
	lists, _ := filepath.Glob("/proc/" + strconv.Itoa(ppid) + "/task/*/children")
	var stats []string
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			stats = append(stats, "/proc/"+f+"/stat")
		}
	}
	if len(lists) == 0 {
		stats, _ = filepath.Glob("/proc/[0-9]*/stat")
	}
	var out []int
	for _, p := range stats {
		pid, st, parent, ok := readStat(p)
		if ok && parent == ppid && st == 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// readStat parses pid, state and ppid from a /proc/PID/stat file. The
// command name is in parentheses and may itself contain spaces or ')', so
// the fields are taken after the last ')'.
func readStat(path string) (pid int, state byte, ppid int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, false
	}
	return parseStat(string(b))
}

// parseStat parses the content of a /proc/PID/stat file.
func parseStat(s string) (pid int, state byte, ppid int, ok bool) {
	var err error
	open := strings.IndexByte(s, ' ')
	closeIdx := strings.LastIndexByte(s, ')')
	if open < 0 || closeIdx < 0 || closeIdx+4 > len(s) {
		return 0, 0, 0, false
	}
	pid, err = strconv.Atoi(s[:open])
	if err != nil {
		return 0, 0, 0, false
	}
	f := strings.Fields(s[closeIdx+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, 0, false
	}
	return pid, f[0][0], ppid, true
}
