package cmdline

import (
	"runtime/debug"
	"strings"
)

// Version describes this build for `--version` and the banner: the module
// version (a tag, or "(devel)" for a build from a checkout), plus the VCS
// revision and whether the tree was modified, when the go command
// recorded them.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " " + rev[:min(12, len(rev))] + modified
	}
	return v + " " + bi.GoVersion
}
