// Package ledger keeps, in the runtime directory, a record of the daemon
// processes a server runs, so that the next server on the same
// configuration can stop what a server killed without warning (SIGKILL,
// an out-of-memory kill, a crash) left running (issue 22 item 5).
//
// # The record
//
// Each server writes `server-PID.daemons` in the directory of its
// instance locks (services/instance). Its first line names the server:
// its pid and its start time (field 22 of /proc/PID/stat, in clock ticks
// since boot). Then one JSON line per event, appended with one write each:
// a process started (its daemon's name, pid, start time, stop timeout and
// cgroup directories) or a process gone. When the file holds far more
// events than live processes it is rewritten (to a temporary file, then
// renamed). A server that stops in order removes its record.
//
// # Recovery
//
// The instance lock of a configuration names the pid of the server that
// held it; a server that takes over the lock of a dead one calls
// [Recover] with that pid (and its own: a dead server may have had the
// same pid). Recover reads the record, checks that its server is really
// gone (no process with that pid and start time), and stops each recorded
// process that is still the same process (same pid, same start time: a
// pid the kernel gave to another process since is never signalled) and
// whatever is left in its cgroup: SIGTERM to its process group and its
// cgroup, SIGKILL (cgroup.kill) once its stop timeout (at most
// MaxRecoverWait) has passed, then the cgroup directories are removed. It
// returns what it found, for the log.
//
// # Limits
//
// Without a usable runtime directory (the lock is not taken either) there
// is no record. A process whose leader has exited and that has no cgroup
// (a setsid grandchild on a machine without cgroup v2) cannot be told
// from a stranger and is left alone. A cgroup directory is emptied only
// while its recorded leader still runs or the server that made it is
// gone: a live server that reuses the dead one's pid owns the directory
// name from then on.
package ledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Entry is one daemon process of a server.
type Entry struct {
	Name        string            `json:"name"` // the daemon's ID, as text
	Pid         int               `json:"pid"`
	Start       uint64            `json:"start"` // /proc/PID/stat starttime
	StopTimeout time.Duration     `json:"stopTimeout,omitempty"`
	Cgroup      map[string]string `json:"cgroup,omitempty"` // "v2" or v1 controller → directory
}

// event is one line of the record after the header.
type event struct {
	Op string `json:"op"` // "+" a process started, "-" it is gone
	ID uint64 `json:"id"`
	*Entry
}

// Ledger is a server's record. Its methods may be called from any
// goroutine (each daemon's runner adds and removes its own entries);
// the mutex orders the appends.
type Ledger struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	next   uint64
	live   map[uint64]Entry
	events int // lines after the header
	header string
}

// FileName is the record of server pid in dir.
func FileName(dir string, pid int) string {
	return filepath.Join(dir, "server-"+strconv.Itoa(pid)+".daemons")
}

// Create starts this process's record in dir, replacing any file of the
// same name (Recover it first).
func Create(dir string) (*Ledger, error) {
	pid := os.Getpid()
	start, err := StartTime(pid)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l := &Ledger{path: FileName(dir, pid), live: map[uint64]Entry{},
		header: "syndicate-server " + strconv.Itoa(pid) + " " + strconv.FormatUint(start, 10) + "\n"}
	if err := l.rewrite(); err != nil {
		return nil, err
	}
	return l, nil
}

// Path is the record's file.
func (l *Ledger) Path() string { return l.path }

// Add records a process that has started and returns its id for Remove.
// A failing write is returned, and the process is still run.
func (l *Ledger) Add(e Entry) (uint64, error) {
	if l == nil {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	id := l.next
	l.live[id] = e
	return id, l.append(event{Op: "+", ID: id, Entry: &e})
}

// Remove records that process id (and everything in its cgroup) is gone.
func (l *Ledger) Remove(id uint64) error {
	if l == nil || id == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.live[id]; !ok {
		return nil
	}
	delete(l.live, id)
	if l.events > 64 && l.events > 4*len(l.live) {
		return l.rewrite()
	}
	return l.append(event{Op: "-", ID: id})
}

// append writes one event line; l.mu is held.
func (l *Ledger) append(ev event) error {
	if l.f == nil {
		return nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	l.events++
	_, err = l.f.Write(append(b, '\n'))
	return err
}

// rewrite writes the header and the live entries to a new file and puts
// it in place; l.mu is held (or l is not shared yet).
func (l *Ledger) rewrite() error {
	tmp := l.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND|syscallNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(l.header)
	l.events = 0
	for id, e := range l.live {
		b, _ := json.Marshal(event{Op: "+", ID: id, Entry: &e})
		w.Write(append(b, '\n'))
		l.events++
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("ledger: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		f.Close()
		return fmt.Errorf("ledger: %w", err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f = f
	return nil
}

// Close removes the record: every process it names is gone (the server
// stopped in order).
func (l *Ledger) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// read parses a record: its server's pid and start time, and the entries
// still live at its end. A torn last line (the server died in the middle
// of a write) is skipped.
func read(path string) (pid int, start uint64, live map[uint64]Entry, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscallNoFollow, 0)
	if err != nil {
		return 0, 0, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return 0, 0, nil, fmt.Errorf("ledger %s: empty", path)
	}
	h := strings.Fields(sc.Text())
	if len(h) != 3 || h[0] != "syndicate-server" {
		return 0, 0, nil, fmt.Errorf("ledger %s: not a daemon record", path)
	}
	pid, _ = strconv.Atoi(h[1])
	start, _ = strconv.ParseUint(h[2], 10, 64)
	live = map[uint64]Entry{}
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Op == "+" && ev.Entry != nil:
			live[ev.ID] = *ev.Entry
		case ev.Op == "-":
			delete(live, ev.ID)
		}
	}
	return pid, start, live, sc.Err()
}

// StartTime is when process pid started, in clock ticks since boot
// (field 22 of /proc/PID/stat): with the pid, it names one process for
// good, since the kernel may give the pid to another later.
func StartTime(pid int) (uint64, error) {
	_, start, err := stat(pid)
	return start, err
}

// stat reads the state (field 3) and start time (field 22) of pid.
func stat(pid int) (state string, start uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) is in parentheses and may hold anything.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	var f []string
	if i >= 0 {
		f = strings.Fields(s[i+1:])
	}
	if len(f) < 20 {
		return "", 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0], start, err
}

// same reports whether pid is still the process that started at start.
func same(pid int, start uint64) bool {
	now, err := StartTime(pid)
	return err == nil && now == start
}

// running reports whether pid is still the process that started at
// start and has not exited (a zombie runs nothing).
func running(pid int, start uint64) bool {
	state, now, err := stat(pid)
	return err == nil && now == start && state != "Z" && state != "X"
}

// syscallNoFollow: the record is never read or written through a
// symbolic link (the runtime directory may be shared, as /tmp is).
const syscallNoFollow = unix.O_NOFOLLOW | unix.O_CLOEXEC
