package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

// checkNoLeak fails if goroutines running this package's watcher or fsnotify
// code are still alive shortly after a test stops everything.
func checkNoLeak(t testing.TB) {
	t.Helper()
	eventually(t, "watcher goroutines to end", func() bool {
		buf := make([]byte, 1<<20)
		s := string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(s, "fsnotify.") && !strings.Contains(s, "config.(*Watcher).Run")
	})
}

// countGoroutines counts live goroutines whose stack mentions fn.
func countGoroutines(fn string) int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// harness runs a Watcher over a temporary directory and mirrors what it
// reports: the live scripts (path relative to the root → content) and the
// full history of changes.
type harness struct {
	t    *testing.T
	root string
	w    *Watcher

	mu      sync.Mutex
	live    map[string]string
	history []string // "+rel" or "-rel", in delivery order
	batches int

	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, setup func(root string), opts WatchOptions) *harness {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(root)
	}
	return startHarness(t, root, opts)
}

func startHarness(t *testing.T, root string, opts WatchOptions) *harness {
	t.Helper()
	opts.Logger = zerolog.New(zerolog.NewTestWriter(t))
	w, err := NewWatcher(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: root, w: w, live: map[string]string{}, done: make(chan error, 1)}
	cs, err := w.Scan()
	if err != nil {
		t.Fatal(err)
	}
	h.apply(cs)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- w.Run(ctx, func(cs []Change) bool { h.apply(cs); return true }) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	checkNoLeak(h.t)
}

func (h *harness) rel(p string) string {
	r, err := filepath.Rel(h.root, p)
	if err != nil {
		h.t.Fatal(err)
	}
	return filepath.ToSlash(r)
}

func (h *harness) apply(cs []Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(cs) > 0 {
		h.batches++
	}
	for _, c := range cs {
		r := h.rel(c.Path)
		if c.Removed {
			if _, ok := h.live[r]; !ok {
				h.t.Errorf("removal of %s, which was not live", r)
			}
			delete(h.live, r)
			h.history = append(h.history, "-"+r)
		} else {
			if prev, ok := h.live[r]; ok && prev == string(c.Src) {
				h.t.Errorf("change of %s reported with unchanged content", r)
			}
			h.live[r] = string(c.Src)
			h.history = append(h.history, "+"+r)
		}
	}
}

func (h *harness) snapshot() (map[string]string, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]string, len(h.live))
	for k, v := range h.live {
		m[k] = v
	}
	return m, slices.Clone(h.history)
}

func (h *harness) path(rel string) string { return filepath.Join(h.root, filepath.FromSlash(rel)) }

func (h *harness) write(rel, content string) {
	h.t.Helper()
	p := h.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// waitLive waits until rel is live with exactly content.
func (h *harness) waitLive(rel, content string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("%s = %q", rel, content), func() bool {
		m, _ := h.snapshot()
		v, ok := m[rel]
		return ok && v == content
	})
}

func (h *harness) waitGone(rel string) {
	h.t.Helper()
	eventually(h.t, rel+" to be removed", func() bool {
		m, _ := h.snapshot()
		_, ok := m[rel]
		return !ok
	})
}

// barrier writes a fresh sentinel script and waits for it. Events are
// processed in order, so once the sentinel is reported every earlier
// filesystem change has been reconciled too.
var barrierSeq int

func (h *harness) barrier() {
	h.t.Helper()
	barrierSeq++
	content := fmt.Sprintf("<sentinel %d>", barrierSeq)
	h.write("zz-sentinel.pr", content)
	h.waitLive("zz-sentinel.pr", content)
}

