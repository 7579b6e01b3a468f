package index

import "github.com/syndicate-go/syndicate/preserves"

// topClasses partitions the asserted values by their class at top level:
// records by label, sequences, dictionaries (atoms match no group pattern
// there and are left out). The first observer of a shape creates the trie
// node below the root for its top-level class, whose cache must hold every
// value of that class; without the partition that meant scanning every
// value asserted, so one new subscription to <service-state _ _> cost 1.8 s
// beside 10^6 unrelated assertions (issue 23). With it, the node is filled
// from its class only, and a subscription costs what its class holds.
//
// Keeping it costs one set insertion per distinct value asserted (a Go map
// lookup by label for symbol-labelled records, nearly all of them).
type topClasses struct {
	bySym     map[preserves.Symbol]*entrySet
	otherRec  entrySet // records with labels that are not symbols
	arr, dict entrySet
}

// set returns the set ent's value belongs to (nil: an atom), creating a
// label's set if create.
func (tc *topClasses) set(ent *entry, create bool) *entrySet {
	switch x := preserves.Unwrap(ent.v).(type) {
	case *preserves.Record:
		sym, ok := preserves.Unwrap(x.Label).(preserves.Symbol)
		if !ok {
			return &tc.otherRec
		}
		s := tc.bySym[sym]
		if s == nil && create {
			if tc.bySym == nil {
				tc.bySym = make(map[preserves.Symbol]*entrySet)
			}
			s = &entrySet{}
			tc.bySym[sym] = s
		}
		return s
	case preserves.Sequence:
		return &tc.arr
	case *preserves.Dictionary:
		return &tc.dict
	}
	return nil
}

func (tc *topClasses) add(ent *entry) {
	if s := tc.set(ent, true); s != nil {
		s.add(ent, ent.hash)
	}
}

func (tc *topClasses) remove(ent *entry) {
	s := tc.set(ent, false)
	if s == nil {
		return
	}
	s.remove(ent, ent.hash)
	if s.len() == 0 {
		if r, ok := preserves.Unwrap(ent.v).(*preserves.Record); ok {
			if sym, ok := preserves.Unwrap(r.Label).(preserves.Symbol); ok {
				delete(tc.bySym, sym)
			}
		}
	}
}

// each calls fn for every asserted value of class c at top level.
func (tc *topClasses) each(c class, fn func(*entry)) {
	switch c.kind {
	case classArr:
		tc.arr.each(fn)
	case classDict:
		tc.dict.each(fn)
	case classRec:
		if sym, ok := preserves.Unwrap(c.label).(preserves.Symbol); ok {
			if s := tc.bySym[sym]; s != nil {
				s.each(fn)
			}
			return
		}
		tc.otherRec.each(func(ent *entry) {
			if c.matches(ent.v) {
				fn(ent)
			}
		})
	}
}
