package daemon

import (
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup/cgrouptest"
)

// readPid waits for file to hold a pid.
func readPid(t *testing.T, file string) int {
	var pid int
	testutil.WaitFor(t, file, func() bool {
		b, _ := os.ReadFile(file)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		pid = n
		return err == nil
	})
	return pid
}

// The test: a grandchild that called setsid dies with its daemon
// (here stopped by the operator), since it stays in the daemon's cgroup.
func TestStopKillsSetsidGrandchild(t *testing.T) {
	parallel(t)
	m := cgrouptest.Open(t, "v2")
	h, _ := bootDaemons(t, Options{Cgroups: m})
	file := filepath.Join(t.TempDir(), "grandchild")
	h.assert(preserves.Rec("daemon", preserves.Symbol("tree"),
		pv(t, `{argv: "setsid sh -c 'echo $$ > `+file+`; exec sleep 300' & exec sleep 300", stopTimeout: 2}`)))
	h.assert(services.RequireService(dname("tree")))
	gc := readPid(t, file)
	sid, _ := os.ReadFile("/proc/" + strconv.Itoa(gc) + "/cgroup")
	if !strings.Contains(string(sid), "/daemon-tree+") {
		t.Fatalf("the grandchild is not in the daemon's cgroup: %s", sid)
	}

	h.send(h.env.Config, preserves.NewRecord(syndicatego.LabelStopService, dname("tree")))
	h.waitHas(services.RunService(dname("tree")), false)
	testutil.WaitFor(t, "the setsid grandchild to die with its daemon", func() bool { return cgrouptest.Exited(gc) })
}

// <signal-service NAME SIGNAL> reaches every process of the daemon, the
// one that left its process group included.
func TestSignalServiceReachesTheCgroup(t *testing.T) {
	parallel(t)
	m := cgrouptest.Open(t, "v2")
	h, _ := bootDaemons(t, Options{Cgroups: m})
	dir := t.TempDir()
	log, up := filepath.Join(dir, "log"), filepath.Join(dir, "up")
	// The leader traps HUP before it starts the grandchild, whose pid
	// file says both are ready for the signal.
	h.assert(preserves.Rec("daemon", preserves.Symbol("hup"), pv(t, `{argv: "`+
		`trap 'echo leader >> `+log+`' HUP; `+
		`setsid sh -c 'trap \"echo grandchild >> `+log+`\" HUP; echo $$ > `+up+`; while :; do sleep 0.02; done' & `+
		`while :; do sleep 0.02; done", stopTimeout: 2}`)))
	h.assert(services.RequireService(dname("hup")))
	readPid(t, up)
	// The worker may learn of the process (its handle) after the process
	// has written its pid file: until it says it sent the signal, a
	// request can find no process to signal, so it is repeated.
	hup := syndicatego.SignalService{ServiceName: dname("hup"), Signal: big.NewInt(int64(syscall.SIGHUP))}.ToValue()
	testutil.WaitFor(t, "both to see SIGHUP", func() bool {
		if !h.warns.Has("signal sent by the operator") {
			h.send(h.env.Config, hup)
		}
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "grandchild") && strings.Contains(string(b), "leader")
	})
	if !h.warns.Has("signal sent by the operator", `"signal":"SIGHUP"`) {
		t.Errorf("the signal is not logged: %q", h.warns.Lines())
	}
}

// Issue 24: on a hybrid system the v1 controllers cannot be joined at
// fork; a daemon with a limit on them goes through the exec helper, which
// joins them before it execs, so the daemon's very first instruction runs
// inside them (the shell reads its own cgroup file before anything else).
func TestHelperJoinsV1BeforeExec(t *testing.T) {
	parallel(t)
	m := cgrouptest.Open(t, "pids")
	if m.Where("pids") != "v1" {
		t.Skip("pids is a v2 controller here: joined at fork")
	}
	h, _ := bootDaemons(t, Options{Cgroups: m})
	out := filepath.Join(t.TempDir(), "cgroup")
	require(h, "v1", pv(t, `{argv: ["sh" "-c" "cat /proc/$$/cgroup > `+out+`"], restart: on-error, readyOnStart: #f, cgroup: {pidsMax: 50}}`))
	h.waitHas(state("v1", services.StateComplete), true)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, ":pids:") && !strings.Contains(l, "/daemon-v1+") {
			t.Fatalf("the daemon began outside its pids cgroup: %q", l)
		}
	}
	if !strings.Contains(string(b), ":pids:") {
		t.Fatalf("no pids line: %q", b)
	}
}
