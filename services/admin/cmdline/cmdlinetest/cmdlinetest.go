// Package cmdlinetest holds the command-line checks both binaries' tests
// share.
package cmdlinetest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

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

// OpenPTY returns the two sides of a fresh pseudo-terminal (closed with
// the test): the master, which reads what is written to the terminal, and
// the terminal. It skips the test where there are none.
func OpenPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}
