package config

import "sync"

// live is the set of running watchers, so that a process-wide event (the
// server's SIGHUP) can ask every one of them for a full rescan. Signals are
// process-global, so a process-global registry is the honest shape here.
var live struct {
	mu       sync.Mutex
	watchers map[*Watcher]struct{}
}

func register(w *Watcher) (unregister func()) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.watchers == nil {
		live.watchers = map[*Watcher]struct{}{}
	}
	live.watchers[w] = struct{}{}
	return func() {
		live.mu.Lock()
		defer live.mu.Unlock()
		delete(live.watchers, w)
	}
}

// RescanAll asks every running config watcher for a full rescan (services
// spec §1.2: SIGHUP). Files whose content is unchanged keep running.
func RescanAll() {
	live.mu.Lock()
	defer live.mu.Unlock()
	for w := range live.watchers {
		w.Rescan()
	}
}
