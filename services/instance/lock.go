// Package instance keeps one server per configuration (issue 22): before
// it runs any script or spawns any process, the server takes an exclusive
// lock for each -c path and for its admin socket. A second server on
// either refuses to start, naming the first one's pid.
//
// # Where the locks are
//
// Configuration directories are often read-only, so the locks live in the
// runtime directory (the admin socket's: $XDG_RUNTIME_DIR/syndicate,
// /run/syndicate for root, else $TMPDIR/syndicate-UID), one file per
// thing locked, named after its canonical path (absolute, symbolic links
// resolved): `config-HASH.lock`, `admin-HASH.lock`, HASH being the first
// 16 hex digits of the path's SHA-256. The file holds the owner's pid
// and path, for the refusal message and for people.
//
// The lock is flock(2) on that file, so the kernel releases it when its
// owner dies however it dies: a lock left by a dead server is simply taken
// over (and the log says whose it was). Release removes the file while
// still holding the lock; a taker checks after flock that the file it
// locked is still the one at the path, and starts again if not, so a
// removal racing an acquisition never lets two servers hold the lock.
//
// Limits: flock is per host: servers on two machines sharing a config
// over NFS are not kept apart. Two different paths to the same directory
// through bind mounts are different locks.
package instance

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HeldError is the refusal: another live server holds the lock of Path.
type HeldError struct {
	What, Path string // "config" or "admin socket"; the canonical path
	PID        int    // the holder's pid, 0 if unknown
}

func (e *HeldError) Error() string {
	holder := "another server"
	if e.PID > 0 {
		holder = "another server (pid " + strconv.Itoa(e.PID) + ")"
	}
	return fmt.Sprintf("%s already runs on %s %s", holder, e.What, e.Path)
}

// Lock is a set of held locks.
type Lock struct {
	dir   string
	files []*os.File
	// TakenOver lists the pids of dead servers whose locks were taken.
	TakenOver []int
}

// Key is one thing to lock.
type Key struct {
	What   string // "config", "admin socket"
	Prefix string // of the file name: "config", "admin"
	Path   string
}

// Canonical is path made absolute, with symbolic links resolved as far as
// the path exists (a -c path that does not exist yet is still locked).
func Canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	dir, base := filepath.Split(abs)
	if dir != abs && dir != "" {
		if real, err := filepath.EvalSymlinks(filepath.Clean(dir)); err == nil {
			return filepath.Join(real, base)
		}
	}
	return abs
}

// FileName is the lock file of a key, in dir.
func FileName(dir string, k Key) string {
	sum := sha256.Sum256([]byte(Canonical(k.Path)))
	return filepath.Join(dir, k.Prefix+"-"+hex.EncodeToString(sum[:8])+".lock")
}

// Acquire takes every key's lock in dir, or none: on a refusal it
// releases what it took and returns a *HeldError.
func Acquire(dir string, keys ...Key) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock directory: %w", err)
	}
	l := &Lock{dir: dir}
	for _, k := range keys {
		f, prev, err := acquireOne(FileName(dir, k), k)
		if err != nil {
			l.Release()
			return nil, err
		}
		l.files = append(l.files, f)
		if prev > 0 && prev != os.Getpid() {
			l.TakenOver = append(l.TakenOver, prev)
		}
	}
	return l, nil
}

// acquireOne locks the file at name; prev is the pid the file named
// before (a dead server's, when its lock is taken over).
func acquireOne(name string, k Key) (f *os.File, prev int, err error) {
	for {
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, 0, fmt.Errorf("lock file: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid := readPID(f)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, 0, &HeldError{What: k.What, Path: Canonical(k.Path), PID: pid}
			}
			return nil, 0, fmt.Errorf("lock file %s: %w", name, err)
		}
		// Still the file at name? A releasing server may have removed it
		// between our open and our flock.
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Lstat(name, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
			prev = readPID(f)
			content := strconv.Itoa(os.Getpid()) + " " + Canonical(k.Path) + "\n"
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt([]byte(content), 0)
			}
			return f, prev, nil
		}
		f.Close()
	}
}

func readPID(f *os.File) int {
	buf := make([]byte, 64)
	n, _ := f.ReadAt(buf, 0)
	field, _, _ := strings.Cut(string(buf[:n]), " ")
	pid, _ := strconv.Atoi(strings.TrimSpace(field))
	return pid
}

// Dir is the directory of the lock files (the server's record of its
// daemons goes beside them: services/daemon/ledger).
func (l *Lock) Dir() string { return l.dir }

// Release removes the lock files and lets the locks go.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	for _, f := range l.files {
		_ = os.Remove(f.Name()) // while still locked: see the package doc
		f.Close()
	}
	l.files = nil
}
