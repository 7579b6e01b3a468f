//go:build !unix

package preserves

import "time"

// binProcessCPU is unavailable here; benchmarks then report no CPU metric.
func binProcessCPU() time.Duration { return 0 }
