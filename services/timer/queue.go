package timer

import (
	"container/heap"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// item is one pending deadline: a later-than waiting for its time, the
// next tick of a periodic-tick, or a set-timer. at is nanoseconds, on the
// monotonic clock (Clock.Elapsed) or, when wall is set, Unix time on the
// wall clock.
type item struct {
	at    int64
	wall  bool
	fire  func(t *dataspace.Turn, now float64)
	index int // position in its queue; -1 when not queued
}

// queue is a min-heap of items by at (container/heap).
type queue []*item

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue) Push(x any) {
	it := x.(*item)
	it.index = len(*q)
	*q = append(*q, it)
}
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	it.index = -1
	return it
}

// remove takes it out of q if it is queued there.
func (q *queue) remove(it *item) {
	if it.index >= 0 && it.index < len(*q) && (*q)[it.index] == it {
		heap.Remove(q, it.index)
	}
}

// byValue maps Preserves values (compared with preserves.Equal, so 1 and
// 1.0 are different keys) to T.
type byValue[T any] struct {
	m map[uint64][]valueEntry[T]
	n int
}

type valueEntry[T any] struct {
	k preserves.Value
	v T
}

func newByValue[T any]() *byValue[T] { return &byValue[T]{m: make(map[uint64][]valueEntry[T])} }

func (b *byValue[T]) get(k preserves.Value) (T, bool) {
	for _, e := range b.m[preserves.Hash(k)] {
		if preserves.Equal(e.k, k) {
			return e.v, true
		}
	}
	var zero T
	return zero, false
}

func (b *byValue[T]) put(k preserves.Value, v T) {
	h := preserves.Hash(k)
	es := b.m[h]
	for i, e := range es {
		if preserves.Equal(e.k, k) {
			es[i].v = v
			return
		}
	}
	b.m[h] = append(es, valueEntry[T]{k, v})
	b.n++
}

func (b *byValue[T]) delete(k preserves.Value) {
	h := preserves.Hash(k)
	es := b.m[h]
	for i, e := range es {
		if preserves.Equal(e.k, k) {
			es = append(es[:i], es[i+1:]...)
			b.n--
			if len(es) == 0 {
				delete(b.m, h)
			} else {
				b.m[h] = es
			}
			return
		}
	}
}

func (b *byValue[T]) len() int { return b.n }
