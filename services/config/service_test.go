package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// startWatcher runs a config watcher over dir with $config bound and waits
// for it to be ready. It returns the service name.
func (w *world) startWatcher(dir string) preserves.Value {
	w.t.Helper()
	name := watcherName(dir, w.env())
	w.run(name)
	w.waitHas(stateText(name, "ready"))
	return name
}

func (w *world) env() *preserves.Dictionary {
	return preserves.NewDictionary(preserves.DictEntry{Key: preserves.Symbol("config"), Value: dataspace.Embed(w.cfg)})
}

// processedCount counts "processed" log lines for path.
func (w *world) processedCount(path string) int {
	return strings.Count(w.logs.String(), `"path":"`+path+`","message":"processed"`)
}

func TestScenario13InitialScanSortedInReadyTurn(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "b.pr"), "<b>")
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<a>")
	w := newWorld(t, testOptions())
	name := w.startWatcher(dir)
	ready := stateText(name, "ready")
	var order []string
	turns := map[string]int{}
	for _, e := range w.events() {
		if e.add && (e.v == "<a>" || e.v == "<b>" || e.v == ready) {
			order = append(order, e.v)
			turns[e.v] = e.turn
		}
	}
	if !slices.Equal(order, []string{"<a>", "<b>", ready}) {
		t.Fatalf("order of appearance %v; want a, b, then ready", order)
	}
	if turns["<a>"] != turns[ready] || turns["<b>"] != turns[ready] {
		t.Fatalf("a, b and ready arrived in different turns: %v", turns)
	}
	if !w.has(stateText(name, "started")) {
		t.Error("no started state")
	}
}

func TestScenario14IgnoredFiles(t *testing.T) {
	dir := tempRoot(t)
	for _, f := range []string{".hidden.pr", "x.pr~", "notes.txt", ".git/config.pr", ".git/sub/y.pr"} {
		writeAtomic(t, filepath.Join(dir, f), "<ignored>")
	}
	writeAtomic(t, filepath.Join(dir, "ok.pr"), "<ok>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if !w.has("<ok>") || w.has("<ignored>") {
		t.Fatalf("ok=%v ignored=%v", w.has("<ok>"), w.has("<ignored>"))
	}
	// Also ignored when they appear later.
	writeAtomic(t, filepath.Join(dir, ".later.pr"), "<ignored>")
	writeAtomic(t, filepath.Join(dir, ".git/later.pr"), "<ignored>")
	w.barrier(dir)
	if w.has("<ignored>") {
		t.Fatal("hidden file loaded after start")
	}
}

func TestScenario15NestedDirectories(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "sub/dir/c.pr"), "<c>")
	writeAtomic(t, filepath.Join(dir, "sub/d.pr"), "<d>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if !w.has("<c>") || !w.has("<d>") {
		t.Fatal("nested scripts not loaded at start-up")
	}
	// Live changes deep down are seen too.
	writeAtomic(t, filepath.Join(dir, "sub/dir/c.pr"), "<c2>")
	w.waitHas("<c2>")
	w.waitGone("<c>")
}

