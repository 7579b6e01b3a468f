package daemon

import (
	"path/filepath"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup/cgrouptest"
)

// Issue 24: `<stats-request <daemon ID>>` is answered with the figures
// of the daemon's cgroup, read from it: here a shell with two children
// (three tasks at least) and some memory; the answer goes with the
// request.
func TestStatsRequestAnsweredFromTheCgroup(t *testing.T) {
	parallel(t)
	m := cgrouptest.Open(t, "v2")
	h, _ := bootDaemons(t, Options{Cgroups: m})
	up := filepath.Join(t.TempDir(), "up")
	// The shell holds a few hundred kB of its own (the output of seq) before
	// it reports, so the group has been charged for certain.
	require(h, "busy", pv(t, `{argv: "x=$(seq 100000); sleep 300 & sleep 300 & echo $$ > `+up+`; wait", stopTimeout: 2}`))
	pid := readPid(t, up)
	withdraw := h.assert(syndicatego.StatsRequest{ServiceName: dname("busy")}.ToValue())
	var got syndicatego.ProcessFigures
	figures := func(v preserves.Value) bool {
		ps, err := syndicatego.ParseProcessStats(v)
		if err != nil || !preserves.Equal(ps.ServiceName, dname("busy")) {
			return false
		}
		got = ps.Figures
		tasks, ok := ps.Figures.Tasks.(syndicatego.ProcessTasksPresent)
		return ok && tasks.Tasks.Int64() >= 3
	}
	testutil.WaitFor(t, "the figures of <daemon busy>", func() bool { return h.rec.Find(figures) })
	if p, ok := got.Pid.(syndicatego.ProcessPidPresent); !ok || p.Pid.Int64() != int64(pid) {
		t.Errorf("figures of pid %v, want %d", got.Pid, pid)
	}
	if m.Where("memory") != "" {
		if mem, ok := got.Memory.(syndicatego.ProcessMemoryPresent); !ok || mem.Memory.Int64() <= 0 {
			t.Errorf("memory: %v", got.Memory)
		}
	}
	withdraw()
	testutil.WaitFor(t, "the figures to go with the request", func() bool { return !h.rec.Find(figures) })
	h.waitHas(services.ServiceState(dname("busy"), services.StateReady), true)
}
