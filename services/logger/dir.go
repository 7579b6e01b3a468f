package logger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Persistent logs (--log-dir), in the way of s6-log and svlogd: each
// service has a directory of its own holding `current`, appended to, and
// rotated files named `@TIMESTAMP.s` (UTC, so they sort by age). When
// `current` would grow past the size limit it is fsynced, renamed and
// replaced; the oldest rotated files beyond the count limit are removed.
//
// Files are written by one goroutine, the dirWriter's, fed through a
// bounded queue. When the queue is full the logger waits for room, but
// only for a while (Options.FilePatience, 1 s by default): a disk that is
// merely slower than the services, say while it fsyncs a rotation, slows
// them down a little, as s6-log would, and no line is lost. A disk that
// does not make room within that time is taken as stuck: from then on
// lines that do not fit are dropped at once and counted, until a chunk
// fits again. The count is written into the service's log (and the
// server's) as soon as there is room, and shown by `syndicate status`. So
// a stuck disk never holds a daemon up for more than the patience, once.

// Default limits of a log directory.
const (
	DefaultFileSize  = 1 << 20 // bytes in `current` before it is rotated
	DefaultFileCount = 10      // rotated files kept per service
	// DefaultFileQueue bounds the bytes waiting for the disk, all
	// services together.
	DefaultFileQueue = 4 << 20
	// DefaultFilePatience is how long the logger waits for room in the
	// queue before it drops lines.
	DefaultFilePatience = time.Second
	// maxOpenFiles bounds the `current` files kept open; the least
	// recently written is closed first.
	maxOpenFiles = 64
)

// DirName is the directory of a service under --log-dir: the service's
// Preserves text with `<`, `>` and quotes dropped, spaces as `-` and any
// other character outside [A-Za-z0-9._-] as `_`; when that loses
// information, an 8-digit hash of the text follows, so that different
// services never share a directory. Unnamed `$log` messages go to `-`.
func DirName(service string) string {
	var b strings.Builder
	lossy := false
	for _, r := range service {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		case r == '<' || r == '>':
		default:
			b.WriteByte('_')
			lossy = true
		}
	}
	name := strings.Trim(b.String(), ".")
	if name == "" && service == "-" {
		return "-"
	}
	if lossy || name == "" || len(name) > 100 {
		if len(name) > 100 {
			name = name[:100]
		}
		sum := sha256.Sum256([]byte(service))
		name += "@" + hex.EncodeToString(sum[:4])
	}
	return name
}

// filesWaiting counts offers waiting for room right now (tests see the
// logger wait for a slow disk through it).
var filesWaiting atomic.Int32

// fileChunk is a run of formatted lines for one service's directory.
type fileChunk struct {
	dir   string
	data  []byte
	lines int
}

// dirWriter owns the files under the log directory.
type dirWriter struct {
	root         string
	size         int64
	count        int
	queueBytes   int64
	log          zerolog.Logger
	queue        chan fileChunk
	queued       atomic.Int64  // bytes in queue
	space        chan struct{} // signalled whenever a write made room
	done         chan struct{} // closed when run returns
	open         map[string]*openFile
	now          func() time.Time
	failedBefore map[string]bool // directories whose last write failed
	// gate, in tests, holds every write until it is closed (a slow disk).
	gate <-chan struct{}
}

type openFile struct {
	f    *os.File
	size int64
	used uint64
}

func newDirWriter(root string, size int64, count int, queueBytes int64, log zerolog.Logger, now func() time.Time) *dirWriter {
	return &dirWriter{root: root, size: size, count: count, queueBytes: queueBytes, log: log,
		queue: make(chan fileChunk, 1024), space: make(chan struct{}, 1), done: make(chan struct{}), open: map[string]*openFile{}, now: now, failedBefore: map[string]bool{}}
}

// offer queues c, waiting up to patience for room; false means there was
// none (the caller counts the lines as dropped).
func (w *dirWriter) offer(c fileChunk, patience time.Duration) bool {
	n := int64(len(c.data))
	var timeout <-chan time.Time
	for {
		if w.queued.Add(n) <= w.queueBytes {
			select {
			case w.queue <- c:
				return true
			default:
			}
		}
		w.queued.Add(-n)
		if patience <= 0 {
			return false
		}
		if timeout == nil {
			t := time.NewTimer(patience)
			defer t.Stop()
			timeout = t.C
			filesWaiting.Add(1)
			defer filesWaiting.Add(-1)
		}
		select {
		case <-w.space:
		case <-timeout:
			return false
		case <-w.done:
			return false
		}
	}
}

// run writes queued chunks until ctx ends, then writes what is still
// queued and closes the files.
func (w *dirWriter) run(ctx context.Context) error {
	var tick uint64
	defer close(w.done)
	defer w.closeAll()
	serveQueue(ctx, w.queue, func(c fileChunk) {
		tick++
		w.write(c, tick)
	})
	return nil
}

