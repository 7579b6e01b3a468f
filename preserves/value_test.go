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