// historyOf returns the history entries about rel.
func historyOf(hist []string, rel string) []string {
	var out []string
	for _, e := range hist {
		if e[1:] == rel {
			out = append(out, e)
		}
	}
	return out
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherInitialScanSortedRecursiveAndFiltered(t *testing.T) {
	h := newHarness(t, func(root string) {
		for _, f := range []string{
			"b.pr", "a.pr", "sub/dir/c.pr", "sub/a.pr", "z.pr", "x.pr/inside.pr",
			// ignored (§3.2, §3.3):
			".hidden.pr", "x.pr~", "notes.txt", ".git/config.pr", "A.PR", "sub/.h/d.pr",
		} {
			mustWrite(t, filepath.Join(root, f), "<"+f+">")
		}
		if err := os.Symlink(filepath.Join(root, "notes.txt"), filepath.Join(root, "link.pr")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/nonexistent/target.pr", filepath.Join(root, "dangling.pr")); err != nil {
			t.Fatal(err)
		}
	}, WatchOptions{})
	_, hist := h.snapshot()
	want := []string{"+a.pr", "+b.pr", "+link.pr", "+sub/a.pr", "+sub/dir/c.pr", "+x.pr/inside.pr", "+z.pr"}
	if !slices.Equal(hist, want) {
		t.Fatalf("initial scan order\n got %v\nwant %v", hist, want)
	}
	m, _ := h.snapshot()
	if m["link.pr"] != "<notes.txt>" {
		t.Errorf("symlink content = %q", m["link.pr"])
	}
}

func TestWatcherLiveCreateModifyDelete(t *testing.T) {
	h := newHarness(t, nil, WatchOptions{})
	h.write("new.pr", "<one>")
	h.waitLive("new.pr", "<one>")
	h.write("new.pr", "<two>")
	h.waitLive("new.pr", "<two>")
	if err := os.Remove(h.path("new.pr")); err != nil {
		t.Fatal(err)
	}
	h.waitGone("new.pr")
	h.barrier()
	_, hist := h.snapshot()
	// os.WriteFile truncates then writes, so a slow writer may be observed
	// in between (an extra, empty version); only atomic saves promise
	// exactly one change. The removal must come last and exactly once.
	got := historyOf(hist, "new.pr")
	if len(got) < 3 || got[len(got)-1] != "-new.pr" || slices.Contains(got[:len(got)-1], "-new.pr") {
		t.Fatalf("history of new.pr: %v", got)
	}
}

func TestWatcherIgnoresNonScriptsLive(t *testing.T) {
	h := newHarness(t, nil, WatchOptions{})
	h.write(".hidden.pr", "<h>")
	h.write("x.pr~", "<b>")
	h.write("notes.txt", "<n>")
	h.write(".git/config.pr", "<g>")
	if err := os.Mkdir(h.path("d.pr"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.barrier()
	m, _ := h.snapshot()
	if len(m) != 1 {
		t.Fatalf("live scripts: %v (want only the sentinel)", m)
	}
}

func TestWatcherRenameFile(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "a.pr"), "<a>") }, WatchOptions{})
	h.waitLive("a.pr", "<a>")
	if err := os.Rename(h.path("a.pr"), h.path("b.pr")); err != nil {
		t.Fatal(err)
	}
	h.waitLive("b.pr", "<a>")
	h.waitGone("a.pr")
	// Renaming to a non-script name retracts it; renaming back restores it.
	if err := os.Rename(h.path("b.pr"), h.path("b.txt")); err != nil {
		t.Fatal(err)
	}
	h.waitGone("b.pr")
	if err := os.Rename(h.path("b.txt"), h.path("c.pr")); err != nil {
		t.Fatal(err)
	}
	h.waitLive("c.pr", "<a>")
}

