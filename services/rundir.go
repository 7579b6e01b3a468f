package services

import (
	"os"
	"path/filepath"
	"strconv"
)

// The run-time directory: where the server's sockets live (the admin
// socket, the daemons' sd_notify sockets). One rule, so that a client
// computes the same admin socket path as the server and an operator finds
// every socket in one place.

// RuntimePathRule says in words where the file name goes in RuntimeDir
// (for help texts, which must not depend on who reads them).
func RuntimePathRule(name string) string {
	return "$XDG_RUNTIME_DIR/syndicate/" + name + ", /run/syndicate/" + name + " as root, or $TMPDIR/syndicate-UID/" + name
}

// RuntimeBase is the directory the run-time directory is made in:
// $XDG_RUNTIME_DIR when set, else /run as root (when it exists: a minimal
// root file system may lack it), else the temporary directory (os.TempDir).
func RuntimeBase() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		if st, err := os.Stat("/run"); err == nil && st.IsDir() {
			return "/run"
		}
	}
	return os.TempDir()
}

// RuntimeDir is the server's run-time directory (RuntimePathRule): the
// directory "syndicate" in RuntimeBase, or, in the temporary directory that
// all users share, "syndicate-UID". Its user creates it with mode 0700.
func RuntimeDir() string {
	base := RuntimeBase()
	if base == os.TempDir() { // shared by every user: a name of the user's own
		return filepath.Join(base, "syndicate-"+strconv.Itoa(os.Getuid()))
	}
	return filepath.Join(base, "syndicate")
}
