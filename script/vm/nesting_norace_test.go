//go:build !race

package vm_test

import "testing"

// Memory figures mean nothing under the race detector, which shadows
// every allocation: this check runs in the plain test run only.
func TestNestedHandlersCostLinearMemory(t *testing.T) { checkNestingLinear(t) }
