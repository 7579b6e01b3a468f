package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/script"
)

// Change is one difference between what the watcher last reported for a path
// and what is on disk now. A Change with Removed set means "the script at Path
// is gone (or no longer qualifies)"; otherwise Src holds the file's complete new
// content, whose SHA-256 is Hash. Changes are only ever reported for paths that
// qualify as scripts (§3.2), and never for content identical to the content
// last reported for the same path.
type Change struct {
	Path    string
	Src     []byte
	Hash    [sha256.Size]byte
	Removed bool
}

// dirWatcher is the part of a filesystem-notification backend the tree needs:
// one non-recursive watch per directory. It is an interface so the tree's
// bookkeeping can be tested without inotify.
type dirWatcher interface {
	Add(dir string) error
	Remove(dir string) error
}

// fileID identifies a directory by inode, so a path that now names a different
// directory (one was moved away and another moved in) is noticed: inotify
// watches follow inodes, not names, and a stale watch would report events under
// the old name.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(st.Dev), uint64(st.Ino)}
	}
	return fileID{}
}

// tree is the watcher's model of the configuration directory: which scripts it
// has reported (with the hash of the reported content) and which directories
// it watches. It is owned by one goroutine at a time (first the worker's boot
// turn for the initial scan, then the watcher goroutine) and has no locks.
//
// Every operation is a reconciliation: it looks at the filesystem as it is now
// and reports the difference from what it reported before. Events therefore
// only say where to look, never what happened, so lost, duplicated or
// reordered events cannot make the model wrong, and a periodic full rescan
// repairs anything the event stream missed.
type tree struct {
	root  string // canonical
	log   zerolog.Logger
	watch dirWatcher

	files map[string][sha256.Size]byte // reported scripts → content hash
	dirs  map[string]fileID            // listed (and watched) directories → identity then

	visiting map[fileID]bool // directories on the current recursion stack (symlink loops)
	loops    map[string]bool // paths found to loop, warned about once
	rewatch  bool            // re-add every watch reconciled, repairing lost ones

	warnedHidden bool // the hidden-PATH warning is given once, not every rescan
}

func newTree(root string, w dirWatcher, log zerolog.Logger) *tree {
	return &tree{
		root:     root,
		log:      log,
		watch:    w,
		files:    map[string][sha256.Size]byte{},
		dirs:     map[string]fileID{},
		visiting: map[fileID]bool{},
		loops:    map[string]bool{},
	}
}

// within reports whether p is dir itself or lies under it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir) && len(p) > len(dir) && p[len(dir)] == '/'
}

// scanAll reconciles the whole tree (initial scan and periodic backstop).
// The error reports that the root itself (or, for a single-file root, its
// directory) exists but cannot be watched: at start-up that fails the worker
// (§3.1 step 3); on a periodic rescan it is only logged.
func (t *tree) scanAll() ([]Change, error) {
	var out []Change
	hidden := strings.HasPrefix(filepath.Base(t.root), ".")
	if hidden && !t.warnedHidden {
		t.warnedHidden = true
		// §3.3 applies the hidden-name rule to PATH itself, as the reference
		// does; say so, since nothing at all will be loaded.
		t.log.Warn().Str("path", t.root).Msg("config path is hidden (name starts with '.'); nothing under it is loaded")
	}
	t.rewatch = true
	defer func() { t.rewatch = false }()
	t.prune(t.root)
	var rootErr error
	if fi, err := os.Stat(t.root); err == nil && !hidden {
		d := t.root
		if !fi.IsDir() {
			// A single-file root: watch its directory, since editors
			// replace the file (a new inode) rather than rewrite it.
			d = filepath.Dir(t.root)
			fi, err = os.Stat(d)
		}
		if err == nil {
			err = t.ensureWatched(d, fi)
		}
		if err != nil {
			rootErr = fmt.Errorf("config: watching %s: %w", d, err)
		}
	}
	t.reconcile(t.root, &out)
	return out, rootErr
}