func TestScenario16CreateLoadsPromptly(t *testing.T) {
	dir := tempRoot(t)
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	writeAtomic(t, filepath.Join(dir, "new.pr"), "<new>")
	w.waitHas("<new>")
	// A plain (non-atomic) write works as well.
	if err := os.WriteFile(filepath.Join(dir, "plain.pr"), []byte("<plain>"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitHas("<plain>")
}

func TestScenario17DeleteRetractsEverything(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<x 1> <x 2> <x 3>")
	writeAtomic(t, filepath.Join(dir, "keep.pr"), "<keep>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if got := w.liveWith("<x "); len(got) != 3 {
		t.Fatalf("live %v", got)
	}
	if err := os.Remove(filepath.Join(dir, "a.pr")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a.pr's assertions to vanish", func() bool { return len(w.liveWith("<x ")) == 0 })
	if !w.has("<keep>") {
		t.Fatal("another file's assertion vanished")
	}
}

func TestScenario18SyntaxErrorKeepsOldVersion(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "a.pr")
	writeAtomic(t, p, "<old>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	writeAtomic(t, p, "<new>\n  <broken ]\n")
	w.waitLog(`"message":"` + p + `:2:11: `)
	w.barrier(dir)
	if !w.has("<old>") || w.has("<new>") {
		t.Fatalf("after syntax error: old=%v new=%v; want the old version kept", w.has("<old>"), w.has("<new>"))
	}
	if got := w.eventsOf("<old>"); got != "+" {
		t.Fatalf("<old> events %q: the old version must not blink", got)
	}
	writeAtomic(t, p, "<fixed>")
	w.waitHas("<fixed>")
	w.waitGone("<old>")
}

// Go deviation (operator issue): a new version with compile errors keeps
// the old version running, like a syntax error (§3.5 step 3 stops it), and
// the watcher's status says why.
func TestScenario19ScriptErrorKeepsOldVersion(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "a.pr")
	writeAtomic(t, p, "<old>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	writeAtomic(t, p, "<new>\n?x\n")
	w.waitLog(`"message":"` + p + `:2:1: `)
	w.waitLog("the previous version keeps running")
	w.barrier(dir)
	if w.has("<new>") {
		t.Fatal("a file with a script error asserted something")
	}
	if got := w.eventsOf("<old>"); got != "+" {
		t.Fatalf("<old> events %q: the old version must keep running", got)
	}
	eventually(t, "the status reason", func() bool {
		for _, v := range w.liveWith("<service-info <config-watcher") {
			if strings.Contains(v, `reason: ["new version of `+p+` does not compile; previous version kept: `+p+`:2:1: `) {
				return true
			}
		}
		return false
	})
	writeAtomic(t, p, "<fixed>")
	w.waitHas("<fixed>")
	w.waitGone("<old>")
	eventually(t, "the reason to go", func() bool {
		for _, v := range w.liveWith("<service-info <config-watcher") {
			if strings.Contains(v, "reason") {
				return false
			}
		}
		return true
	})
}

func TestScenario20RenameFile(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<hello>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if err := os.Rename(filepath.Join(dir, "a.pr"), filepath.Join(dir, "b.pr")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b.pr to be processed", func() bool { return w.processedCount(filepath.Join(dir, "b.pr")) == 1 })
	// b.pr started before a.pr stopped: the common assertion never blinked.
	if got := w.eventsOf("<hello>"); got != "+" {
		t.Fatalf("<hello> events %q", got)
	}
	// And it now belongs to b.pr alone.
	if err := os.Remove(filepath.Join(dir, "b.pr")); err != nil {
		t.Fatal(err)
	}
	w.waitGone("<hello>")
}

func TestScenario21EditKeepsCommonAssertions(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "d.pr")
	writeAtomic(t, p, `<require-service <daemon d>> <daemon d "sleep 100"> <x 1>`)
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	writeAtomic(t, p, `<require-service <daemon d>> <daemon d "sleep 100"> <x 2>`)
	w.waitHas("<x 2>")
	w.waitGone("<x 1>")
	for _, v := range []string{`<require-service <daemon d>>`, `<daemon d "sleep 100">`} {
		if got := w.eventsOf(v); got != "+" {
			t.Errorf("%s events %q: an unchanged assertion was retracted", v, got)
		}
	}
}

// Q22: failed, and ready once created (without the reference's retries: see
// TestMissingPathOneWarning).
func TestScenario22MissingPathFailsAndRetries(t *testing.T) {
	base := tempRoot(t)
	dir := filepath.Join(base, "later")
	opts := testOptions()
	opts.PathPoll = 20 * time.Millisecond // looked for again soon: no 1 s tick to wait out
	w := newWorld(t, opts)
	name := watcherName(dir, w.env())
	w.run(name)
	w.waitSeen(stateText(name, "failed"))
	w.waitLog("config path does not exist; it will be loaded when it is created")
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<late>")
	w.waitHas(stateText(name, "ready"))
	w.waitHas("<late>")
	// The supervisor asserts exactly one state at a time.
	if got := w.liveWith("<service-state <config-watcher"); len(got) != 2 {
		t.Fatalf("states %v; want started and ready", got)
	}
}

func TestScenario23CommentOnlyFile(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "c.pr")
	writeAtomic(t, p, "# just a comment\n# and another")
	writeAtomic(t, filepath.Join(dir, "d.pr"), "<d> # trailing comment")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if !w.has("<d>") {
		t.Fatal("file with a trailing comment not loaded")
	}
	if n := w.processedCount(p); n != 1 {
		t.Fatalf("comment-only file processed %d times", n)
	}
	if strings.Contains(w.logs.String(), `"level":"error"`) {
		t.Fatalf("errors logged:\n%s", w.logs.String())
	}
}

func TestScenario12RestartService(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "a.pr")
	writeAtomic(t, p, "<a>")
	w := newWorld(t, testOptions())
	name := w.startWatcher(dir)
	w.do(func(t *dataspace.Turn) { t.Message(w.cfg, preserves.Rec("restart-service", name)) })
	w.waitSeen(stateText(name, "complete"))
	w.waitHas(stateText(name, "ready"))
	eventually(t, "a.pr re-read", func() bool { return w.processedCount(p) == 2 })
	if got := w.eventsOf(stateText(name, "ready")); got != "+-+" {
		t.Fatalf("ready events %q", got)
	}
	if got := w.eventsOf("<a>"); got != "+-+" {
		t.Fatalf("<a> events %q: the file's facet must be recreated", got)
	}
	// The old incarnation's watcher goroutine is gone; only the new one runs.
	eventually(t, "exactly one watcher goroutine", func() bool { return countGoroutines("config.(*Watcher).Run") == 1 })
}