func TestWatcherUnchangedContentNotReported(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "a.pr"), "<a>") }, WatchOptions{})
	p := h.path("a.pr")
	now := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, now, now); err != nil { // touch
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	// Rewrite the same bytes in place (no truncation, which could be
	// observed as an empty intermediate version).
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("<a>"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h.w.Rescan()
	h.barrier()
	_, hist := h.snapshot()
	if got := historyOf(hist, "a.pr"); len(got) != 1 {
		t.Fatalf("a.pr reported %d times (%v); want only the initial scan", len(got), got)
	}
}

func TestWatcherAtomicSaveIsOneChange(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "a.pr"), "<v0>") }, WatchOptions{})
	for i, tmp := range []string{".a.pr.swp", "a.pr.tmp123", "4913", ".#a.pr"} {
		content := fmt.Sprintf("<v%d>", i+1)
		h.write(tmp, content)
		if err := os.Rename(h.path(tmp), h.path("a.pr")); err != nil {
			t.Fatal(err)
		}
		h.waitLive("a.pr", content)
	}
	h.barrier()
	_, hist := h.snapshot()
	if got := historyOf(hist, "a.pr"); len(got) != 5 {
		t.Fatalf("a.pr history %v: want the initial load plus exactly one change per save", got)
	}
}

func TestWatcherNewDirectoryIsScanned(t *testing.T) {
	h := newHarness(t, nil, WatchOptions{})
	// Prepared outside the root, then moved in: no per-file events at all.
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "pkg/one.pr"), "<one>")
	mustWrite(t, filepath.Join(outside, "pkg/deep/two.pr"), "<two>")
	if err := os.Rename(filepath.Join(outside, "pkg"), h.path("pkg")); err != nil {
		t.Fatal(err)
	}
	h.waitLive("pkg/one.pr", "<one>")
	h.waitLive("pkg/deep/two.pr", "<two>")
	// mkdir -p plus an immediate write races the watch set-up; the scan of
	// the new directory covers it.
	h.write("x/y/z/w.pr", "<w>")
	h.waitLive("x/y/z/w.pr", "<w>")
	// The new directories are watched: later edits are seen.
	h.write("pkg/deep/two.pr", "<two'>")
	h.waitLive("pkg/deep/two.pr", "<two'>")
	h.write("x/y/z/w.pr", "<w'>")
	h.waitLive("x/y/z/w.pr", "<w'>")
}

func TestWatcherRemoveDirectory(t *testing.T) {
	h := newHarness(t, func(root string) {
		mustWrite(t, filepath.Join(root, "d/a.pr"), "<a>")
		mustWrite(t, filepath.Join(root, "d/e/b.pr"), "<b>")
		mustWrite(t, filepath.Join(root, "keep.pr"), "<k>")
	}, WatchOptions{})
	if err := os.RemoveAll(h.path("d")); err != nil {
		t.Fatal(err)
	}
	h.waitGone("d/a.pr")
	h.waitGone("d/e/b.pr")
	h.barrier()
	m, _ := h.snapshot()
	if _, ok := m["keep.pr"]; !ok {
		t.Fatal("keep.pr lost")
	}
	h.stop() // the tree belongs to Run's goroutine until Run returns
	if n := len(h.w.tree.dirs); n != 1 {
		t.Errorf("watching %d directories after removal, want 1 (the root): %v", n, h.w.tree.dirs)
	}
}

func TestWatcherMoveDirectoryAway(t *testing.T) {
	h := newHarness(t, func(root string) {
		mustWrite(t, filepath.Join(root, "d/a.pr"), "<a>")
		mustWrite(t, filepath.Join(root, "d/e/b.pr"), "<b>")
	}, WatchOptions{})
	outside := t.TempDir()
	if err := os.Rename(h.path("d"), filepath.Join(outside, "d")); err != nil {
		t.Fatal(err)
	}
	h.waitGone("d/a.pr")
	h.waitGone("d/e/b.pr")
	// Edits in the moved-away tree must not be reported under the old name.
	mustWrite(t, filepath.Join(outside, "d/e/b.pr"), "<b'>")
	mustWrite(t, filepath.Join(outside, "d/e/new.pr"), "<n>")
	h.barrier()
	m, _ := h.snapshot()
	if len(m) != 1 {
		t.Fatalf("live after moving d away: %v", m)
	}
}

