//go:build unix

package preserves

import (
	"syscall"
	"time"
)

// binProcessCPU returns the CPU time (user + system) this process has used.
// The codec benchmarks report throughput per CPU second next to the usual
// wall-clock figure, because on a shared, loaded machine wall-clock time
// mostly measures the other processes.
func binProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
