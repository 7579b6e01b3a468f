package noisesession

import (
	"testing"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// TestMain fails the run when goroutines of this module outlive the tests
// (see testutil.LeakCheckMain).
func TestMain(m *testing.M) { testutil.LeakCheckMain(m) }