func TestWatcherMoveDirectoryWithinTree(t *testing.T) {
	h := newHarness(t, func(root string) {
		mustWrite(t, filepath.Join(root, "A/a.pr"), "<a>")
		mustWrite(t, filepath.Join(root, "A/sub/b.pr"), "<b>")
	}, WatchOptions{})
	if err := os.Rename(h.path("A"), h.path("B")); err != nil {
		t.Fatal(err)
	}
	h.waitLive("B/a.pr", "<a>")
	h.waitLive("B/sub/b.pr", "<b>")
	h.waitGone("A/a.pr")
	h.waitGone("A/sub/b.pr")
	// The nested directory's watch must now report under the new name.
	h.write("B/sub/b.pr", "<b2>")
	h.waitLive("B/sub/b.pr", "<b2>")
	h.write("B/sub/c.pr", "<c>")
	h.waitLive("B/sub/c.pr", "<c>")
	// And a new A with a sub of its own is independent.
	h.write("A/sub/x.pr", "<x>")
	h.waitLive("A/sub/x.pr", "<x>")
	h.barrier()
	m, _ := h.snapshot()
	want := []string{"A/sub/x.pr", "B/a.pr", "B/sub/b.pr", "B/sub/c.pr", "zz-sentinel.pr"}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("live %v, want %v", got, want)
	}
}

func TestWatcherFileReplacesDirectoryAndBack(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "x.pr/in.pr"), "<in>") }, WatchOptions{})
	if err := os.RemoveAll(h.path("x.pr")); err != nil {
		t.Fatal(err)
	}
	h.write("x.pr", "<file>")
	h.waitLive("x.pr", "<file>")
	h.waitGone("x.pr/in.pr")
	if err := os.Remove(h.path("x.pr")); err != nil {
		t.Fatal(err)
	}
	h.write("x.pr/in.pr", "<in2>")
	h.waitLive("x.pr/in.pr", "<in2>")
	h.waitGone("x.pr")
}

func TestWatcherRescanBackstop(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "d/a.pr"), "<a>") }, WatchOptions{})
	// Simulate a lost watch (as after a queue overflow): drop it behind the
	// tree's back, so no event arrives for the next edit.
	if err := h.w.fs.Remove(h.path("d")); err != nil {
		t.Fatal(err)
	}
	h.write("d/a.pr", "<a2>")
	h.write("d/b.pr", "<b>")
	h.w.Rescan()
	h.waitLive("d/a.pr", "<a2>")
	h.waitLive("d/b.pr", "<b>")
	// The rescan also restored the lost watch: the next edit arrives as an
	// event, without another rescan.
	h.write("d/a.pr", "<a3>")
	h.waitLive("d/a.pr", "<a3>")
}

func TestWatcherPeriodicRescan(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "d/a.pr"), "<a>") },
		WatchOptions{RescanInterval: 20 * time.Millisecond})
	if err := h.w.fs.Remove(h.path("d")); err != nil {
		t.Fatal(err)
	}
	h.write("d/a.pr", "<a2>")
	h.waitLive("d/a.pr", "<a2>")
}

func TestWatcherSingleFileRoot(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "only.pr"), "<v1>")
	mustWrite(t, filepath.Join(dir, "other.pr"), "<o>")
	h := startHarness(t, filepath.Join(dir, "only.pr"), WatchOptions{})
	h.waitLive(".", "<v1>")
	mustWrite(t, filepath.Join(dir, "other.pr"), "<o2>")
	mustWrite(t, filepath.Join(dir, ".tmp"), "<v2>")
	if err := os.Rename(filepath.Join(dir, ".tmp"), filepath.Join(dir, "only.pr")); err != nil {
		t.Fatal(err)
	}
	h.waitLive(".", "<v2>")
	m, hist := h.snapshot()
	if len(m) != 1 || len(hist) != 2 {
		t.Fatalf("live %v history %v", m, hist)
	}
}

func TestWatcherNonScriptRootFile(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "foo.txt"), "<x>")
	w, err := NewWatcher(filepath.Join(dir, "foo.txt"), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if cs, _ := w.Scan(); len(cs) != 0 {
		t.Fatalf("foo.txt produced %v", cs)
	}
}

