//go:build race

package client

import "testing"

// checkFloodMemory checks nothing under -race, which multiplies memory.
func checkFloodMemory(testing.TB) {}
