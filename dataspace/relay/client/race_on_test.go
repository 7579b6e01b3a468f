//go:build race

package client

import "testing"

// floodMessages is smaller under the race detector, which slows every
// turn several times; the flow control under test is the same.
const floodMessages = 20_000

// checkFloodMemory checks nothing under -race, which multiplies memory.
func checkFloodMemory(testing.TB) {}
