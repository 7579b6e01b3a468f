package logger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
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
	if len(name) != b.Len() {
		lossy = true // `<daemon web.>` must not share `<daemon web>`'s directory
	}
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
	root       string
	size       int64
	count      int
	queueBytes int64
	log        zerolog.Logger
	queue      chan fileChunk
	queued     atomic.Int64  // bytes in queue
	space      chan struct{} // signalled whenever a write made room
	// free holds written chunks' buffers for the logger to fill again:
	// without it every chunk is a large allocation, and the garbage
	// collector and the scavenger returning those pages cost more than
	// the writes. A pool, not a short list: while the writer fsyncs a
	// rotation the logger fills the queue with dozens of chunks, all of
	// which come back once it catches up (a list of 8 dropped the rest,
	// and the next rotation allocated them again, issue 28); the pool
	// lets them go once the logs are quiet for two collections.
	free    sync.Pool     // of *[]byte
	done    chan struct{} // closed when run returns
	open    map[string]*openFile
	now     func() time.Time
	rootFD  *os.File            // the root, opened once it exists
	failing map[string]*lostRun // directories whose last write failed
	// rotated caches each directory's rotated files, oldest first, so
	// that a rotation does not list the directory (it is listed again
	// every relistEvery rotations, in case someone else changed it).
	rotated map[string]*rotatedList
	// lost, when set, is told of each failing spell of a directory and of
	// its end (the logger shows the count in `syndicate status`). It is
	// called on the writer's goroutine.
	lost func(dir string, lines int64, reason string)
	// gate, in tests, holds every write until it is closed (a slow disk).
	gate <-chan struct{}
}

// lostRun is a failing spell of one directory: the lines lost, and why.
type lostRun struct {
	lines    int64
	reason   string
	reported time.Time
}

type openFile struct {
	dir  *os.File // the service's directory
	f    *os.File // its `current`
	size int64
	used uint64
}

func newDirWriter(root string, size int64, count int, queueBytes int64, log zerolog.Logger, now func() time.Time) *dirWriter {
	return &dirWriter{root: root, size: size, count: count, queueBytes: queueBytes, log: log,
		queue: make(chan fileChunk, 1024), space: make(chan struct{}, 1), done: make(chan struct{}), open: map[string]*openFile{}, now: now, failing: map[string]*lostRun{}, rotated: map[string]*rotatedList{}}
}

// buffer returns an empty buffer of at least size bytes for a chunk,
// one already written if there is one.
func (w *dirWriter) buffer(size int) []byte {
	for {
		bp, _ := w.free.Get().(*[]byte)
		if bp == nil {
			return make([]byte, 0, size)
		}
		if cap(*bp) >= size {
			return (*bp)[:0]
		}
		// Too small (a late line's, say): left to the collector.
	}
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
		of.close(true)
		delete(w.open, name)
	}
	if w.rootFD != nil {
		w.rootFD.Close()
		w.rootFD = nil
	}
}

func (of *openFile) close(sync bool) {
	if sync {
		_ = of.f.Sync()
	}
	_ = of.f.Close()
	_ = of.dir.Close()
}

// write appends c to its directory's `current`, rotating between lines
// whenever the file would pass the size limit. Lines that cannot be
// written are counted; once the directory can be written again, the count
// goes in before the first line that can.
func (w *dirWriter) write(c fileChunk, tick uint64) {
	defer func() {
		w.queued.Add(-int64(len(c.data)))
		select {
		case w.space <- struct{}{}:
		default:
		}
		b := c.data[:0]
		w.free.Put(&b)
	}()
	if w.gate != nil {
		<-w.gate
	}
	if run := w.failing[c.dir]; run != nil {
		note := Event{Time: w.now(), Source: services.SourceServer, Line: preserves.String("lines lost, the log directory could not be written"),
			Extra: []preserves.DictEntry{
				{Key: preserves.Symbol("dropped"), Value: preserves.Int(run.lines)},
				{Key: preserves.Symbol("reason"), Value: preserves.String(run.reason)}}}
		if _, err := w.append(c.dir, AppendFile(nil, note), tick); err != nil {
			w.failed(c.dir, int64(c.lines), err)
			return
		}
		delete(w.failing, c.dir)
		w.log.Warn().Str("dir", filepath.Join(w.root, c.dir)).Int64("dropped", run.lines).Str("reason", run.reason).
			Msg("log directory writable again; lines were lost")
		if w.lost != nil {
			w.lost(c.dir, 0, "")
		}
	}
	if rest, err := w.append(c.dir, c.data, tick); err != nil {
		w.failed(c.dir, max(1, int64(bytes.Count(rest, []byte{'\n'}))), err)
	}
}

