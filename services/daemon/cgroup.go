package daemon

import (
	"context"
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/exechelper"
)

// A cgroup per daemon run (issue 24 item 3; package cgroup has the
// design). With a cgroup.Manager (Options.Cgroups), each process is born
// in a cgroup of its own (CLONE_INTO_CGROUP) and joins the v1
// controllers' before it execs (the exec helper, for a daemon with limits
// or exec controls) or right after the fork; its stop signals the whole cgroup, so a
// grandchild that left the process group with setsid is stopped too, and
// what is left once the leader is gone is killed with cgroup.kill. The
// cgroup is removed when it is empty. Without a Manager, or when the
// cgroup cannot be made, the process group is all there is, as before;
// the reason is in the daemon's status.

// groupGone bounds the wait for a killed cgroup to empty before it is
// removed (a process in uninterruptible sleep dies late).
const groupGone = 5 * time.Second

// ProcHandle is a running process as the worker sees it: what it may do
// to it from outside its runner (`syndicate kill`, the status figures).
type ProcHandle struct {
	Pid    int
	Cgroup string   // the process's cgroup directory, "" without one
	Notes  []string // cgroup trouble, limits not in force
	p      *process
}

// ErrExited: the process is gone (its pid may be another's by now).
var ErrExited = errors.New("daemon: the process has exited")

// Signal sends sig to every process of the daemon's run: its cgroup, else
// its process group.
func (h *ProcHandle) Signal(sig syscall.Signal) error {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	if h.p.lc.phase == phaseExited {
		return ErrExited
	}
	h.p.signalAll(sig)
	return nil
}

// Stats are the figures of the process's cgroup (ok false without one,
// or once the process has exited).
func (h *ProcHandle) Stats() (cgroup.Stats, bool) {
	h.p.mu.Lock()
	exited := h.p.lc.phase == phaseExited
	h.p.mu.Unlock()
	if h.p.group == nil || exited {
		return cgroup.Stats{}, false
	}
	return h.p.group.Stats(), true
}

// Exited reports whether the process has exited (its handle serves
// nothing any more).
func (h *ProcHandle) Exited() bool {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.p.lc.phase == phaseExited
}

// makeGroup makes the cgroup of this run and arranges for the child to
// be born in it.
func (p *process) makeGroup() {
	m := p.hooks.cgroups
	if m == nil || !m.Confined() {
		return
	}
	g, err := m.New(p.hooks.name, cgroupLimits(p.spec))
	if err != nil {
		p.notes = append(p.notes, "no cgroup, process group only: "+err.Error())
		return
	}
	for _, e := range g.Unapplied() {
		p.notes = append(p.notes, e.Error())
	}
	p.group = g
	g.SysProcAttr(p.cmd.SysProcAttr)
	join := g.V1Procs()
	if len(join) == 0 {
		return
	}
	// The v1 directories are joined before the daemon's first
	// instruction by the exec helper, when it runs anyway or when a limit
	// rides on them; else right after the fork (attachGroup).
	if p.helper == nil && p.spec.Cgroup != (externalservices.CgroupLimits{}) {
		p.helper, _ = exechelper.Resolve(&externalservices.ExecControls{}, p.spec.Argv)
	}
	if p.helper != nil {
		p.helper.Join = join
	}
}

// attachGroup moves the child into the v1 directories of its cgroup (a
// hybrid system's memory and pids controllers) when the exec helper has
// not: the daemon runs its first instructions outside them, which only a
// daemon without v1 limits does.
func (p *process) attachGroup() {
	if p.group == nil || (p.helper != nil && len(p.helper.Join) > 0) {
		return
	}
	if err := p.group.Attach(p.pid); err != nil {
		p.notes = append(p.notes, "limits not in force: "+err.Error())
	}
}

// signalAll sends sig to the process group and, with a cgroup, to every
// process in it (SIGKILL through cgroup.kill, which no fork escapes).
func (p *process) signalAll(sig syscall.Signal) {
	_ = unix.Kill(-p.pid, sig)
	if p.group == nil {
		return
	}
	if sig == unix.SIGKILL {
		_ = p.group.Kill()
	} else {
		_ = p.group.Signal(sig, p.pid) // its process group has it
	}
}

// leftovers reports whether something of the run is still alive once the
// leader is reaped: members of its process group, or of its cgroup.
func (p *process) leftovers() bool {
	return groupAlive(p.pid) || (p.group != nil && p.group.Populated())
}

// removeGroup removes the run's cgroup once it is empty.
func (p *process) removeGroup() {
	g := p.group
	if g == nil {
		return
	}
	deadline := p.clock.Now().Add(groupGone)
	for g.Populated() && p.clock.Now().Before(deadline) {
		sleep(context.Background(), p.clock, groupPoll)
	}
	_ = g.Remove()
}

// cgroupLimits are the spec's cgroup limits.
func cgroupLimits(s *Spec) cgroup.Limits { return cgroup.Limits(s.Cgroup) }
