package scripttest

import (
	"os"
	"path/filepath"
	"testing"
)

// Source is a script's name and text.
type Source struct{ Name, Src string }

// Files reads every file matching the globs (relative to the test's
// directory), in order, failing tb on a file it cannot read: the scripts
// tests run over, the repository's own among them.
func Files(tb testing.TB, globs ...string) []Source {
	tb.Helper()
	var out []Source
	for _, glob := range globs {
		files, err := filepath.Glob(glob)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, Source{f, string(b)})
		}
	}
	return out
}
