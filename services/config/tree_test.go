package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"
)

// fakeDirs records watch calls instead of talking to inotify, so the tree's
// bookkeeping can be checked on its own. Adding a directory named in fail
// fails.
type fakeDirs struct {
	watched map[string]bool
	fail    map[string]bool
}

var errFakeWatch = errors.New("fake: cannot watch")

func (f *fakeDirs) Add(d string) error {
	if f.fail[d] {
		return errFakeWatch
	}
	f.watched[d] = true
	return nil
}
func (f *fakeDirs) Remove(d string) error { delete(f.watched, d); return nil }

func (f *fakeDirs) list(root string) []string {
	var out []string
	for d := range f.watched {
		r, _ := filepath.Rel(root, d)
		out = append(out, filepath.ToSlash(r))
	}
	slices.Sort(out)
	return out
}

func changeList(root string, cs []Change) []string {
	var out []string
	for _, c := range cs {
		r, _ := filepath.Rel(root, c.Path)
		if c.Removed {
			out = append(out, "-"+r)
		} else {
			out = append(out, "+"+r)
		}
	}
	return out
}

func TestTreeWatchesVisibleDirectoriesOnly(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/b/c.pr", "a/d.pr", ".git/x.pr", "a/.cache/y.pr", "e/f.txt"} {
		mustWrite(t, filepath.Join(root, f), "<x>")
	}
	fd := &fakeDirs{watched: map[string]bool{}}
	tr := newTree(root, fd, zerolog.Nop())
	if got := changeList(root, mustScan(t, tr)); !slices.Equal(got, []string{"+a/b/c.pr", "+a/d.pr"}) {
		t.Fatalf("scan: %v", got)
	}
	if got := fd.list(root); !slices.Equal(got, []string{".", "a", "a/b", "e"}) {
		t.Fatalf("watched: %v", got)
	}
	// A second full scan with nothing changed reports nothing.
	if cs := mustScan(t, tr); len(cs) != 0 {
		t.Fatalf("rescan reported %v", changeList(root, cs))
	}
}

func TestTreeRemovedDirectoryForgetsEverythingUnderIt(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/b/c.pr", "a/d.pr", "ab.pr"} {
		mustWrite(t, filepath.Join(root, f), "<x>")
	}
	fd := &fakeDirs{watched: map[string]bool{}}
	tr := newTree(root, fd, zerolog.Nop())
	mustScan(t, tr)
	if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	// The event names only the directory; "ab.pr" shares a name prefix and
	// must survive.
	got := changeList(root, tr.update([]string{filepath.Join(root, "a")}))
	if !slices.Equal(got, []string{"-a/b/c.pr", "-a/d.pr"}) {
		t.Fatalf("update: %v", got)
	}
	if got := fd.list(root); !slices.Equal(got, []string{"."}) {
		t.Fatalf("watched: %v", got)
	}
}

func TestTreeReplacedDirectoryIsRewatched(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a/x.pr"), "<x>")
	fd := &fakeDirs{watched: map[string]bool{}}
	tr := newTree(root, fd, zerolog.Nop())
	mustScan(t, tr)
	oldID := tr.dirs[filepath.Join(root, "a")]
	// Swap in a different directory with the same content under the same
	// name: no script changed, but the watch must be renewed (new inode).
	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, ".old")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "a/x.pr"), "<x>")
	if cs := tr.update([]string{filepath.Join(root, "a")}); len(cs) != 0 {
		t.Fatalf("same content reported: %v", changeList(root, cs))
	}
	if newID := tr.dirs[filepath.Join(root, "a")]; newID == oldID {
		t.Fatal("watch not renewed for the replacement directory")
	}
}

func TestTreeIgnoresPathsOutsideRoot(t *testing.T) {
	root := t.TempDir()
	tr := newTree(filepath.Join(root, "cfg"), &fakeDirs{watched: map[string]bool{}}, zerolog.Nop())
	mustWrite(t, filepath.Join(root, "cfgx/a.pr"), "<x>")
	mustWrite(t, filepath.Join(root, "cfg/a.pr"), "<x>")
	got := changeList(root, tr.update([]string{filepath.Join(root, "cfgx/a.pr"), filepath.Join(root, "cfg/a.pr")}))
	if !slices.Equal(got, []string{"+cfg/a.pr"}) {
		t.Fatalf("update: %v", got)
	}
}

