package preserves

import "testing"

func TestHasEmbedded(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{`1`, false},
		{`<a [b {c: #{d}}]>`, false},
		{`#:0`, true},
		{`<a #:x>`, true},
		{`<#:x>`, true},
		{`[1 [2 [#:3]]]`, true},
		{`#{1 #:2}`, true},
		{`{k: #:v}`, true},
		{`{#:k: v}`, true},
		{`@#:ann 1`, false},
		{`[@"note" #:x]`, true},
	} {
		v, err := ParseTextOptions([]byte(c.text), TextOptions{Annotations: true})
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if got := HasEmbedded(v); got != c.want {
			t.Errorf("HasEmbedded(%s) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestDict(t *testing.T) {
	got := Dict(Symbol("b"), Int(2), Symbol("a"), Int(1), Symbol("b"), Int(3))
	want, err := ParseText(`{a: 1, b: 3}`)
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(got, want) {
		t.Errorf("Dict = %v, want %v (sorted, last repeated key wins)", got, want)
	}
	if Dict().Len() != 0 {
		t.Error("Dict() is not empty")
	}
	defer func() {
		if recover() == nil {
			t.Error("odd arguments did not panic")
		}
	}()
	Dict(Symbol("k"))
}

// Entries given in key order are taken as they are: one allocation (the
// dictionary), no sort; any other order still sorts and deduplicates.
func TestNewDictionarySortedInput(t *testing.T) {
	a, b, c := Symbol("a"), Symbol("b"), Symbol("c")
	entries := []DictEntry{{a, Int(1)}, {b, Int(2)}, {c, Int(3)}}
	if n := testing.AllocsPerRun(100, func() { _ = NewDictionary(entries...) }); n > 1 {
		t.Errorf("%v allocations for sorted entries, want 1", n)
	}
	d := NewDictionary(DictEntry{c, Int(3)}, DictEntry{a, Int(1)}, DictEntry{a, Int(9)}, DictEntry{b, Int(2)})
	if got := FormatText(d); got != "{a: 9, b: 2, c: 3}" {
		t.Errorf("unsorted input: %s", got)
	}
}

// TestNewSortedDictionary: entries already in key order make the same
// dictionary as NewDictionary, keeping the caller's slice.
func TestNewSortedDictionary(t *testing.T) {
	es := []DictEntry{{Key: Int(1), Value: Int(2)}, {Key: String("a"), Value: Int(3)}, {Key: Symbol("a"), Value: Int(4)}}
	d := NewSortedDictionary(es)
	if !Equal(d, NewDictionary(DictEntry{Key: Symbol("a"), Value: Int(4)}, es[1], es[0])) {
		t.Fatalf("got %s", FormatText(d))
	}
	if &d.Entries()[0] != &es[0] {
		t.Fatal("the entries were copied")
	}
}