func TestUnchangedContentIsNotRestarted(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "a.pr")
	writeAtomic(t, p, "<a>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	now := time.Now().Add(time.Minute)
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, p, "<a>") // same bytes, new inode
	w.barrier(dir)
	if n := w.processedCount(p); n != 1 {
		t.Fatalf("a.pr processed %d times; unchanged content must not restart it", n)
	}
	if got := w.eventsOf("<a>"); got != "+" {
		t.Fatalf("<a> events %q", got)
	}
}

func TestAtomicSaveRestartsExactlyOnce(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "a.pr")
	writeAtomic(t, p, "<v 0>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	for i, tmp := range []string{".a.pr.swp", "a.pr.tmp~", "4913"} {
		v := []string{"<v 1>", "<v 2>", "<v 3>"}[i]
		tp := filepath.Join(dir, tmp)
		if err := os.WriteFile(tp, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tp, p); err != nil {
			t.Fatal(err)
		}
		w.waitHas(v)
	}
	w.barrier(dir)
	if n := w.processedCount(p); n != 4 {
		t.Fatalf("a.pr processed %d times; want 1 + exactly one per save", n)
	}
}

func TestDirectoriesLive(t *testing.T) {
	dir := tempRoot(t)
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	// Moved in with contents: scanned.
	outside := tempRoot(t)
	writeAtomic(t, filepath.Join(outside, "pkg/one.pr"), "<one>")
	writeAtomic(t, filepath.Join(outside, "pkg/deep/two.pr"), "<two>")
	if err := os.Rename(filepath.Join(outside, "pkg"), filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	w.waitHas("<one>")
	w.waitHas("<two>")
	// Moved within the tree: still live, edits seen under the new name.
	if err := os.Rename(filepath.Join(dir, "pkg"), filepath.Join(dir, "pkg2")); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "pkg2/deep/two.pr"), "<two b>")
	w.waitHas("<two b>")
	w.waitGone("<two>")
	if !w.has("<one>") {
		t.Fatal("<one> lost by moving its directory within the tree")
	}
	// Moved away: every facet under it stops.
	if err := os.Rename(filepath.Join(dir, "pkg2"), filepath.Join(outside, "gone")); err != nil {
		t.Fatal(err)
	}
	w.waitGone("<one>")
	w.waitGone("<two b>")
	// Created empty, then filled; then removed recursively.
	writeAtomic(t, filepath.Join(dir, "x/y/z.pr"), "<z>")
	w.waitHas("<z>")
	if err := os.RemoveAll(filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	w.waitGone("<z>")
}

