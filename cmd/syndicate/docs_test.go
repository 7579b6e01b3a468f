package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/validate"
)

// fence matches a fenced block tagged pr, pr-error or pr-warning.
var fence = regexp.MustCompile("(?ms)^```(pr|pr-error|pr-warning)\\n(.*?)^```\\s*$")

// TestDocsExamples compiles and validates every ```pr example of docs/*.md
// and the README; ```pr-error examples must be rejected, and ```pr-warning
// examples must check with warnings only.
func TestDocsExamples(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, "../../README.md")
	dir := t.TempDir()
	n := 0
	for _, md := range files {
		src, err := os.ReadFile(md)
		require.NoError(t, err)
		for i, m := range fence.FindAllStringSubmatchIndex(string(src), -1) {
			kind := string(src[m[2]:m[3]])
			body := src[m[4]:m[5]]
			line := 1 + strings.Count(string(src[:m[4]]), "\n")
			name := filepath.Join(dir, filepath.Base(md)+"-"+itoa(i)+".pr")
			require.NoError(t, os.WriteFile(name, body, 0o644))
			err := validate.CheckAll(name)
			// An example is a fragment of a configuration: what the
			// whole-tree analysis says about the rest of it (a daemon
			// declared elsewhere) does not apply.
			var l script.ErrorList
			if errors.As(err, &l) {
				var kept script.ErrorList
				for _, e := range l {
					if !errors.Is(e, validate.ErrSuspicious) {
						kept = append(kept, e)
					}
				}
				err = kept.Err()
			}
			switch kind {
			case "pr":
				require.NoError(t, err, "%s:%d: example does not check", md, line)
			case "pr-warning":
				require.Error(t, err, "%s:%d: example should warn", md, line)
				require.False(t, script.Failed(err), "%s:%d: example does not check: %v", md, line, err)
			default:
				require.True(t, script.Failed(err), "%s:%d: example should be rejected", md, line)
			}
			n++
		}
	}
	require.Greater(t, n, 10, "examples found")
}
