package daemon

import (
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
)

// What `syndicate status` learns from the daemon service, beyond
// `<process-status …>` (running.go):
//
//   - `<service-info <daemon ID> {restarts, recent, exit, exit-at, phase,
//     reason, pos}>` (services/status.go), asserted by the current worker
//     from its history and its specs' conditions;
//   - `<service-output <daemon ID> [{at, stream, line} …]>`, the last
//     TailLines lines of output, asserted while someone asserts
//     `<output-request <daemon ID>>` (status NAME);
//   - `<process-stats <daemon ID> {pid memory tasks oomKills}>`, the
//     figures of its processes, while someone asserts `<stats-request
//     <daemon ID>>` (below).

// TailLines is how many output lines a daemon keeps for `status NAME`.
const TailLines = 20

// statusWindow is the restart window `recent` counts in when the spec sets
// no restartWindow.
const statusWindow = time.Minute

// OutputRequest returns `<output-request name>`.
func OutputRequest(name preserves.Value) preserves.Value {
	return syndicatego.OutputRequest{ServiceName: name}.ToValue()
}

// history is what a daemon remembers for as long as it is wanted (its
// run-service facet), across worker crashes and restart-service: start
// counts, the last exit and the tail of its output. Worker actors and
// pipe readers share it, hence the mutex.
type history struct {
	mu     sync.Mutex
	starts map[string]int // per spec key
	exit   string
	exitAt time.Time
	exits  []time.Time // exits followed by a restart, newest last
	tail   [TailLines]Line
	next   int // tail slot of the next line
	lines  int // lines kept (at most TailLines)
	// procs are the handles of the processes spawned, for their
	// figures (below); exited ones are dropped when next listed.
	procs []*ProcHandle
}

func newHistory() *history { return &history{starts: map[string]int{}} }

// started records a start of the spec keyed key and returns how many
// starts preceded it.
func (h *history) started(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.starts[key]
	h.starts[key] = n + 1
	return n
}

// exited records an exit.
func (h *history) exited(e Exit, at time.Time, restart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.exit, h.exitAt = e.String(), at
	if restart {
		h.exits = append(h.exits, at)
	}
}

// tailLineMax bounds the bytes kept of each tail line (the log gets the
// whole line), so a daemon's tail costs at most TailLines × tailLineMax.
const tailLineMax = 1024

// line keeps l in the tail. It is called by the pipe readers.
func (h *history) line(l Line) {
	if len(l.Text) > tailLineMax {
		l.Text = append(l.Text[:tailLineMax:tailLineMax], "…"...)
	} else {
		l.Text = slices.Clone(l.Text) // the caller's is reused
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tail[h.next] = l
	h.next = (h.next + 1) % TailLines
	h.lines = min(h.lines+1, TailLines)
}

// lastLines returns the tail, oldest first.
func (h *history) lastLines() []Line {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Line, 0, h.lines)
	for i := h.lines; i > 0; i-- {
		out = append(out, h.tail[(h.next-i+TailLines)%TailLines])
	}
	return out
}

// info is the history's part of the daemon's status at time now; window
// bounds `recent`.
func (h *history) info(now time.Time, window time.Duration) services.Info {
	h.mu.Lock()
	defer h.mu.Unlock()
	var i services.Info
	for _, n := range h.starts {
		i.Restarts += max(n-1, 0)
	}
	h.exits = slices.DeleteFunc(h.exits, func(at time.Time) bool { return now.Sub(at) >= window })
	i.Recent = len(h.exits)
	i.Exit, i.ExitAt = h.exit, h.exitAt
	return i
}

// ServiceOutput returns `<service-output name [{at, stream, line} …]>`.
func ServiceOutput(name preserves.Value, lines []Line) preserves.Value {
	out := syndicatego.ServiceOutput{ServiceName: name, Lines: make([]syndicatego.OutputLine, len(lines))}
	for i, l := range lines {
		out.Lines[i] = syndicatego.OutputLine{At: services.StatusTime(l.Time), Stream: preserves.Symbol(l.Stream.String()),
			// Invalid UTF-8 becomes U+FFFD: a String holds only UTF-8, and
			// a bad one broke the admin connection (issue 22).
			Line: strings.ToValidUTF8(strings.TrimSuffix(string(l.Text), "\n"), "\uFFFD")}
	}
	return out.ToValue()
}

// serveOutput answers `<output-request <daemon ID>>`, in the service's
// boot facet, with the tail of that daemon as it is when the request
// appears (nothing for a daemon that is not wanted). One subscription
// serves every daemon.
func (s *Service) serveOutput(t *dataspace.Turn, cfg *dataspace.Ref) {
	p := pattern.Rec(syndicatego.LabelOutputRequest, pattern.Bind{Pattern: pattern.Rec(externalservices.LabelDaemon, pattern.Discard{})})
	t.During(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		name := caps[0]
		if d := s.runs[daemonKey(name)]; d != nil {
			t.Assert(cfg, ServiceOutput(name, d.hist.lastLines()))
		}
		return nil
	})
}

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
