// Package cmdlinetest holds the command-line checks both binaries' tests
// share.
package cmdlinetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/services/admin/cmdline"
)

// ManPages checks that the man pages in dir (one binary's directory) are
// those cmdline.ManPages generates from root (update: rewrites them).
func ManPages(t *testing.T, root *cobra.Command, dir string, update bool) {
	t.Helper()
	tmp := t.TempDir()
	require.NoError(t, cmdline.ManPages(root, tmp))
	fresh, err := filepath.Glob(filepath.Join(tmp, "*.1"))
	require.NoError(t, err)
	require.NotEmpty(t, fresh)
	if update {
		old, _ := filepath.Glob(filepath.Join(dir, "*.1"))
		for _, f := range old {
			require.NoError(t, os.Remove(f))
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	want := map[string]bool{}
	for _, f := range fresh {
		name := filepath.Base(f)
		want[name] = true
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if update {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, "run go test -update to write the man pages")
		require.Equal(t, string(data), string(got), "%s is stale: run go test -update", name)
	}
	committed, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for _, f := range committed {
		name := filepath.Base(f)
		if !want[name] {
			t.Errorf("%s documents no command any more: run go test -update", f)
		}
	}
}
