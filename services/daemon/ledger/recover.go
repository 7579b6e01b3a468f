package ledger

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
)

// MaxRecoverWait bounds how long Recover lets a leftover process take to
// stop after SIGTERM (its recorded stopTimeout, else DefaultRecoverWait)
// before it is killed: the new server waits for it before it runs
// anything.
const (
	MaxRecoverWait     = 10 * time.Second
	DefaultRecoverWait = 5 * time.Second
)

// recoverPoll is how often Recover looks whether the leftovers are gone.
const recoverPoll = 20 * time.Millisecond

// How a leftover ended (Found.How).
const (
	HowGone    = "already gone" // nothing of it was left
	HowTerm    = "stopped with SIGTERM"
	HowKill    = "killed with SIGKILL after its stop timeout"
	HowStuck   = "still there after SIGKILL"
	HowUnowned = "cgroup not emptied: its server's pid runs another process now"
)

// Found is one process of a dead server's record and what became of it.
type Found struct {
	Server int // the dead server's pid
	Entry
	How string
}

// leftover is one entry being stopped.
type leftover struct {
	Found
	leader   bool          // the recorded process still runs
	group    *cgroup.Group // its cgroup, when it may be emptied
	deadline time.Time
	killed   bool
}

// Recover stops what the dead servers (their pids) left running, per
// their records in dir, removes the records, and says what it found. A
// record whose server still runs is left alone. It returns once every
// leftover is gone or was killed.
func Recover(dir string, servers []int) ([]Found, error) {
	var errs []error
	var all []*leftover
	slices.Sort(servers)
	for _, pid := range slices.Compact(servers) {
		path := FileName(dir, pid)
		hpid, hstart, live, err := read(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if same(hpid, hstart) && hpid != os.Getpid() {
			continue // that server runs: not ours to touch
		}
		// A cgroup directory is named after its server's pid; another
		// process with that pid now may be a server that took it over.
		owned := hpid == os.Getpid() || unix.Kill(hpid, 0) != nil
		for _, e := range live {
			all = append(all, begin(hpid, e, owned))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	finish(all)
	out := make([]Found, len(all))
	for i, l := range all {
		out[i] = l.Found
	}
	slices.SortFunc(out, func(a, b Found) int { return a.Pid - b.Pid })
	return out, errors.Join(errs...)
}

// begin sends SIGTERM to what is left of entry e of dead server srv.
func begin(srv int, e Entry, owned bool) *leftover {
	l := &leftover{Found: Found{Server: srv, Entry: e, How: HowGone}, leader: running(e.Pid, e.Start)}
	if len(e.Cgroup) > 0 {
		if g := cgroup.Reopen(e.Cgroup); g.Confined() && (l.leader || owned) {
			l.group = g
		} else if g.Confined() && g.Populated() {
			l.How = HowUnowned
		}
	}
	wait := e.StopTimeout
	if wait <= 0 {
		wait = DefaultRecoverWait
	}
	l.deadline = time.Now().Add(min(wait, MaxRecoverWait))
	if l.alive() {
		l.How = HowTerm
		l.signal(unix.SIGTERM)
	}
	return l
}

// signal sends sig to the leader's process group (Setpgid made its id
// the leader's pid), or to the leader alone if it left that group, and to
// the cgroup's other processes: each gets it once.
func (l *leftover) signal(sig unix.Signal) {
	pgid := 0
	if l.leader && running(l.Pid, l.Start) {
		if unix.Kill(-l.Pid, sig) == nil {
			pgid = l.Pid
		} else {
			_ = unix.Kill(l.Pid, sig)
		}
	}
	if l.group != nil {
		if sig == unix.SIGKILL {
			_ = l.group.Kill()
		} else {
			_ = l.group.Signal(sig, pgid)
		}
	}
}

// alive reports whether something of the leftover runs.
func (l *leftover) alive() bool {
	return (l.leader && running(l.Pid, l.Start)) || (l.group != nil && l.group.Populated())
}

// finish waits for the leftovers to stop, kills those past their
// deadline, and removes their cgroups.
func finish(all []*leftover) {
	giveUp := time.Now().Add(MaxRecoverWait + 5*time.Second)
	for {
		pending := false
		for _, l := range all {
			if !l.alive() {
				continue
			}
			pending = true
			if !l.killed && !time.Now().Before(l.deadline) {
				l.killed, l.How = true, HowKill
				l.signal(unix.SIGKILL)
			}
		}
		if !pending || time.Now().After(giveUp) {
			break
		}
		time.Sleep(recoverPoll)
	}
	for _, l := range all {
		if l.alive() {
			l.How = HowStuck
		}
		if l.group != nil {
			_ = l.group.Remove()
		}
	}
}
