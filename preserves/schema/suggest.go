package schema

import "strings"

// Suggest returns the candidate closest to word (edit distance, ignoring
// case), if it is close enough to be a likely misspelling, else "". The
// checkers use it for "did you mean" hints: misspelt dictionary keys of a
// schema (the daemon spec's), variables and built-in names of scripts.
func Suggest(word string, candidates []string) string {
	best, bestD := "", len(word)/3+2 // at most 2 edits for short words
	for _, c := range candidates {
		if n := len(word) - len(c); n >= bestD || -n >= bestD {
			continue // the distance is at least the difference in length
		}
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is " (did you mean X?)" when Suggest finds X, else "".
func DidYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// NearMiss is Suggest restricted to typos: a candidate at most two edits
// away, and one edit per three characters of it, that is not the word with
// more than one character added or removed at an end (`configDir` is a name of its own, not a typo of `config`;
// `coreEnv.` is). Suggest offers any plausible name in a message; NearMiss
// decides that a word must be a mistake.
func NearMiss(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if extends(word, c) || extends(c, word) {
			continue
		}
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestD && d > 0 && d <= len(c)/3 {
			best, bestD = c, d
		}
	}
	return best
}

// extends reports whether long is short with more than one character
// added at its start or end.
func extends(long, short string) bool {
	return len(long)-len(short) > 1 && (strings.HasPrefix(long, short) || strings.HasSuffix(long, short))
}
