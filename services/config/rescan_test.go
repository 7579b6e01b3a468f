package config

import "testing"

func TestRescanAllReachesRegisteredWatchersOnly(t *testing.T) {
	w := &Watcher{rescan: make(chan struct{}, 1)}
	unregister := register(w)
	RescanAll()
	select {
	case <-w.rescan:
	default:
		t.Fatal("a registered watcher was not asked to rescan")
	}
	unregister()
	RescanAll()
	select {
	case <-w.rescan:
		t.Fatal("an unregistered watcher was asked to rescan")
	default:
	}
}