// serveQueue hands each item of queue to handle until ctx ends, and then
// whatever is still queued.
func serveQueue[T any](ctx context.Context, queue <-chan T, handle func(T)) {
	for {
		select {
		case x := <-queue:
			handle(x)
		case <-ctx.Done():
			for {
				select {
				case x := <-queue:
					handle(x)
				default:
					return
				}
			}
		}
	}
}

func (w *dirWriter) closeAll() {
	for name, of := range w.open {
		_ = of.f.Sync()
		_ = of.f.Close()
		delete(w.open, name)
	}
}

// write appends c to its directory's `current`, rotating between lines
// whenever the file would pass the size limit.
func (w *dirWriter) write(c fileChunk, tick uint64) {
	defer func() {
		w.queued.Add(-int64(len(c.data)))
		select {
		case w.space <- struct{}{}:
		default:
		}
	}()
	if w.gate != nil {
		<-w.gate
	}
	data := c.data
	for len(data) > 0 {
		of, err := w.file(c.dir, tick)
		if err != nil {
			w.fail(c.dir, err)
			return
		}
		room := w.size - of.size
		n := len(data)
		if int64(n) > room {
			// As much as fits, cut after a newline; at least one line
			// goes into an empty file whatever its length.
			cut := bytes.LastIndexByte(data[:max(room, 0)], '\n') + 1
			if cut == 0 && of.size > 0 {
				if err := w.rotate(c.dir, of); err != nil {
					w.fail(c.dir, err)
					return
				}
				continue
			}
			if cut == 0 {
				cut = bytes.IndexByte(data, '\n') + 1
				if cut == 0 {
					cut = len(data)
				}
			}
			n = cut
		}
		m, err := of.f.Write(data[:n])
		of.size += int64(m)
		if err != nil {
			w.fail(c.dir, err)
			return
		}
		data = data[n:]
		if len(data) > 0 {
			if err := w.rotate(c.dir, of); err != nil {
				w.fail(c.dir, err)
				return
			}
		}
	}
	if w.failedBefore[c.dir] {
		delete(w.failedBefore, c.dir)
		w.log.Info().Str("dir", filepath.Join(w.root, c.dir)).Msg("log directory writable again")
	}
}

// fail logs a write failure once per failing spell of a directory.
func (w *dirWriter) fail(dir string, err error) {
	if of, ok := w.open[dir]; ok {
		_ = of.f.Close()
		delete(w.open, dir)
	}
	if !w.failedBefore[dir] {
		w.failedBefore[dir] = true
		w.log.Error().Err(err).Str("dir", filepath.Join(w.root, dir)).Msg("cannot write service log; its lines are lost until it works again")
	}
}

// file returns the open `current` of dir, opening it (append only) and
// closing the least recently used one beyond maxOpenFiles.
func (w *dirWriter) file(dir string, tick uint64) (*openFile, error) {
	if of, ok := w.open[dir]; ok {
		of.used = tick
		return of, nil
	}
	if len(w.open) >= maxOpenFiles {
		var oldest string
		var at uint64 = math.MaxUint64
		for name, of := range w.open {
			if of.used < at {
				oldest, at = name, of.used
			}
		}
		_ = w.open[oldest].f.Close()
		delete(w.open, oldest)
	}
	path := filepath.Join(w.root, dir)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(path, "current"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	of := &openFile{f: f, size: fi.Size(), used: tick}
	w.open[dir] = of
	return of, nil
}

// rotate fsyncs and renames `current`, starts a new one and removes the
// oldest rotated files beyond the count limit.
func (w *dirWriter) rotate(dir string, of *openFile) error {
	path := filepath.Join(w.root, dir)
	if err := of.f.Sync(); err != nil {
		return err
	}
	if err := of.f.Close(); err != nil {
		return err
	}
	delete(w.open, dir)
	var name string
	// Two rotations within the clock's resolution must not collide.
	for at := w.now().UTC(); ; at = at.Add(time.Nanosecond) {
		name = "@" + at.Format("20060102T150405.000000000Z") + ".s"
		if _, err := os.Lstat(filepath.Join(path, name)); err != nil {
			break
		}
	}
	if err := os.Rename(filepath.Join(path, "current"), filepath.Join(path, name)); err != nil {
		return err
	}
	if d, err := os.Open(path); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		d.Close()
	}
	old, _ := RotatedFiles(path)
	for len(old) > w.count {
		if err := os.Remove(old[0]); err != nil {
			return fmt.Errorf("removing an old log: %w", err)
		}
		old = old[1:]
	}
	return nil
}

// RotatedFiles lists the rotated files of a service's log directory, oldest
// first (`current` is not included).
func RotatedFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "@") && strings.HasSuffix(n, ".s") && e.Type().IsRegular() {
			files = append(files, filepath.Join(dir, n))
		}
	}
	sort.Strings(files)
	return files, nil
}