// update reconciles the given paths, in order. Stale directory watches under
// any of them are dropped first, before any new watch is added: inotify hands
// out the existing watch for an inode that is already watched, so re-adding a
// directory that moved within the tree before dropping its old watch would
// keep the old name. Every directory reconciled gets its watch re-added even
// when it looks unchanged: a directory moved away and back between two
// batches is the same inode at the same path, but the backend dropped its
// watch when it moved.
func (t *tree) update(paths []string) []Change {
	var out []Change
	t.rewatch = true
	defer func() { t.rewatch = false }()
	var todo []string
	for _, p := range paths {
		p = filepath.Clean(p)
		if !within(p, t.root) {
			continue
		}
		todo = append(todo, p)
		t.prune(p)
	}
	for _, p := range todo {
		if leave, ok := t.enterAncestors(p, &out); ok {
			t.reconcile(p, &out)
			leave()
		}
	}
	return out
}

// enterAncestors puts the directories from the root down to p's parent on
// the recursion stack, so that reconciling p alone (an event for a symlink
// created at run time, `ln -s . loop`) notices a loop exactly as a full scan
// does, instead of descending once more into a directory already being
// watched. If an ancestor is itself a loop (p lies under one), everything
// known under it is forgotten and ok is false.
func (t *tree) enterAncestors(p string, out *[]Change) (leave func(), ok bool) {
	var marked []fileID
	leave = func() {
		for _, id := range marked {
			delete(t.visiting, id)
		}
	}
	if p == t.root {
		return leave, true
	}
	dirs := []string{t.root}
	if rel := filepath.Dir(p)[len(t.root):]; rel != "" {
		for _, c := range strings.Split(strings.TrimPrefix(rel, "/"), "/") {
			dirs = append(dirs, filepath.Join(dirs[len(dirs)-1], c))
		}
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() {
			break // p's own reconciliation will find it gone
		}
		id := idOf(fi)
		if t.visiting[id] {
			t.loop(d, out)
			leave()
			return leave, false
		}
		t.visiting[id] = true
		marked = append(marked, id)
	}
	return leave, true
}

// loop handles a directory d that is one of its own ancestors (through a
// symbolic link): it is not descended into, and what an earlier pass
// found under it is forgotten, so a loop created at run time stops its
// scripts running twice. The warning is given once per loop path.
func (t *tree) loop(d string, out *[]Change) {
	warned := t.loops[d]
	t.forget(d, out)
	t.loops[d] = true
	if !warned {
		t.log.Warn().Str("dir", d).Msg("directory loop (symlink); not descending")
	}
}

// prune drops the watches of directories at or under p that no longer exist
// or are now a different directory.
func (t *tree) prune(p string) {
	for d, id := range t.dirs {
		if !within(d, p) {
			continue
		}
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || idOf(fi) != id {
			t.unwatch(d)
		}
	}
}

func (t *tree) unwatch(d string) {
	delete(t.dirs, d)
	// The backend may already have dropped the watch (the directory was
	// deleted or moved); that is not an error worth reporting.
	_ = t.watch.Remove(d)
}

func (t *tree) ensureWatched(d string, fi fs.FileInfo) error {
	id := idOf(fi)
	if old, ok := t.dirs[d]; ok {
		if old == id && !t.rewatch {
			return nil
		}
		if old != id {
			t.unwatch(d)
		}
	}
	// Adding a watch that exists is cheap (inotify merges it), so the full
	// scan re-adds every one: a watch lost behind our back (overflow, a
	// race with the directory's creation) is restored, not just papered
	// over by re-reading files.
	err := t.watch.Add(d)
	if err != nil {
		// Still recorded: every directory whose scripts we know is in
		// dirs (forgetting relies on it), and the next full scan retries.
		t.log.Warn().Err(err).Str("dir", d).Msg("cannot watch directory")
	}
	t.dirs[d] = id
	return err
}