func TestWithdrawingRunServiceStopsEverything(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<a>")
	w := newWorld(t, testOptions())
	name := watcherName(dir, w.env())
	h := w.run(name)
	w.waitHas(stateText(name, "ready"))
	w.do(func(t *dataspace.Turn) { t.Retract(h) })
	w.waitGone("<a>")
	eventually(t, "all states withdrawn", func() bool { return len(w.liveWith("<service-state")) == 0 })
	// The watcher's goroutines end with its facet, while the system runs on.
	checkNoLeak(t)
	// Files changed now are not loaded.
	writeAtomic(t, filepath.Join(dir, "b.pr"), "<b>")
	if got := w.eventsOf(stateText(name, "complete")) + w.eventsOf(stateText(name, "failed")); got != "" {
		t.Fatalf("final state asserted on withdrawal: %q", got)
	}
}

func TestMalformedRequestReportsFailure(t *testing.T) {
	w := newWorld(t, testOptions())
	for _, name := range []preserves.Value{
		preserves.Rec("config-watcher", preserves.Int(42), preserves.NewDictionary()),
		preserves.Rec("config-watcher", preserves.String("/tmp"), preserves.Int(1)),
		preserves.Rec("config-watcher", preserves.String("/tmp")),
	} {
		w.run(name)
		w.waitHas(stateText(name, "failed"))
	}
	w.waitLog("malformed config-watcher request")
}

func TestSingleFileConfigPath(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "only.pr")
	writeAtomic(t, p, "<only 1>")
	writeAtomic(t, filepath.Join(dir, "sibling.pr"), "<sibling>")
	writeAtomic(t, filepath.Join(dir, "foo.txt"), "<txt>")
	w := newWorld(t, testOptions())
	w.startWatcher(p)
	if !w.has("<only 1>") || w.has("<sibling>") {
		t.Fatalf("live %v", w.liveWith("<"))
	}
	writeAtomic(t, p, "<only 2>")
	w.waitHas("<only 2>")
	w.waitGone("<only 1>")
	// `-c foo.txt` does nothing, but the watcher is ready.
	w.startWatcher(filepath.Join(dir, "foo.txt"))
	if w.has("<txt>") {
		t.Fatal("foo.txt was loaded")
	}
}

func TestHiddenConfigPathLoadsNothing(t *testing.T) {
	dir := filepath.Join(tempRoot(t), ".cfg")
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<a>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	w.waitLog("config path is hidden")
	if w.has("<a>") {
		t.Fatal("script under a hidden PATH loaded (§3.3 skips it)")
	}
}

