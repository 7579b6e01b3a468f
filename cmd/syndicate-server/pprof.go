//go:build pprof

package main

// Profiling builds only (go build -tags pprof): with SYNDICATE_PPROF set
// to a loopback address, the server serves net/http/pprof there, so that
// the wire benchmarks can profile the server process (issue 16). Normal
// builds carry none of this.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
	"strings"
)

func init() {
	addr := os.Getenv("SYNDICATE_PPROF")
	if addr == "" || !strings.HasPrefix(addr, "127.0.0.1:") {
		return
	}
	go http.ListenAndServe(addr, nil)
}
