package daemon

import (
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"

	"github.com/syndicate-go/syndicate/services/daemon/ledger"
)

// A server killed without a chance to stop its daemons (issue 22 item 5)
// leaves them running; package ledger has the design. Every process is
// recorded in the server's ledger from its spawn until it and what is
// left of its group are gone, and the next server on the same
// configuration stops the leftovers before it runs anything
// (ledger.Recover, from cmd/syndicate-server). What it stopped is logged
// there and, when the daemon is wanted again, in its own log stream
// (`syndicate logs NAME`).

// logEvLeftover is the event of a leftover stopped at start-up.
const logEvLeftover = "leftover-stopped"

// record enters the process just spawned in the ledger.
func (p *process) record() {
	l := p.hooks.ledger
	if l == nil {
		return
	}
	e := ledger.Entry{Name: p.hooks.name, Pid: p.pid, StopTimeout: p.spec.StopTimeout}
	start, err := ledger.StartTime(p.pid)
	if err != nil {
		return // gone already: nothing to leave behind
	}
	e.Start = start
	if p.group != nil {
		e.Cgroup = p.group.Dirs()
	}
	p.recorded, _ = l.Add(e) // a failing write leaves the process unrecorded, not unrun
}

// forget takes the process out of the ledger: it and its group are gone.
func (p *process) forget() {
	_ = p.hooks.ledger.Remove(p.recorded)
	p.recorded = 0
}

// leftoverLine is the log line of one leftover.
func leftoverLine(f ledger.Found) string {
	return fmt.Sprintf("a process left running by a dead server (pid %d) was found at start-up: pid %d, %s", f.Server, f.Pid, f.How)
}

// logLeftovers logs, in the daemon's stream, the leftovers of earlier
// runs stopped at start-up, the first time the daemon is wanted.
func (d *daemonRun) logLeftovers(t *dataspace.Turn) {
	id := preserves.FormatText(d.id)
	for _, f := range d.s.leftovers[id] {
		d.logEvent(t, f.Pid, logEvLeftover, leftoverLine(f))
	}
	delete(d.s.leftovers, id)
}
