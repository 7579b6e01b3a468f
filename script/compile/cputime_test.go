package compile_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used so far.
// Benchmarks report it per operation next to wall time, because on a busy
// shared machine wall time mostly measures the other tenants.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