// reconcile brings the model of p (and everything under it) in line with the
// filesystem, appending what changed to out.
func (t *tree) reconcile(p string, out *[]Change) {
	name := filepath.Base(p)
	if strings.HasPrefix(name, ".") {
		// Hidden: never a script, and hidden directories are not descended
		// into (§3.3; ignoring hidden ancestors is allowed, Q3).
		t.forget(p, out)
		return
	}
	fi, err := os.Stat(p)
	if t.stopsAt(err, p, out, zerolog.WarnLevel, "cannot stat") {
		return
	}
	switch {
	case fi.IsDir():
		t.forgetFile(p, out)
		t.reconcileDir(p, fi, out)
	case fi.Mode().IsRegular() && script.IsScriptName(name):
		if _, wasDir := t.dirs[p]; wasDir {
			t.forgetDirs(p, out) // a directory was replaced by a file
		}
		t.reconcileFile(p, out)
	default:
		t.forget(p, out)
	}
}

// stopsAt reports whether reconciling p stops at err: a path gone is
// forgotten, and any other I/O failure keeps whatever is running (§3.5
// step 1), logged at level with msg.
func (t *tree) stopsAt(err error, p string, out *[]Change, level zerolog.Level, msg string) bool {
	switch {
	case err == nil:
		return false
	case gone(err):
		t.forget(p, out)
	default:
		t.log.WithLevel(level).Err(err).Str("path", p).Msg(msg)
	}
	return true
}

func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func (t *tree) reconcileDir(p string, fi fs.FileInfo, out *[]Change) {
	id := idOf(fi)
	if t.visiting[id] {
		t.loop(p, out)
		return
	}
	delete(t.loops, p)
	t.visiting[id] = true
	defer delete(t.visiting, id)

	// Watch before listing, so a file created between the two is either
	// listed or reported by an event (then reconciled again, harmlessly).
	_ = t.ensureWatched(p, fi)    // logged; a full scan retries
	entries, err := os.ReadDir(p) // sorted by name, byte-wise (§3.3)
	if t.stopsAt(err, p, out, zerolog.WarnLevel, "cannot list directory") {
		return
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	// Whatever we knew under p whose top entry vanished is gone. (Entries
	// still present are handled by the recursion below.)
	var lost []string
	for f := range t.files {
		if within(f, p) && f != p && !present[firstComponent(f, p)] {
			lost = append(lost, f)
		}
	}
	t.removeFiles(lost, out)
	for d := range t.dirs {
		if within(d, p) && d != p && !present[firstComponent(d, p)] {
			t.unwatch(d)
		}
	}
	for _, e := range entries {
		t.reconcile(filepath.Join(p, e.Name()), out)
	}
}

// firstComponent returns the first path component of p below dir.
func firstComponent(p, dir string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(p[len(dir):], "/"), "/")
	return first
}

func (t *tree) reconcileFile(p string, out *[]Change) {
	src, err := os.ReadFile(p)
	if t.stopsAt(err, p, out, zerolog.ErrorLevel, "cannot read script; keeping the running version") {
		return
	}
	h := sha256.Sum256(src)
	if old, ok := t.files[p]; ok && old == h {
		return // unchanged content: nothing to restart (Go addition, §3.4)
	}
	t.files[p] = h
	*out = append(*out, Change{Path: p, Src: src, Hash: h})
}

// forget removes p and everything under it from the model.
func (t *tree) forget(p string, out *[]Change) {
	t.forgetFile(p, out)
	t.forgetDirs(p, out)
}

func (t *tree) forgetFile(p string, out *[]Change) {
	if _, ok := t.files[p]; ok {
		t.removeFiles([]string{p}, out)
	}
}

// forgetDirs forgets every script strictly under p and every watch at or
// under p.
func (t *tree) forgetDirs(p string, out *[]Change) {
	var lost []string
	for f := range t.files {
		if f != p && within(f, p) {
			lost = append(lost, f)
		}
	}
	t.removeFiles(lost, out)
	for d := range t.dirs {
		if within(d, p) {
			t.unwatch(d)
		}
	}
	maps.DeleteFunc(t.loops, func(d string, _ bool) bool { return within(d, p) })
}

func (t *tree) removeFiles(paths []string, out *[]Change) {
	sort.Strings(paths)
	for _, f := range paths {
		delete(t.files, f)
		*out = append(*out, Change{Path: f, Removed: true})
	}
}
