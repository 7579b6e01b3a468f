package dataspace

import "sync/atomic"

// Memory comes back after a large retraction (issue 28). A Go map never
// gives back the room it grew to: an actor that asserted 300,000 facts and
// retracted them keeps a table sized for 300,000, and so does the
// dataspace that held them. The tables that grow with the assertions are
// rebuilt at their size when they have shrunk to a quarter of their peak,
// which costs one copy of what is left per halving twice over: amortised
// O(1) per deletion, and nothing for tables that stay small.

// shrunk counts the entries the rebuilt maps had lost since their peak
// (Shrunk).
var shrunk atomic.Uint64

// Shrunk returns how many entries the maps that grow with assertions had
// lost when they were rebuilt after shrinking, over the process's life: a
// measure of what large retractions freed, for whoever returns memory to
// the system (a collection is what frees it, and a quiet server may not
// run one for minutes).
func Shrunk() uint64 { return shrunk.Load() }

// shrinkMin is the peak below which a map is never rebuilt.
const shrinkMin = 1024

// shrinkMap is called after a deletion from m, whose largest size since
// it was last rebuilt is *peak (the caller's to keep; the size just
// before the deletion counts as a peak). It returns m, or a copy of it
// sized for its contents when it has shrunk to a quarter of its peak.
func shrinkMap[K comparable, V any](m map[K]V, peak *int) map[K]V {
	n := len(m)
	if n+1 > *peak {
		*peak = n + 1
		return m
	}
	if *peak < shrinkMin || n > *peak/4 {
		return m
	}
	shrunk.Add(uint64(*peak - n))
	fresh := make(map[K]V, n)
	for k, v := range m {
		fresh[k] = v
	}
	*peak = n
	return fresh
}
