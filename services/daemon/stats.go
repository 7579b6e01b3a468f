package daemon

import (
	"math/big"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
)

// A daemon's figures in `syndicate status` (issue 24): its cgroup's
// memory and task count, read on request rather than published all the
// time, since a server with thousands of daemons would otherwise rewrite
// thousands of assertions every few seconds for nobody. While
// `<stats-request <daemon ID>>` is asserted (by `status NAME` and
// `status --json`), the service asserts `<process-stats <daemon ID>
// {pid memory tasks oomKills}>` per running process, read when the
// request appears and every StatsRefresh after, while it lasts (`status
// --watch`). A daemon without a cgroup has only its pid there.

// StatsRefresh is how often the figures are read again while requested.
const StatsRefresh = 2 * time.Second

// spawned keeps the handle of a process just spawned, for its figures.
func (h *history) spawned(p *ProcHandle) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.procs = slices.DeleteFunc(h.procs, (*ProcHandle).Exited)
	h.procs = append(h.procs, p)
}

// figures are the current figures of the running processes, by pid.
func (h *history) figures() []syndicatego.ProcessFigures {
	h.mu.Lock()
	h.procs = slices.DeleteFunc(h.procs, (*ProcHandle).Exited)
	procs := slices.Clone(h.procs)
	h.mu.Unlock()
	out := make([]syndicatego.ProcessFigures, 0, len(procs))
	for _, p := range procs {
		st, ok := p.Stats()
		if !ok {
			st = cgroup.Stats{Memory: -1, Tasks: -1, OOMKills: -1}
		}
		out = append(out, ProcessFigures(p.Pid, st))
	}
	return out
}

// ProcessFigures is the figures dictionary of a process; -1 is absent.
func ProcessFigures(pid int, st cgroup.Stats) syndicatego.ProcessFigures {
	f := syndicatego.ProcessFigures{Pid: syndicatego.ProcessPidPresent{Pid: big.NewInt(int64(pid))},
		Memory: syndicatego.ProcessMemoryAbsent{}, Tasks: syndicatego.ProcessTasksAbsent{}, OomKills: syndicatego.ProcessOomKillsAbsent{}}
	if st.Memory >= 0 {
		f.Memory = syndicatego.ProcessMemoryPresent{Memory: big.NewInt(st.Memory)}
	}
	if st.Tasks >= 0 {
		f.Tasks = syndicatego.ProcessTasksPresent{Tasks: big.NewInt(st.Tasks)}
	}
	if st.OOMKills >= 0 {
		f.OomKills = syndicatego.ProcessOomKillsPresent{OomKills: big.NewInt(st.OOMKills)}
	}
	return f
}

// serveStats answers `<stats-request <daemon ID>>`, in the service's boot
// facet, for the daemons that are wanted.
func (s *Service) serveStats(t *dataspace.Turn, cfg *dataspace.Ref) {
	p := pattern.Rec(syndicatego.LabelStatsRequest, pattern.Bind{Pattern: pattern.Rec(externalservices.LabelDaemon, pattern.Discard{})})
	t.During(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		name := caps[0]
		d := s.runs[daemonKey(name)]
		if d == nil {
			return nil
		}
		held := map[string]dataspace.Handle{} // text of the record → its handle
		t.Every(StatsRefresh, func(t *dataspace.Turn) error {
			now := map[string]preserves.Value{}
			for _, f := range d.hist.figures() {
				v := syndicatego.ProcessStats{ServiceName: name, Figures: f}.ToValue()
				now[preserves.FormatText(v)] = v
			}
			for k, h := range held {
				if _, ok := now[k]; !ok {
					t.Retract(h)
					delete(held, k)
				}
			}
			for k, v := range now {
				if _, ok := held[k]; !ok {
					held[k] = t.Assert(cfg, v)
				}
			}
			return nil
		})
		return nil
	})
}
