//go:build pprof

package main

// Profiling builds only (go build -tags pprof): with SYNDICATE_PPROF set
// to a loopback address, the server serves net/http/pprof there, so that
// the wire benchmarks can profile the server process (issue 16). Normal
// builds carry none of this. SYNDICATE_PPROF_MEMRATE=N samples one
// allocation per N bytes (1: every allocation), for per-object memory
// accounting such as bytes per daemon.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"
)

func init() {
	addr := os.Getenv("SYNDICATE_PPROF")
	if addr == "" || !strings.HasPrefix(addr, "127.0.0.1:") {
		return
	}
	if n, err := strconv.Atoi(os.Getenv("SYNDICATE_PPROF_MEMRATE")); err == nil && n > 0 {
		runtime.MemProfileRate = n
	}
	go http.ListenAndServe(addr, nil)
}
