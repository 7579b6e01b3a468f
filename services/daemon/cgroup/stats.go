package cgroup

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Stats are a group's current figures for `syndicate status`; -1 is "not
// known" (no controller counts it).
type Stats struct {
	Memory   int64 // bytes charged to the group
	Tasks    int64 // processes and threads
	OOMKills int64 // processes the OOM killer took because of memoryMax
}

// Stats reads the group's figures from whichever hierarchy counts them.
func (g *Group) Stats() Stats {
	s := Stats{Memory: -1, Tasks: -1, OOMKills: -1}
	if !g.Confined() {
		return s
	}
	if g.m.v2ctl["memory"] {
		s.Memory = readInt(filepath.Join(g.v2, "memory.current"))
		s.OOMKills = readKey(filepath.Join(g.v2, "memory.events"), "oom_kill")
	} else if d, ok := g.v1["memory"]; ok {
		s.Memory = readInt(filepath.Join(d, "memory.usage_in_bytes"))
		s.OOMKills = readKey(filepath.Join(d, "memory.oom_control"), "oom_kill")
	}
	// The v2 group is joined at fork, so its membership is exact; a v1
	// pids group may be joined just after fork on the direct path, and
	// would miss what the daemon forked first. So v1 counts only where
	// there is no v2 group.
	switch d, ok := g.v1["pids"]; {
	case g.m.v2ctl["pids"]:
		s.Tasks = readInt(filepath.Join(g.v2, "pids.current"))
	case g.v2 != "":
		// Without a pids controller, the threads listed are the count.
		if t := readString(filepath.Join(g.v2, "cgroup.threads")); t == "" {
			s.Tasks = 0
		} else {
			s.Tasks = int64(strings.Count(t, "\n") + 1)
		}
	case ok:
		s.Tasks = readInt(filepath.Join(d, "pids.current"))
	}
	return s
}

// readInt reads a file holding one number (-1 when it cannot).
func readInt(name string) int64 {
	n, err := strconv.ParseInt(readString(name), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// readKey reads the number after key in a flat-keyed file ("key N" lines).
func readKey(name, key string) int64 {
	for _, l := range strings.Split(readString(name), "\n") {
		if v, ok := strings.CutPrefix(l, key+" "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}
