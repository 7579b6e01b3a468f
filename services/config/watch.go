package config

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// ErrWatcherClosed is returned by [Watcher.Run] when the notification backend
// went away by itself (not because the context was cancelled).
var ErrWatcherClosed = errors.New("config: filesystem watcher closed unexpectedly")

// WatchOptions tunes a [Watcher]. Zero fields take the defaults below.
type WatchOptions struct {
	// Debounce is the quiet period after an event before the batch is
	// processed, so the several events of one save (truncate, write, close)
	// become one reconciliation. Default 5 ms.
	Debounce time.Duration
	// MaxDelay bounds how long a continuous stream of events can postpone
	// processing. Default 20 ms.
	MaxDelay time.Duration
	// RescanInterval is the period of the full backstop rescan, which repairs
	// anything the event stream missed (overflow, races with directory
	// creation). Default 10 s; negative disables it.
	RescanInterval time.Duration
	// Logger receives warnings about unreadable paths and watch errors.
	Logger zerolog.Logger
}

const (
	defaultDebounce       = 5 * time.Millisecond
	defaultMaxDelay       = 20 * time.Millisecond
	defaultRescanInterval = 10 * time.Second
)

// Watcher watches one configuration root (a directory, recursively, or a
// single file) and reports script changes as batches of [Change].
//
// Use: [NewWatcher], then [Watcher.Scan] once for the initial state, then
// [Watcher.Run] until the context is cancelled. Scan and Run must not run
// concurrently; Run owns the model from the moment it starts.
type Watcher struct {
	fs     *fsnotify.Watcher
	tree   *tree
	opts   WatchOptions
	log    zerolog.Logger
	rescan chan struct{}
}

// NewWatcher sets up notification for root, which should be canonical
// (absolute, symlinks resolved). Nothing is watched until [Watcher.Scan].
func NewWatcher(root string, opts WatchOptions) (*Watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = defaultDebounce
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = defaultMaxDelay
	}
	if opts.RescanInterval == 0 {
		opts.RescanInterval = defaultRescanInterval
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config: watching %s: %w", root, err)
	}
	return &Watcher{
		fs:     fw,
		tree:   newTree(root, fw, opts.Logger),
		opts:   opts,
		log:    opts.Logger,
		rescan: make(chan struct{}, 1),
	}, nil
}

// Scan reconciles the whole tree and returns every change since the last
// scan; the first call returns every script, in the order of §3.3 (sorted,
// depth-first). The error says the root exists but cannot be watched (the
// changes are still valid, but no events will come for it).
func (w *Watcher) Scan() ([]Change, error) { return w.tree.scanAll() }

// Rescan asks a running [Watcher.Run] for a full rescan soon (e.g. on SIGHUP).
// It never blocks.
func (w *Watcher) Rescan() {
	select {
	case w.rescan <- struct{}{}:
	default:
	}
}

// Close releases the notification backend. It is idempotent and safe to call
// while Run is running (Run then returns ErrWatcherClosed).
func (w *Watcher) Close() error { return w.fs.Close() }

// Run processes filesystem events until ctx is cancelled, calling deliver
// (from Run's goroutine, in order) with every non-empty batch of changes. If
// deliver returns false Run stops. Run closes the backend before returning,
// so no goroutine outlives it.
func (w *Watcher) Run(ctx context.Context, deliver func([]Change) bool) error {
	defer w.fs.Close()

	var tick <-chan time.Time
	if w.opts.RescanInterval > 0 {
		tk := time.NewTicker(w.opts.RescanInterval)
		defer tk.Stop()
		tick = tk.C
	}
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()

	var (
		pending []string
		seen    = map[string]bool{}
		first   time.Time
		full    bool
	)
	arm := func() {
		now := time.Now()
		if len(pending) == 0 && !full {
			first = now
		}
		quiet.Reset(min(w.opts.Debounce, max(w.opts.MaxDelay-now.Sub(first), 0)))
	}
	flush := func() bool {
		var cs []Change
		if full {
			cs, _ = w.tree.scanAll() // logged; retried by the next one
		} else {
			cs = w.tree.update(pending)
		}
		pending, full = pending[:0], false
		clear(seen)
		if len(cs) == 0 {
			return true
		}
		return deliver(cs)
	}

	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fs.Events:
			if !ok {
				return ErrWatcherClosed
			}
			arm()
			// Keep the first occurrence of each path: reconciliation reads
			// the current state, so once per batch is enough, and first-seen
			// order keeps a rename's source ahead of its destination.
			if !seen[ev.Name] {
				seen[ev.Name] = true
				pending = append(pending, ev.Name)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return ErrWatcherClosed
			}
			w.log.Info().Err(err).Msg("filesystem watch error; rescanning")
			arm()
			full = true
		case <-w.rescan:
			full = true
			if !flush() {
				return nil
			}
		case <-tick:
			full = true
			if !flush() {
				return nil
			}
		case <-quiet.C:
			if !flush() {
				return nil
			}
		}
	}
}
