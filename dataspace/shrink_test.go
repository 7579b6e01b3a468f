package dataspace

import "testing"

// A map that shrank to a quarter of its peak is rebuilt with the same
// contents; a small one never is.
func TestShrinkMapKeepsContents(t *testing.T) {
	m, peak := map[int]int{}, 0
	for i := range 5000 {
		m[i] = i * 2
	}
	rebuilt, lost, counted := 0, uint64(0), Shrunk()
	for i := range 4900 {
		delete(m, i)
		before := peak
		m = shrinkMap(m, &peak)
		if peak < before {
			rebuilt++
			lost += uint64(before - len(m))
		}
	}
	if rebuilt == 0 {
		t.Fatal("never rebuilt")
	}
	// Other tests' maps may count too, never fewer.
	if got := Shrunk() - counted; got < lost {
		t.Errorf("Shrunk counted %d lost entries, want at least %d", got, lost)
	}
	if len(m) != 100 {
		t.Fatalf("%d entries, want 100", len(m))
	}
	for i := 4900; i < 5000; i++ {
		if m[i] != i*2 {
			t.Fatalf("m[%d] = %d", i, m[i])
		}
	}
	small, speak := map[int]int{1: 1, 2: 2}, 0
	delete(small, 1)
	if got := shrinkMap(small, &speak); len(got) != 1 || speak != 2 {
		t.Fatalf("small map: %v, peak %d", got, speak)
	}
}
