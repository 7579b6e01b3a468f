package cgroup

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Limits are the `cgroup` keys of a daemon spec. The zero value of a
// field means "not set". The daemon spec parser fills a struct of the same
// fields (it sits below `services` and cannot import this package), so
// that one converts into the other with Limits(x).
type Limits struct {
	MemoryMax int64   // bytes (memory.max; v1 memory.limit_in_bytes)
	PidsMax   int64   // tasks (pids.max)
	CPUMax    float64 // a fraction of one CPU, 0.5 = half (cpu.max; v1 cfs quota)
	CPUWeight int64   // 1…10000, 100 is the default (cpu.weight; v1 cpu.shares)
}

// cpuPeriod is the scheduling period cpuMax is spread over, in µs (the
// kernel's default).
const cpuPeriod = 100000

// ErrNoController is why a limit was not applied: neither the unified
// hierarchy nor a writable v1 hierarchy has its controller.
var ErrNoController = errors.New("cgroup: controller not available")

// LimitError is a limit of a daemon that is not in force.
type LimitError struct {
	Key        string // the spec key: memoryMax, pidsMax, cpuMax, cpuWeight
	Controller string // memory, pids, cpu
	Err        error  // ErrNoController, or what writing the file said
}

func (e *LimitError) Error() string {
	if errors.Is(e.Err, ErrNoController) {
		return fmt.Sprintf("%s not applied: no writable %s controller (cgroup v2 or v1)", e.Key, e.Controller)
	}
	return fmt.Sprintf("%s not applied: %v", e.Key, e.Err)
}

func (e *LimitError) Unwrap() error { return e.Err }

// setting is one file write that puts a limit in force.
type setting struct {
	file, value string
}

// limit is one spec key and how each hierarchy expresses it.
type limit struct {
	key, controller string
	set             bool
	v2, v1          []setting
}

// plan turns l into the writes each hierarchy needs, in a fixed order.
func (l Limits) plan() []limit {
	quota := int64(math.Round(l.CPUMax * cpuPeriod))
	period := strconv.Itoa(cpuPeriod)
	return []limit{
		{key: "memoryMax", controller: "memory", set: l.MemoryMax > 0,
			v2: []setting{{"memory.max", itoa(l.MemoryMax)}},
			v1: []setting{{"memory.limit_in_bytes", itoa(l.MemoryMax)}}},
		{key: "pidsMax", controller: "pids", set: l.PidsMax > 0,
			v2: []setting{{"pids.max", itoa(l.PidsMax)}},
			v1: []setting{{"pids.max", itoa(l.PidsMax)}}},
		{key: "cpuMax", controller: "cpu", set: l.CPUMax > 0,
			v2: []setting{{"cpu.max", itoa(quota) + " " + period}},
			v1: []setting{{"cpu.cfs_period_us", period}, {"cpu.cfs_quota_us", itoa(quota)}}},
		// cpu.shares of v1 is 1024 for weight 100, as systemd converts.
		{key: "cpuWeight", controller: "cpu", set: l.CPUWeight > 0,
			v2: []setting{{"cpu.weight", itoa(l.CPUWeight)}},
			v1: []setting{{"cpu.shares", itoa(max(2, l.CPUWeight*1024/100))}}},
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
