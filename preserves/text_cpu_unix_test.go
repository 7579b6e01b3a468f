//go:build unix

package preserves_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) used by this process so
// far. Benchmarks report throughput per CPU second as well as per wall
// second, because on a shared, loaded machine the wall-clock figure mostly
// measures the other processes.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
