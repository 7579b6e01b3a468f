package index

import (
	"github.com/syndicate-go/syndicate/preserves"
)

// This file holds the small containers the trie is built from. Go maps cannot
// key on Preserves values (slices and pointers compare by identity), so
// everything keyed by a value is a map from its preserves.Hash to the item,
// with a rarely used overflow list for distinct items whose 64-bit hashes
// collide. Items are compared with preserves.Equal.

// bucketMap maps 64-bit hashes to items, handling collisions.
type bucketMap[T any] struct {
	m    map[uint64]T
	over map[uint64][]T // further items sharing a hash with m's item
	n    int
}

func (b *bucketMap[T]) get(h uint64, eq func(T) bool) (T, bool) {
	if t, ok := b.m[h]; ok {
		if eq(t) {
			return t, true
		}
		for _, u := range b.over[h] {
			if eq(u) {
				return u, true
			}
		}
	}
	var zero T
	return zero, false
}

// put adds t under h; the caller has checked that no equal item is present.
func (b *bucketMap[T]) put(h uint64, t T) {
	if b.m == nil {
		b.m = make(map[uint64]T)
	}
	b.n++
	if _, taken := b.m[h]; !taken {
		b.m[h] = t
		return
	}
	if b.over == nil {
		b.over = make(map[uint64][]T)
	}
	b.over[h] = append(b.over[h], t)
}

// del removes the item under h satisfying eq, if any.
func (b *bucketMap[T]) del(h uint64, eq func(T) bool) bool {
	t, ok := b.m[h]
	if !ok {
		return false
	}
	extra := b.over[h]
	if eq(t) {
		if len(extra) == 0 {
			delete(b.m, h)
		} else {
			b.m[h] = extra[len(extra)-1]
			b.setOver(h, extra[:len(extra)-1])
		}
		b.n--
		return true
	}
	for i, u := range extra {
		if eq(u) {
			extra[i] = extra[len(extra)-1]
			b.setOver(h, extra[:len(extra)-1])
			b.n--
			return true
		}
	}
	return false
}

func (b *bucketMap[T]) setOver(h uint64, extra []T) {
	if len(extra) == 0 {
		delete(b.over, h)
		if len(b.over) == 0 {
			b.over = nil
		}
		return
	}
	b.over[h] = extra
}

func (b *bucketMap[T]) len() int { return b.n }

// each calls fn for every item; fn must not modify the map.
func (b *bucketMap[T]) each(fn func(T)) {
	for h, t := range b.m {
		fn(t)
		for _, u := range b.over[h] {
			fn(u)
		}
	}
}

// entrySet is a set of distinct asserted values (by their shared *entry).
// Most sets in the trie are tiny (one leaf per constant key), so small sets
// are a slice searched linearly and only large ones pay for a map.
type entrySet struct {
	small []*entry
	big   map[*entry]struct{}
}

const smallSet = 8

func (s *entrySet) len() int {
	if s.big != nil {
		return len(s.big)
	}
	return len(s.small)
}

func (s *entrySet) add(e *entry) {
	if s.big != nil {
		s.big[e] = struct{}{}
		return
	}
	if len(s.small) < smallSet {
		s.small = append(s.small, e)
		return
	}
	s.big = make(map[*entry]struct{}, 2*smallSet)
	for _, x := range s.small {
		s.big[x] = struct{}{}
	}
	s.big[e] = struct{}{}
	s.small = nil
}

func (s *entrySet) remove(e *entry) {
	if s.big != nil {
		delete(s.big, e)
		return
	}
	for i, x := range s.small {
		if x == e {
			last := len(s.small) - 1
			s.small[i] = s.small[last]
			s.small[last] = nil
			s.small = s.small[:last]
			if last == 0 {
				s.small = nil
			}
			return
		}
	}
}

func (s *entrySet) each(fn func(*entry)) {
	if s.big != nil {
		for e := range s.big {
			fn(e)
		}
		return
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
