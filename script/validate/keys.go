package validate

import (
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// DaemonSpecKeys are the keys of the dictionary form of a daemon spec: the
// reference's FullDaemonProcess and our extensions (docs/protocol.md). It
// is the one list: `--check` rejects other keys, and the daemon service
// warns about them at run time (services/daemon imports it).
var DaemonSpecKeys = []string{
	"argv", "dir", "clearEnv", "env", "readyOnStart", "restart", "protocol",
	"stopTimeout", "restartDelay", "restartMaxDelay", "restartWindow", "restartLimit",
	"readiness", "readyTimeout", "watchdog",
}

// Suggest returns the candidate closest to word (edit distance, ignoring
// case), if it is close enough to be a likely misspelling, else "".
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

// didYouMean is " (did you mean X?)" or "".
func didYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// UnknownKeyMessage is the message about an unknown daemon-spec key.
func UnknownKeyMessage(key string) string {
	return "unknown key " + preserves.ShowString(key) + " in a daemon spec" + didYouMean(key, DaemonSpecKeys)
}

// EnvNameProblem says what is wrong with an environment variable name
// given to a daemon, or "" when nothing is: an empty name, or one
// containing `=`, would reach the child as a different variable.
func EnvNameProblem(name string) string {
	switch {
	case name == "":
		return "env: an empty variable name"
	case strings.ContainsRune(name, '='):
		name = preserves.ShowString(name)
		return "env: variable name " + name + " contains '=' (it would reach the program as " + name + "=VALUE, a different variable)"
	case strings.ContainsRune(name, 0):
		return "env: variable name contains a NUL byte"
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