// append writes data to dir's `current`, rotating between lines; on an
// error it returns the part not written.
func (w *dirWriter) append(dir string, data []byte, tick uint64) ([]byte, error) {
	for len(data) > 0 {
		of, err := w.file(dir, tick)
		if err != nil {
			return data, err
		}
		room := w.size - of.size
		n := len(data)
		if int64(n) > room {
			// As much as fits, cut after a newline; at least one line
			// goes into an empty file whatever its length.
			cut := bytes.LastIndexByte(data[:max(room, 0)], '\n') + 1
			if cut == 0 && of.size > 0 {
				if err := w.rotate(dir, of); err != nil {
					return data, err
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
		data = data[m:]
		if err != nil {
			return data, err
		}
		if len(data) > 0 {
			if err := w.rotate(dir, of); err != nil {
				return data, err
			}
		}
	}
	return nil, nil
}

// failed counts lines lost in dir and logs the first failure of a spell;
// the logger hears of the count at most once a second.
func (w *dirWriter) failed(dir string, lines int64, err error) {
	if of, ok := w.open[dir]; ok {
		of.close(false)
		delete(w.open, dir)
	}
	run := w.failing[dir]
	if run == nil {
		run = &lostRun{reason: reasonOf(err)}
		w.failing[dir] = run
		w.log.Error().Err(err).Str("dir", filepath.Join(w.root, dir)).Msg("cannot write service log; its lines are lost (counted) until it works again")
	}
	run.lines += lines
	if now := w.now(); w.lost != nil && now.Sub(run.reported) >= time.Second {
		run.reported = now
		w.lost(dir, run.lines, run.reason)
	}
}

// errRefused is a log directory entry the writer will not use.
type errRefused struct{ path, why string }

func (e *errRefused) Error() string { return e.path + ": " + e.why }

// reasonOf is err as a short reason for `syndicate status`: for a full
// disk, quota or file the system's own words, without the path.
func reasonOf(err error) string {
	var r *errRefused
	var errno syscall.Errno
	switch {
	case errors.As(err, &r):
		return "refused: " + r.Error()
	case errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT || errno == syscall.EFBIG):
		return errno.Error()
	}
	return err.Error()
}

// openRoot opens the root (following a symbolic link there: the operator
// named it), creating it if need be.
func (w *dirWriter) openRoot() (*os.File, error) {
	if w.rootFD != nil {
		return w.rootFD, nil
	}
	if err := os.MkdirAll(w.root, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(w.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: w.root, Err: err}
	}
	w.rootFD = os.NewFile(uintptr(fd), w.root)
	return w.rootFD, nil
}

// file returns the open `current` of dir, opening it (append only) and
// closing the least recently used one beyond maxOpenFiles. Every open goes
// through a directory handle with O_NOFOLLOW (issue 22): a service
// directory or a `current` that is a symbolic link, a `current` that is
// not a regular file or has other hard links, is refused, never written
// through, whatever is swapped in between a check and the open.
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
		w.open[oldest].close(false)
		delete(w.open, oldest)
	}
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(w.root, dir)
	if err := unix.Mkdirat(int(root.Fd()), dir, 0o755); err != nil && err != unix.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	dfd, err := unix.Openat(int(root.Fd()), dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return nil, &errRefused{path, "not a directory (a symbolic link is never followed)"}
	} else if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d := os.NewFile(uintptr(dfd), path)
	f, err := openCurrent(d, path)
	if err != nil {
		d.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		d.Close()
		return nil, err
	}
	of := &openFile{dir: d, f: f, size: fi.Size(), used: tick}
	w.open[dir] = of
	return of, nil
}

// openCurrent opens d's `current` for appending, refusing anything but a
// regular file with one link. O_NONBLOCK keeps a FIFO planted there from
// blocking the open; it changes nothing for a regular file.
func openCurrent(d *os.File, path string) (*os.File, error) {
	path = filepath.Join(path, "current")
	fd, err := unix.Openat(int(d.Fd()), "current", unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err == unix.ELOOP {
		return nil, &errRefused{path, "a symbolic link (never followed)"}
	} else if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		unix.Close(fd)
		return nil, &errRefused{path, "not a regular file with one link"}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// rotate fsyncs and renames `current`, starts a new one and removes the
// oldest rotated files beyond the count limit, all through the service
// directory's handle.
func (w *dirWriter) rotate(dir string, of *openFile) error {
	delete(w.open, dir)
	defer of.dir.Close()
	if err := of.f.Sync(); err != nil {
		of.f.Close()
		return err
	}
	if err := of.f.Close(); err != nil {
		return err
	}
	dfd := int(of.dir.Fd())
	var name string
	// Two rotations within the clock's resolution must not collide.
	for at := w.now().UTC(); ; at = at.Add(time.Nanosecond) {
		name = "@" + at.Format("20060102T150405.000000000Z") + ".s"
		var st unix.Stat_t
		if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			break
		}
	}
	if err := unix.Renameat(dfd, "current", dfd, name); err != nil {
		return &os.PathError{Op: "rename", Path: filepath.Join(of.dir.Name(), "current"), Err: err}
	}
	_ = of.dir.Sync() // the rename itself survives a crash
	rl := w.rotated[dir]
	if rl == nil || rl.since >= relistEvery {
		names, err := rotatedNames(of.dir)
		if err != nil {
			delete(w.rotated, dir)
			return err
		}
		if len(w.rotated) >= 4*maxOpenFiles {
			clear(w.rotated) // bounded: the lists are only a cache
		}
		rl = &rotatedList{names: names}
		w.rotated[dir] = rl
	} else {
		rl.names = append(rl.names, name)
		rl.since++
	}
	for len(rl.names) > w.count {
		// Gone already (someone else removed it) is as good as removed.
		if err := unix.Unlinkat(dfd, rl.names[0], 0); err != nil && err != unix.ENOENT {
			delete(w.rotated, dir)
			return fmt.Errorf("removing an old log: %w", &os.PathError{Op: "unlink", Path: filepath.Join(of.dir.Name(), rl.names[0]), Err: err})
		}
		rl.names = rl.names[1:]
	}
	return nil
}

// rotatedList is a directory's rotated files, oldest first, as the writer
// made them since it last listed the directory.
type rotatedList struct {
	names []string
	since int // rotations since the listing
}

// relistEvery is how many rotations trust the cached list.
const relistEvery = 16

// rotatedNames lists the rotated files of the open directory d, oldest
// first.
func rotatedNames(d *os.File) ([]string, error) {
	if _, err := d.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, n := range names {
		if strings.HasPrefix(n, "@") && strings.HasSuffix(n, ".s") {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	return files, nil
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
