package services

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRuntimeDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/4242")
	require.Equal(t, "/run/user/4242", RuntimeBase())
	require.Equal(t, "/run/user/4242/syndicate", RuntimeDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	if os.Geteuid() == 0 {
		require.Equal(t, "/run/syndicate", RuntimeDir())
		return
	}
	require.Equal(t, os.TempDir(), RuntimeBase())
	require.Equal(t, filepath.Join(os.TempDir(), "syndicate-"+strconv.Itoa(os.Getuid())), RuntimeDir(),
		"the shared temporary directory gets a name of the user's own")
}
