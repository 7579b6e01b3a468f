package index

import (
	"github.com/syndicate-go/syndicate/preserves"
)

// This file holds the small containers the trie is built from. Go maps cannot
// key on Preserves values (slices and pointers compare by identity), and a
// map from hash to item costs about 38 bytes per item at a million items,
// more than the rest of an assertion's bookkeeping. So everything keyed by a
// value lives in a table: open addressing with linear probing over a slice
// of item pointers, plus one tag byte per slot holding 7 bits of the hash so
// that most mismatching slots are skipped without comparing values. Items do
// not store their hash; the caller supplies it for each operation and a
// hashOf function recomputes it when the table is rebuilt (amortised O(1)).

// Tag byte values: 0 empty, 1 deleted (tombstone), 2..129 full.
const (
	tagEmpty   = 0
	tagDeleted = 1
)

func tagOf(h uint64) uint8 { return uint8(h>>57) + 2 }

// table is a hash table of pointer-like items (the zero T is never stored).
type table[T comparable] struct {
	tags  []uint8
	slots []T
	n     int // live items
	used  int // live items plus tombstones
}

const minTable = 8

func (t *table[T]) len() int { return t.n }

// get returns the item under hash h satisfying eq.
func (t *table[T]) get(h uint64, eq func(T) bool) (T, bool) {
	var zero T
	if t.n == 0 {
		return zero, false
	}
	mask := uint64(len(t.tags) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.tags[i] {
		case tagEmpty:
			return zero, false
		case tag:
			if eq(t.slots[i]) {
				return t.slots[i], true
			}
		}
	}
}

// add inserts x under hash h; the caller has checked that no equal item is
// present. hashOf recomputes items' hashes if the table must be rebuilt.
func (t *table[T]) add(h uint64, x T, hashOf func(T) uint64) {
	if (t.used+1)*4 > len(t.tags)*3 {
		size := max(minTable, len(t.tags))
		if (t.n+1)*2 > size { // mostly live: grow; mostly tombstones: just rebuild
			size *= 2
		}
		t.rebuild(size, hashOf)
	}
	mask := uint64(len(t.tags) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if t.tags[i] <= tagDeleted {
			if t.tags[i] == tagEmpty {
				t.used++
			}
			t.tags[i] = tagOf(h)
			t.slots[i] = x
			t.n++
			return
		}
	}
}

// del removes the item under hash h satisfying eq, shrinking the table when
// it has become mostly empty.
func (t *table[T]) del(h uint64, eq func(T) bool, hashOf func(T) uint64) bool {
	if t.n == 0 {
		return false
	}
	mask := uint64(len(t.tags) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.tags[i] {
		case tagEmpty:
			return false
		case tag:
			if eq(t.slots[i]) {
				var zero T
				t.slots[i] = zero
				t.n--
				if t.tags[(i+1)&mask] == tagEmpty {
					t.tags[i] = tagEmpty // end of a run: no tombstone needed
					t.used--
				} else {
					t.tags[i] = tagDeleted
				}
				// Shrink a mostly empty table, but keep the smallest
				// size allocated: a value asserted and retracted over
				// and over must not allocate each time.
				if len(t.tags) > minTable && t.n*8 < len(t.tags) {
					t.rebuild(max(minTable, len(t.tags)/4), hashOf)
				}
				return true
			}
		}
	}
}

func (t *table[T]) rebuild(size int, hashOf func(T) uint64) {
	old, oldTags := t.slots, t.tags
	t.tags = make([]uint8, size)
	t.slots = make([]T, size)
	t.n, t.used = 0, 0
	for i, tag := range oldTags {
		if tag > tagDeleted {
			t.add(hashOf(old[i]), old[i], hashOf)
		}
	}
}

// each calls fn for every item; fn must not modify the table.
func (t *table[T]) each(fn func(T)) {
	for i, tag := range t.tags {
		if tag > tagDeleted {
			fn(t.slots[i])
		}
	}
}

func entryHash(e *entry) uint64 { return e.hash }

// entrySet is a set of distinct asserted values (by their shared *entry).
// Most sets in the trie are tiny (one leaf per constant key), so small sets
// are a slice searched linearly and only large ones pay for a table. Entries
// are hashed by their value's preserves.Hash, which the traversal computes
// once per operation and passes down.
type entrySet struct {
	small []*entry
	big   *table[*entry] // behind a pointer: most sets never need it
}

const smallSet = 8

// isBig reports whether the set has switched to its table (it stays there).
func (s *entrySet) isBig() bool { return s.big != nil }

func (s *entrySet) len() int {
	if s.isBig() {
		return s.big.n
	}
	return len(s.small)
}

func (s *entrySet) add(e *entry, h uint64) {
	if s.isBig() {
		s.big.add(h, e, entryHash)
		return
	}
	if len(s.small) < smallSet {
		s.small = append(s.small, e)
		return
	}
	s.big = new(table[*entry])
	for _, x := range s.small {
		s.big.add(entryHash(x), x, entryHash)
	}
	s.small = nil
	s.big.add(h, e, entryHash)
}

func (s *entrySet) remove(e *entry, h uint64) {
	if s.isBig() {
		s.big.del(h, func(x *entry) bool { return x == e }, entryHash)
		return
	}
	for i, x := range s.small {
		if x == e {
			last := len(s.small) - 1
			s.small[i] = s.small[last]
			s.small[last] = nil
			s.small = s.small[:last] // keep the array: sets often empty and refill
			return
		}
	}
}

func (s *entrySet) each(fn func(*entry)) {
	if s.big != nil {
		s.big.each(fn)
	}
	for _, e := range s.small {
		fn(e)
	}
}

// hashTuple hashes a tuple of values without building a Sequence, so lookups
// by constant key or capture tuple need no allocation. It is only ever
// compared with other hashTuple results.
func hashTuple(vs []preserves.Value) uint64 {
	h := uint64(len(vs)) * 0x9e3779b97f4a7c15
	for _, v := range vs {
		h ^= preserves.Hash(v) + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	}
	return h
}

func tupleEqual(a, b []preserves.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !preserves.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
