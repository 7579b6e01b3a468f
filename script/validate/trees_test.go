package validate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/script"
)

// TestTrees runs `--check` on the trees of testdata/trees (issue 25). Each
// NAME.check file beside a tree's scripts says what is checked and how:
//
//	# comments
//	roots: PATH…   (checked as -c paths: the primordial environment)
//	files: PATH…   (checked as file arguments)
//	---
//	the exact diagnostics, paths relative to the tree
//
// `go test -update` rewrites the part after `---`.
func TestTrees(t *testing.T) {
	checks, err := filepath.Glob("testdata/trees/*/*.check")
	require.NoError(t, err)
	require.NotEmpty(t, checks)
	for _, file := range checks {
		t.Run(strings.TrimPrefix(file, "testdata/trees/"), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Dir(file)
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			head, want, ok := strings.Cut(string(src), "---\n")
			require.True(t, ok, "%s has no --- line", file)
			var tree Tree
			for _, line := range strings.Split(head, "\n") {
				key, val, _ := strings.Cut(line, ":")
				var paths []string
				for _, p := range strings.Fields(val) {
					paths = append(paths, filepath.Join(dir, p))
				}
				switch key {
				case "roots":
					tree.Roots = paths
				case "files":
					tree.Files = paths
				}
			}
			got := diagnostics(dir, CheckTree(tree))
			if *update {
				require.NoError(t, os.WriteFile(file, []byte(head+"---\n"+got), 0o644))
				return
			}
			require.Equal(t, want, got)
		})
	}
}

// diagnostics renders the result of CheckTree with paths relative to dir.
func diagnostics(dir string, err error) string {
	if err == nil {
		return ""
	}
	var list script.ErrorList
	if !errors.As(err, &list) {
		return err.Error() + "\n"
	}
	var b strings.Builder
	for _, e := range list {
		b.WriteString(strings.ReplaceAll(e.Error(), dir+string(filepath.Separator), "") + "\n")
	}
	return b.String()
}

// TestShippedConfiguration: etc/services is clean alone and with
// etc/syndicate, whose boot.pr computes the watcher's path (scriptdir,
// join) and passes variables in its environment; checked together, the
// services' environment is the one boot.pr gives them.
func TestShippedConfiguration(t *testing.T) {
	for _, tree := range []Tree{
		{Files: []string{"../../etc/services"}},
		{Roots: []string{"../../etc/syndicate"}, Files: []string{"../../etc/services"}},
		{Files: []string{"../../etc/syndicate", "../../etc/services"}},
	} {
		require.NoError(t, CheckTree(tree), "%+v", tree)
	}
	units, incomplete := loadTree(Tree{Roots: []string{"../../etc/syndicate"}, Files: []string{"../../etc/services"}})
	require.False(t, incomplete)
	for _, u := range units {
		if strings.Contains(u.path, "etc/services") {
			require.NotNil(t, u.env.from, "%s is loaded by boot.pr's watcher", u.path)
			require.True(t, u.env.known)
			require.True(t, u.env.config["config"], "boot.pr passes an attenuation of $config")
			require.Contains(t, u.env.from.at.File, "boot.pr")
		}
	}
}
