package testutil

import (
	"flag"
	"runtime"
	"strconv"
)

// WaitingParallelism lets n parallel tests run at once, instead of the
// testing package's default of GOMAXPROCS, unless the run gave
// -test.parallel itself. It is for packages whose parallel tests spend
// their time waiting on child processes, sockets and timers rather than
// computing: on a 2-core machine the default runs two at once, so the
// package takes the sum of their waits. Under the race detector the same
// tests mostly compute, and more of them at once would only stretch the
// real-time deadlines some of them keep, so the default stays. It never
// lowers the default. Call it from TestMain after flag.Parse.
func WaitingParallelism(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given || raceEnabled || n <= runtime.GOMAXPROCS(0) {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		panic("testutil: " + err.Error()) // the testing package always defines it
	}
}
