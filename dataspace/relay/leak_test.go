package relay

import (
	"flag"
	"testing"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// TestMain fails the run when goroutines of this module outlive the tests
// (see testutil.LeakCheckMain). The parallel tests mostly wait out
// timeouts and slow peers, so eight run at once; the tests that push
// megabytes through a relay stay sequential.
func TestMain(m *testing.M) {
	flag.Parse()
	testutil.WaitingParallelism(8)
	testutil.LeakCheckMain(m)
}
