package index

import (
	"fmt"
	"slices"
	"testing"
)

// Removing an observer moves the last observer slot (and each tuple's last
// handle) into its place, and the slot list gains a map past fewObservers.
// Remove observers first, last and from the middle, at and around that
// threshold and with tuple counts around the small-set size, interleaved
// with tuple removals: after every step each remaining observer must hold
// exactly the live tuples, under handles the recorder gave that observer
// (it fails on a retraction sent under another observer's handle).
func TestObserverRemovalAtThresholds(t *testing.T) {
	for _, nObs := range []int{fewObservers - 1, fewObservers, fewObservers + 1, 2 * fewObservers} {
		for _, nTuples := range []int{1, smallSet, smallSet + 1, 33} {
			for _, order := range []string{"first", "last", "middle"} {
				t.Run(fmt.Sprintf("%dobs-%dtuples-%s", nObs, nTuples, order), func(t *testing.T) {
					observerRemoval(t, nObs, nTuples, order)
				})
			}
		}
	}
}

func observerRemoval(t *testing.T, nObs, nTuples int, order string) {
	ix, r := New(), newRecorder(t)
	p := pat(t, fooBind)
	obs := make([]string, nObs)
	for i := range obs {
		obs[i] = fmt.Sprintf("o%02d", i)
		ix.AddObserver(p, obs[i], r)
	}
	live := make([]int, nTuples)
	for i := range live {
		live[i] = i
		ix.Insert(parse(t, fmt.Sprintf("<foo %d>", i)), r)
	}
	check := func(what string) {
		t.Helper()
		var want []string
		for _, o := range obs {
			for _, k := range live {
				want = append(want, fmt.Sprintf("%s[%d]", o, k))
			}
		}
		slices.Sort(want)
		if got := r.holdings(); !slices.Equal(got, want) {
			t.Fatalf("%s: holdings\n got %v\nwant %v", what, got, want)
		}
	}
	check("set-up")
	for step := 0; len(obs) > 0; step++ {
		i := 0
		switch order {
		case "last":
			i = len(obs) - 1
		case "middle":
			i = len(obs) / 2
		}
		ix.RemoveObserver(p, obs[i], r)
		obs = slices.Delete(obs, i, i+1)
		check(fmt.Sprintf("after removing observer %d", step))
		// Every other step, a tuple goes too: its handles must be the
		// ones the swaps left in place.
		if step%2 == 1 && len(live) > 0 {
			k := live[len(live)/2]
			ix.Remove(parse(t, fmt.Sprintf("<foo %d>", k)), r)
			live = slices.DeleteFunc(live, func(x int) bool { return x == k })
			check(fmt.Sprintf("after removing tuple %d", k))
		}
	}
	if len(ix.root.edges) != 0 || len(ix.root.conts) != 0 {
		t.Fatal("trie not empty after every observer left")
	}
}
