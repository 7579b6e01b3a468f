package schema

import "testing"

func TestSuggest(t *testing.T) {
	keys := []string{"argv", "restart", "stopTimeout", "readiness"}
	for _, c := range []struct{ word, want string }{
		{"restat", "restart"},
		{"stoptimout", "stopTimeout"},
		{"frobnicate", ""},
	} {
		if got := Suggest(c.word, keys); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := DidYouMean("argb", keys); got != " (did you mean argv?)" {
		t.Errorf("DidYouMean = %q", got)
	}
}
