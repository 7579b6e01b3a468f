package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Spawn failures (operator issue): a process that cannot be started is
// reported with its exact cause, and retried with a growing delay, since
// retrying a missing program every second only fills the log.

// SpawnError is why a process could not be started.
type SpawnError struct {
	Cause error  // ErrProgramMissing, ErrNotExecutable, ErrDirMissing, or nil
	Path  string // the program or directory concerned
	Err   error  // what the operating system said
}

func (e *SpawnError) Error() string {
	if e.Cause == nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v: %s", e.Cause, e.Path)
}

func (e *SpawnError) Unwrap() []error { return []error{e.Cause, e.Err} }

// Causes of a spawn failure (test with errors.Is).
var (
	ErrProgramMissing = errors.New("program not found")
	ErrNotExecutable  = errors.New("program is not executable")
	ErrDirMissing     = errors.New("working directory does not exist")
)

// spawnCause explains err, the failure to start s: fork/exec reports a
// missing working directory and a missing program alike (ENOENT), so the
// directory is looked at first.
func spawnCause(s *Spec, err error) error {
	if s.Dir != "" {
		if fi, serr := os.Stat(s.Dir); serr != nil || !fi.IsDir() {
			return &SpawnError{Cause: ErrDirMissing, Path: s.Dir, Err: err}
		}
	}
	prog := s.Argv[0]
	if !strings.Contains(prog, "/") {
		if errors.Is(err, exec.ErrNotFound) {
			return &SpawnError{Cause: ErrProgramMissing, Path: prog + " (searched in $PATH)", Err: err}
		}
		if p, lerr := exec.LookPath(prog); lerr == nil {
			prog = p
		}
	} else if !filepath.IsAbs(prog) && s.Dir != "" {
		prog = filepath.Join(s.Dir, prog)
	}
	fi, serr := os.Stat(prog)
	switch {
	case serr != nil && errors.Is(serr, fs.ErrNotExist):
		return &SpawnError{Cause: ErrProgramMissing, Path: prog, Err: err}
	case serr == nil && (fi.IsDir() || fi.Mode().Perm()&0o111 == 0), errors.Is(err, fs.ErrPermission):
		return &SpawnError{Cause: ErrNotExecutable, Path: prog, Err: err}
	}
	return &SpawnError{Err: err}
}

// Spawn retry delays: DelayAfterError, doubled after each consecutive
// spawn failure up to MaxSpawnDelay.
const MaxSpawnDelay = 30 * time.Second

// spawnDelay is the delay before retry n (1 for the first) of a spawn that
// keeps failing, never shorter than the policy's delay d.
func spawnDelay(n int, d time.Duration) time.Duration {
	x := DelayAfterError
	for i := 1; i < n && x < MaxSpawnDelay; i++ {
		x *= 2
	}
	return max(min(x, MaxSpawnDelay), d)
}