func TestWatcherRunStopsWhenDeliverRefuses(t *testing.T) {
	root := t.TempDir()
	w, err := NewWatcher(root, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Scan(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background(), func([]Change) bool { return false }) }()
	mustWrite(t, filepath.Join(root, "a.pr"), "<a>")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop after deliver returned false")
	}
	checkNoLeak(t)
}

func TestWatcherCloseEndsRun(t *testing.T) {
	w, err := NewWatcher(t.TempDir(), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Scan(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background(), func([]Change) bool { return true }) }()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrWatcherClosed) {
			t.Fatalf("Run after Close: %v, want ErrWatcherClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	checkNoLeak(t)
}

func TestWatcherSymlinkedDirectoriesAndLoops(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(outside, "ext.pr"), "<ext>")
	h := newHarness(t, func(root string) {
		mustWrite(t, filepath.Join(root, "a.pr"), "<a>")
		// A loop back to the root must not be followed forever.
		if err := os.Symlink(root, filepath.Join(root, "loop")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
			t.Fatal(err)
		}
	}, WatchOptions{})
	m, _ := h.snapshot()
	if len(m) != 2 || m["a.pr"] != "<a>" || m["linked/ext.pr"] != "<ext>" {
		t.Fatalf("live %v", m)
	}
	// The symlinked directory is watched through its link.
	mustWrite(t, filepath.Join(outside, "ext.pr"), "<ext 2>")
	h.waitLive("linked/ext.pr", "<ext 2>")
}

func TestWatcherRootRemovedAndRecreated(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "sub/a.pr"), "<a>") }, WatchOptions{})
	if err := os.RemoveAll(h.root); err != nil {
		t.Fatal(err)
	}
	h.waitGone("sub/a.pr")
	// Nothing watches the root's parent: the backstop rescan finds the new
	// tree and watches it again.
	mustWrite(t, filepath.Join(h.root, "sub/b.pr"), "<b>")
	h.w.Rescan()
	h.waitLive("sub/b.pr", "<b>")
	h.write("sub/c.pr", "<c>")
	h.waitLive("sub/c.pr", "<c>")
}

func TestWatcherDirectoryMovedAwayAndBack(t *testing.T) {
	h := newHarness(t, func(root string) { mustWrite(t, filepath.Join(root, "A/x.pr"), "<x>") }, WatchOptions{})
	// Both moves usually land in one batch: the path then names the same
	// directory as before, but the backend dropped its watch on the move.
	if err := os.Rename(h.path("A"), h.path("B")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(h.path("B"), h.path("A")); err != nil {
		t.Fatal(err)
	}
	h.barrier()
	h.write("A/x.pr", "<x 2>")
	h.waitLive("A/x.pr", "<x 2>")
}

// Hostile case (issue 12): a symlink loop created while the server runs
// (`ln -s . loop`) made every script run twice, and a rescan did not undo
// it. Run-time loops are now caught as at start-up, deep ones too.
func TestWatcherSymlinkLoopCreatedAtRunTime(t *testing.T) {
	h := newHarness(t, func(root string) {
		mustWrite(t, filepath.Join(root, "a.pr"), "<a>")
		mustWrite(t, filepath.Join(root, "sub/b.pr"), "<b>")
	}, WatchOptions{})
	if err := os.Symlink(".", h.path("loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", h.path("sub/up")); err != nil {
		t.Fatal(err)
	}
	h.barrier()
	h.w.Rescan()
	h.barrier()
	m, hist := h.snapshot()
	if len(m) != 3 || m["a.pr"] != "<a>" || m["sub/b.pr"] != "<b>" {
		t.Fatalf("live %v (history %v): a loop ran scripts again", m, hist)
	}
	// Still watched once, under their own names.
	h.write("sub/b.pr", "<b 2>")
	h.waitLive("sub/b.pr", "<b 2>")
	if m, _ := h.snapshot(); len(m) != 3 {
		t.Fatalf("live %v after an edit", m)
	}
}
