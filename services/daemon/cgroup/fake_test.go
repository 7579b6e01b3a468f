package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTree writes a fake /proc/self/{mountinfo,cgroup} and the cgroup files
// the kernel would show, so that the v2 code (which these machines, with
// their controller-less unified hierarchy, cannot exercise) and the
// layouts of other machines are tested too.
type fakeTree struct {
	dir, mountinfo, self string
}

func newFake(t *testing.T, mountinfo, self string) fakeTree {
	dir := t.TempDir()
	f := fakeTree{dir: dir, mountinfo: filepath.Join(dir, "mountinfo"), self: filepath.Join(dir, "cgroup")}
	mountinfo = strings.ReplaceAll(mountinfo, "ROOT", dir)
	require.NoError(t, os.WriteFile(f.mountinfo, []byte(mountinfo), 0o644))
	require.NoError(t, os.WriteFile(f.self, []byte(self), 0o644))
	return f
}

func (f fakeTree) write(t *testing.T, name, content string) {
	p := filepath.Join(f.dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func (f fakeTree) read(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	require.NoError(t, err)
	return string(b)
}

// A v2 hierarchy with every controller: the server (in /svc, not the
// root) moves into a leaf, then enables the controllers, and every limit
// lands in its v2 file.
func TestV2LimitsOnFakeHierarchy(t *testing.T) {
	f := newFake(t, "40 30 0:37 / ROOT/unified rw - cgroup2 cgroup2 rw\n", "0::/svc\n")
	f.write(t, "unified/cgroup.controllers", "cpuset cpu io memory pids")
	f.write(t, "unified/svc/cgroup.type", "domain")
	f.write(t, "unified/svc/cgroup.controllers", "cpu memory pids")
	f.write(t, "unified/svc/cgroup.subtree_control", "")
	f.write(t, "unified/svc/cgroup.procs", "4242\n")

	m, err := Open(Options{Instance: "inst", MoveSelf: true, Pid: 4242, Mountinfo: f.mountinfo, Self: f.self})
	require.NoError(t, err)
	require.Empty(t, m.Notes())
	require.True(t, m.Unified())
	for _, c := range Controllers {
		require.Equal(t, "v2", m.Where(c), c)
	}
	require.Equal(t, "4242", f.read(t, "unified/svc/inst/server/cgroup.procs"), "the server moved into its leaf")
	// Regular files keep only the last write: the last controller enabled.
	require.Equal(t, "+cpu", f.read(t, "unified/svc/cgroup.subtree_control"))
	require.Equal(t, "+cpu", f.read(t, "unified/svc/inst/cgroup.subtree_control"))

	g, err := m.New("web/1", Limits{MemoryMax: 64 << 20, PidsMax: 10, CPUMax: 0.5, CPUWeight: 200})
	require.NoError(t, err)
	require.Empty(t, g.Unapplied())
	d := "unified/svc/inst/daemon-web%2F1+1/"
	require.Equal(t, f.dir+"/"+strings.TrimSuffix(d, "/"), g.Path())
	require.Equal(t, "67108864", f.read(t, d+"memory.max"))
	require.Equal(t, "10", f.read(t, d+"pids.max"))
	require.Equal(t, "50000 100000", f.read(t, d+"cpu.max"))
	require.Equal(t, "200", f.read(t, d+"cpu.weight"))

	f.write(t, d+"memory.current", "123456\n")
	f.write(t, d+"pids.current", "3\n")
	f.write(t, d+"memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
	require.Equal(t, Stats{Memory: 123456, Tasks: 3, OOMKills: 1}, g.Stats())
}

// A root cgroup may hold processes and enable controllers at once: the
// server stays where it is.
func TestV2AtRootDoesNotMove(t *testing.T) {
	f := newFake(t, "40 30 0:37 / ROOT/unified rw - cgroup2 cgroup2 rw\n", "0::/\n")
	f.write(t, "unified/cgroup.controllers", "memory pids")
	f.write(t, "unified/cgroup.subtree_control", "memory pids")
	m, err := Open(Options{Instance: "inst", MoveSelf: true, Pid: 1, Mountinfo: f.mountinfo, Self: f.self})
	require.NoError(t, err)
	require.NoDirExists(t, filepath.Join(f.dir, "unified/inst/server"))
	require.Equal(t, "v2", m.Where("memory"))
	require.Equal(t, "", m.Where("cpu"))
	require.Contains(t, strings.Join(m.Notes(), "\n"), "no cpu controller")

	g, err := m.New("web", Limits{CPUMax: 1.5})
	require.NoError(t, err)
	require.Len(t, g.Unapplied(), 1)
	var le *LimitError
	require.True(t, errors.As(g.Unapplied()[0], &le))
	require.Equal(t, "cpuMax", le.Key)
	require.ErrorIs(t, le, ErrNoController)
	require.Equal(t, "cpuMax not applied: no writable cpu controller (cgroup v2 or v1)", le.Error())
}

// The hybrid layout of these machines: v2 without controllers, v1 memory
// (at a nested path), pids and cpu,cpuacct co-mounted. Limits go to v1.
func TestHybridUsesV1Controllers(t *testing.T) {
	f := newFake(t, strings.Join([]string{
		"31 30 0:28 / ROOT/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
		"34 30 0:31 / ROOT/memory rw,relatime - cgroup cgroup rw,memory",
		"38 30 0:35 / ROOT/pids rw,relatime - cgroup cgroup rw,pids",
		"39 30 0:36 / ROOT/systemd rw,relatime - cgroup cgroup rw,name=systemd",
		"40 30 0:37 / ROOT/unified rw,relatime - cgroup2 cgroup2 rw",
	}, "\n"), "9:name=systemd:/\n8:pids:/\n4:memory:/api/x\n1:cpu,cpuacct:/\n0::/\n")
	f.write(t, "unified/cgroup.controllers", "hugetlb")
	for _, d := range []string{"memory/api/x", "pids", "cpu,cpuacct"} {
		require.NoError(t, os.MkdirAll(filepath.Join(f.dir, d), 0o755))
	}
	m, err := Open(Options{Instance: "inst", Mountinfo: f.mountinfo, Self: f.self})
	require.NoError(t, err)
	require.True(t, m.Unified())
	require.Equal(t, "v1", m.Where("memory"))
	require.Equal(t, "v1", m.Where("pids"))
	require.Equal(t, "v1", m.Where("cpu"))

	g, err := m.New("web", Limits{MemoryMax: 1 << 20, PidsMax: 7, CPUMax: 0.25, CPUWeight: 50})
	require.NoError(t, err)
	require.Empty(t, g.Unapplied())
	require.Equal(t, "1048576", f.read(t, "memory/api/x/inst/daemon-web+1/memory.limit_in_bytes"))
	require.Equal(t, "7", f.read(t, "pids/inst/daemon-web+1/pids.max"))
	require.Equal(t, "25000", f.read(t, "cpu,cpuacct/inst/daemon-web+1/cpu.cfs_quota_us"))
	require.Equal(t, "100000", f.read(t, "cpu,cpuacct/inst/daemon-web+1/cpu.cfs_period_us"))
	require.Equal(t, "512", f.read(t, "cpu,cpuacct/inst/daemon-web+1/cpu.shares"))
	require.Equal(t, []string{
		f.dir + "/memory/api/x/inst/daemon-web+1/cgroup.procs",
		f.dir + "/pids/inst/daemon-web+1/cgroup.procs",
		f.dir + "/cpu,cpuacct/inst/daemon-web+1/cgroup.procs",
	}, g.V1Procs())
	require.Equal(t, f.dir+"/unified/inst/daemon-web+1", g.Path())
}

// Without any hierarchy nothing is confined, every missing piece is a
// note, and every limit is reported.
func TestNoCgroupsReportsEverything(t *testing.T) {
	f := newFake(t, "", "")
	m, err := Open(Options{Mountinfo: f.mountinfo, Self: f.self})
	require.NoError(t, err)
	require.False(t, m.Confined())
	require.Len(t, m.Notes(), 1+len(Controllers))
	g, err := m.New("web", Limits{MemoryMax: 1, PidsMax: 1, CPUMax: 1, CPUWeight: 1})
	require.NoError(t, err)
	require.False(t, g.Confined())
	require.Len(t, g.Unapplied(), 4)
	require.ErrorIs(t, g.Kill(), ErrNotConfined)
	require.Equal(t, Stats{Memory: -1, Tasks: -1, OOMKills: -1}, g.Stats())
}

func TestDirName(t *testing.T) {
	for in, want := range map[string]string{
		"web":          "daemon-web",
		"a b/../c":     "daemon-a%20b%2F..%2Fc",
		"memory.max":   "daemon-memory.max",
		`"quoted"`:     "daemon-%22quoted%22",
		"user@host-1_": "daemon-user@host-1_",
	} {
		require.Equal(t, want, DirName(in), in)
	}
	long := DirName(strings.Repeat("x", 300))
	require.Len(t, long, 197)
	require.NotEqual(t, long, DirName(strings.Repeat("x", 301)))
}

func TestMountinfoEscapes(t *testing.T) {
	require.Equal(t, "/a b", unescapeMount(`/a\040b`))
	require.Equal(t, `/a\0`, unescapeMount(`/a\0`))
}

// A bind mount showing only part of the hierarchy maps paths below its
// root and nothing else.
func TestWithin(t *testing.T) {
	m := mount{point: "/sys/fs/cgroup", root: "/kubepods/pod1"}
	require.Equal(t, "/sys/fs/cgroup/c1", within(m, "/kubepods/pod1/c1"))
	require.Equal(t, "/sys/fs/cgroup", within(m, "/kubepods/pod1"))
	require.Equal(t, "", within(m, "/kubepods/pod10"))
	require.Equal(t, "/sys/fs/cgroup/x", within(mount{point: "/sys/fs/cgroup", root: "/"}, "/x"))
}

// A server that died without closing its Manager left empty
// directories; the next server removes them, and nothing of a live one.
func TestOpenSweepsStaleInstances(t *testing.T) {
	f := newFake(t, "40 30 0:37 / ROOT/unified rw - cgroup2 cgroup2 rw\n", "0::/\n")
	f.write(t, "unified/cgroup.controllers", "")
	dead := filepath.Join(f.dir, "unified/syndicate.4194305")
	live := filepath.Join(f.dir, "unified/syndicate.1/daemon-x+1")
	busy := filepath.Join(f.dir, "unified/syndicate.4194306/daemon-y+1")
	require.NoError(t, os.MkdirAll(filepath.Join(dead, "daemon-web+3"), 0o755))
	require.NoError(t, os.MkdirAll(live, 0o755))
	f.write(t, "unified/syndicate.4194306/daemon-y+1/cgroup.procs", "77\n") // stands for a process
	_, err := Open(Options{Mountinfo: f.mountinfo, Self: f.self})
	require.NoError(t, err)
	require.NoDirExists(t, dead)
	require.DirExists(t, live)
	require.DirExists(t, busy)
	require.DirExists(t, filepath.Join(f.dir, "unified/syndicate."+strconv.Itoa(os.Getpid())))
}