func TestRescanMessagePicksUpSymlinkTargets(t *testing.T) {
	dir := tempRoot(t)
	outside := tempRoot(t)
	target := filepath.Join(outside, "target.pr")
	writeAtomic(t, target, "<target 1>")
	if err := os.Symlink(target, filepath.Join(dir, "link.pr")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.pr")
	writeAtomic(t, other, "<other>")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if !w.has("<target 1>") {
		t.Fatal("symlinked script not loaded")
	}
	// No event reaches the watcher for an edit outside its tree; a rescan
	// (SIGHUP in the server) finds it and leaves unchanged files alone.
	writeAtomic(t, target, "<target 2>")
	w.do(func(t *dataspace.Turn) { t.Message(w.cfg, RescanMessage()) })
	w.waitHas("<target 2>")
	w.waitGone("<target 1>")
	if n := w.processedCount(other); n != 1 {
		t.Fatalf("other.pr processed %d times by a rescan", n)
	}
}

// Q22 with a missing path is TestMissingPathOneWarning (a Go deviation);
// the reference's retries still apply to any other failure to
// canonicalise PATH, here a symlink loop.
func TestScenario22RetryGaps(t *testing.T) {
	dir := filepath.Join(tempRoot(t), "loop")
	if err := os.Symlink(dir, dir); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.Supervise.Delay = 10 * time.Millisecond
	opts.Supervise.Backoff = 500 * time.Millisecond
	w := newWorld(t, opts)
	name := watcherName(dir, w.env())
	w.run(name)
	started, failed := stateText(name, "started"), stateText(name, "failed")
	eventually(t, "three failures", func() bool { return strings.Count(w.eventsOf(failed), "+") >= 3 })
	// Gap between each failure and the next start.
	var gaps []time.Duration
	var lastFail time.Time
	for _, e := range w.events() {
		switch {
		case e.add && e.v == failed:
			lastFail = e.at
		case e.add && e.v == started && !lastFail.IsZero():
			gaps = append(gaps, e.at.Sub(lastFail))
		}
	}
	if len(gaps) < 2 {
		t.Fatalf("gaps %v", gaps)
	}
	// §2.3: the first restart uses the short delay; a second failure within
	// the window uses the long one.
	// The gaps are observed through the dataspace, so each end may be
	// delayed a little differently: allow 100 ms of jitter on the long one.
	if gaps[1] < opts.Supervise.Backoff-100*time.Millisecond {
		t.Fatalf("restart gaps %v; want the second ≈ %v", gaps[:2], opts.Supervise.Backoff)
	}
	if gaps[0] >= opts.Supervise.Backoff-100*time.Millisecond {
		t.Fatalf("restart gaps %v; want the first ≈ %v", gaps[:2], opts.Supervise.Delay)
	}
}

// Operator issue: a missing -c path is one warning naming the path, a
// `failed` state with the reason in the status, and no crash loop; once
// the directory is created, one info line and the scripts run.
func TestMissingPathOneWarning(t *testing.T) {
	dir := filepath.Join(tempRoot(t), "missing")
	opts := testOptions()
	opts.PathPoll = 5 * time.Millisecond
	var polls atomic.Int32
	opts.polled = func() { polls.Add(1) }
	w := newWorld(t, opts)
	name := watcherName(dir, w.env())
	w.run(name)
	w.waitHas(stateText(name, "failed"))
	w.waitLog("config path does not exist; it will be loaded when it is created")
	// Many polls later: still one warning, and no crash.
	eventually(t, "twenty polls", func() bool { return polls.Load() >= 20 })
	for _, bad := range []string{"actor crashed", "worker failed", "cannot canonicalise"} {
		if w.logs.Has(bad) {
			t.Fatalf("log has %q:\n%s", bad, w.logs.String())
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "a.pr"), "<here>")
	w.waitHas("<here>")
	w.waitHas(stateText(name, "ready"))
	w.waitGone(stateText(name, "failed"))
	w.waitLog("config path created; loading it")
	if n := w.logs.Count("does not exist"); n != 1 {
		t.Fatalf("%d warnings about the missing path:\n%s", n, w.logs.String())
	}
}

func TestBootWithoutConfigDataspace(t *testing.T) {
	sys := dataspace.NewSystem(dataspace.Options{})
	got := make(chan error, 1)
	sys.Spawn("boot", func(t *dataspace.Turn) error {
		got <- Boot(t, services.Env{})
		return nil
	})
	if err := <-got; !errors.Is(err, ErrNoConfig) {
		t.Fatalf("Boot without $config: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestBurstOfFiles(t *testing.T) {
	dir := tempRoot(t)
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	const n = 200
	for i := 0; i < n; i++ {
		writeAtomic(t, filepath.Join(dir, fmt.Sprintf("d%d/f%03d.pr", i%7, i)), fmt.Sprintf("<burst %d>", i))
	}
	eventually(t, "every burst script loaded", func() bool { return len(w.liveWith("<burst ")) == n })
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every burst script retracted", func() bool { return len(w.liveWith("<burst ")) == 0 })
}
