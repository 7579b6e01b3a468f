package main

import (
	"flag"
	"os"
	"testing"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// The parallel tests mostly wait: for a server's answer, for --timeout,
// for status NAME's outputWait, which nothing in these tests answers.
func TestMain(m *testing.M) {
	flag.Parse()
	testutil.WaitingParallelism(8)
	os.Exit(m.Run())
}