func TestTreeUnreadableFileKeepsReportedVersion(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can read anything")
	}
	root := t.TempDir()
	p := filepath.Join(root, "a.pr")
	mustWrite(t, p, "<x>")
	tr := newTree(root, &fakeDirs{watched: map[string]bool{}}, zerolog.Nop())
	mustScan(t, tr)
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	if cs := tr.update([]string{p}); len(cs) != 0 {
		t.Fatalf("unreadable file reported %v; want the running version kept", changeList(root, cs))
	}
}

func TestCanonicalise(t *testing.T) {
	real := tempRoot(t)
	link := filepath.Join(tempRoot(t), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	got, err := canonicalise(link)
	if err != nil || got != real {
		t.Fatalf("canonicalise(%s) = %q, %v; want %q", link, got, err, real)
	}
	_, err = canonicalise(filepath.Join(real, "missing"))
	if !errors.Is(err, ErrCanonicalise) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing path: %v; want ErrCanonicalise wrapping ErrNotExist", err)
	}
}

func mustScan(t *testing.T, tr *tree) []Change {
	t.Helper()
	cs, err := tr.scanAll()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// §3.1 step 3: a root that exists but cannot be watched is an error (the
// worker fails and is retried); an unwatchable subdirectory is only logged.
func TestTreeRootWatchFailure(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "sub/a.pr"), "<a>")
	mustWrite(t, filepath.Join(root, "b.pr"), "<b>")
	fd := &fakeDirs{watched: map[string]bool{}, fail: map[string]bool{filepath.Join(root, "sub"): true}}
	tr := newTree(root, fd, zerolog.Nop())
	cs, err := tr.scanAll()
	if err != nil || len(cs) != 2 {
		t.Fatalf("unwatchable subdirectory: %v, %v", changeList(root, cs), err)
	}
	fd.fail[root] = true
	tr = newTree(root, fd, zerolog.Nop())
	if _, err := tr.scanAll(); !errors.Is(err, errFakeWatch) {
		t.Fatalf("unwatchable root: %v", err)
	}
	// A single-file root needs its directory watched.
	tr = newTree(filepath.Join(root, "b.pr"), fd, zerolog.Nop())
	if _, err := tr.scanAll(); !errors.Is(err, errFakeWatch) {
		t.Fatalf("unwatchable directory of a single-file root: %v", err)
	}
	// A missing root is not a watch failure (it may appear later).
	tr = newTree(filepath.Join(root, "missing"), fd, zerolog.Nop())
	if _, err := tr.scanAll(); err != nil {
		t.Fatalf("missing root: %v", err)
	}
}

// A rescan undoes what a loop made the model hold (as an earlier version,
// descending into a run-time loop, recorded), and a directory replaced by
// a loop to its parent forgets its scripts.
func TestTreeRescanForgetsLoopedScripts(t *testing.T) {
	root := tempRoot(t)
	mustWrite(t, filepath.Join(root, "a.pr"), "<a>")
	mustWrite(t, filepath.Join(root, "d/sub/x.pr"), "<x>")
	fd := &fakeDirs{watched: map[string]bool{}}
	tr := newTree(root, fd, zerolog.Nop())
	mustScan(t, tr)
	if err := os.Symlink(".", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	if cs := tr.update([]string{filepath.Join(root, "loop")}); len(cs) != 0 {
		t.Fatalf("a run-time loop reported %v", changeList(root, cs))
	}
	tr.files[filepath.Join(root, "loop/a.pr")] = tr.files[filepath.Join(root, "a.pr")]
	tr.dirs[filepath.Join(root, "loop")] = tr.dirs[root]
	if got := changeList(root, mustScan(t, tr)); len(got) != 1 || got[0] != "-loop/a.pr" {
		t.Fatalf("rescan: %v, want -loop/a.pr", got)
	}
	if _, ok := tr.dirs[filepath.Join(root, "loop")]; ok {
		t.Fatal("the loop is still recorded as a watched directory")
	}
	// d/sub becomes a link to the root: its script goes, and an event inside the
	// loop finds nothing either.
	if err := os.RemoveAll(filepath.Join(root, "d/sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(root, "d/sub")); err != nil {
		t.Fatal(err)
	}
	if got := changeList(root, tr.update([]string{filepath.Join(root, "d/sub")})); len(got) != 1 || got[0] != "-d/sub/x.pr" {
		t.Fatalf("directory replaced by a loop: %v", got)
	}
	if cs := tr.update([]string{filepath.Join(root, "d/sub/sub/a.pr")}); len(cs) != 0 {
		t.Fatalf("a path inside a loop reported %v", changeList(root, cs))
	}
}
