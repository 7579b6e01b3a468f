package dataspace

import (
	"github.com/syndicate-go/syndicate/dataspace/index"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
)

// valueMap is a hash map keyed by Preserves values (Equal/Hash semantics).
type valueMap[T any] struct {
	m map[uint64][]valueEntry[T]
	n int
}

type valueEntry[T any] struct {
	k preserves.Value
	v T
}

func (vm *valueMap[T]) ptr(k preserves.Value, create bool) *T {
	if vm.m == nil {
		if !create {
			return nil
		}
		vm.m = make(map[uint64][]valueEntry[T])
	}
	hk := preserves.Hash(k)
	es := vm.m[hk]
	for i := range es {
		if preserves.Equal(es[i].k, k) {
			return &es[i].v
		}
	}
	if !create {
		return nil
	}
	es = append(es, valueEntry[T]{k: k})
	vm.m[hk] = es
	vm.n++
	return &es[len(es)-1].v
}

func (vm *valueMap[T]) del(k preserves.Value) {
	hk := preserves.Hash(k)
	es := vm.m[hk]
	for i := range es {
		if preserves.Equal(es[i].k, k) {
			es = append(es[:i], es[i+1:]...)
			if len(es) == 0 {
				delete(vm.m, hk)
			} else {
				vm.m[hk] = es
			}
			vm.n--
			return
		}
	}
}

func (vm *valueMap[T]) each(fn func(k preserves.Value, v *T)) {
	for _, es := range vm.m {
		for i := range es {
			fn(es[i].k, &es[i].v)
		}
	}
}

// naiveIndex is the reference model of runtime spec §12.5's last paragraph:
// scan every observer, match with pattern.Match, keep counted tuple bags
// per observer. The tests run the Dataspace over it as an oracle for the
// skeleton index.
type naiveIndex struct {
	all valueMap[int]
	obs []*naiveObs
}

type naiveObs struct {
	p      pattern.Pattern
	o      index.Observer
	refs   int
	tuples valueMap[naiveTuple]
}

type naiveTuple struct {
	count int
	h     uint64
	has   bool
}

func newNaiveIndex() *naiveIndex { return &naiveIndex{} }

func (x *naiveIndex) Insert(v preserves.Value, em index.Emitter) bool {
	c := x.all.ptr(v, true)
	*c++
	if *c != 1 {
		return false
	}
	for _, o := range x.obs {
		if caps, ok := pattern.Match(o.p, v); ok {
			tp := o.tuples.ptr(preserves.Sequence(caps), true)
			tp.count++
			if tp.count == 1 {
				tp.h, tp.has = em.AssertTo(o.o, preserves.Sequence(caps))
			}
		}
	}
	return true
}

func (x *naiveIndex) Remove(v preserves.Value, em index.Emitter) bool {
	c := x.all.ptr(v, false)
	if c == nil {
		return false
	}
	*c--
	if *c > 0 {
		return false
	}
	x.all.del(v)
	for _, o := range x.obs {
		if caps, ok := pattern.Match(o.p, v); ok {
			k := preserves.Sequence(caps)
			tp := o.tuples.ptr(k, false)
			if tp == nil {
				continue
			}
			tp.count--
			if tp.count == 0 {
				if tp.has {
					em.RetractFrom(o.o, tp.h)
				}
				o.tuples.del(k)
			}
		}
	}
	return true
}

func (x *naiveIndex) Send(v preserves.Value, em index.Emitter) {
	for _, o := range x.obs {
		if caps, ok := pattern.Match(o.p, v); ok {
			em.SendTo(o.o, preserves.Sequence(caps))
		}
	}
}

func (x *naiveIndex) AddObserver(p pattern.Pattern, obs index.Observer, em index.Emitter) {
	for _, o := range x.obs {
		if o.o == obs && pattern.Equal(o.p, p) {
			o.refs++
			return
		}
	}
	o := &naiveObs{p: p, o: obs, refs: 1}
	x.obs = append(x.obs, o)
	x.all.each(func(v preserves.Value, _ *int) {
		if caps, ok := pattern.Match(p, v); ok {
			o.tuples.ptr(preserves.Sequence(caps), true).count++
		}
	})
	o.tuples.each(func(k preserves.Value, tp *naiveTuple) {
		tp.h, tp.has = em.AssertTo(obs, k.(preserves.Sequence))
	})
}

func (x *naiveIndex) RemoveObserver(p pattern.Pattern, obs index.Observer, em index.Emitter) {
	for i, o := range x.obs {
		if o.o == obs && pattern.Equal(o.p, p) {
			if o.refs--; o.refs > 0 {
				return
			}
			o.tuples.each(func(_ preserves.Value, tp *naiveTuple) {
				if tp.has {
					em.RetractFrom(obs, tp.h)
				}
			})
			x.obs = append(x.obs[:i], x.obs[i+1:]...)
			return
		}
	}
}
