// Package config implements the config watcher service
// `<config-watcher PATH ENV>` (services spec §3): it loads every `.pr` script
// under PATH, each in its own facet, and keeps what runs in line with the
// files as they are created, edited, renamed and deleted.
//
// # Design
//
// The package has two layers.
//
// The watcher layer ([Watcher], tree.go and watch.go) is plain Go with no
// knowledge of scripts or actors. It owns a model of the directory tree — the
// scripts it has reported, with a SHA-256 of the content it reported, and the
// directories it watches — and turns filesystem activity into batches of
// [Change]. Every operation is a reconciliation of one path against the disk:
// fsnotify events only say where to look, so lost or reordered events cannot
// corrupt the model, and a periodic full rescan repairs anything the event
// stream missed. Content hashes make touch, chmod and rewrites with identical
// bytes invisible, and an editor's atomic save (write a temporary file, rename
// it over the script) is one content change, hence one restart. Directories
// are handled live: a directory created or moved in is scanned, one removed
// or moved away forgets every script under it, and watches are keyed by
// inode so a directory moved within the tree is not reported under its old
// name. Symbolic links are followed, but never into a directory that is its
// own ancestor: a reconciliation of one path puts the directories above it
// on the recursion stack first, so a loop created at run time (`ln -s .
// loop`) is caught as at start-up, and what a loop path held is forgotten.
//
// The service layer (service.go, worker.go) is thin. On
// `<run-service <config-watcher PATH ENV>>` the framework's supervisor
// ([services.Supervise], policy "always") keeps one `<service-state NAME S>`
// assertion up to date and runs a worker actor. The
// worker canonicalises PATH, performs the initial scan and runs every script
// in one turn together with asserting `ready`, then hands the Watcher to a
// linked task whose batches are applied, each as one turn of the worker's
// main facet: new versions start before old versions stop, so assertions
// common to both never flicker. The old versions stop one round trip through
// the config dataspace later, once the new versions' subscriptions have been
// answered, so even assertions made in `?` handler bodies survive an edit
// that keeps them (Q18; the reference withdraws them briefly). A file whose new version does not compile,
// because its Preserves syntax is broken or because of compile errors,
// keeps its previous version running (a Go deviation: §3.5 stops the old
// version on compile errors); the log says so, and the watcher's
// `<service-info …>` carries the reason until the file is fixed or
// removed. Run-time errors still follow the spec.
//
// Besides `<restart-service NAME>` (§2.4: stop and re-read everything), every
// watcher listens for the message [RescanMessage], `<config-rescan>`, which
// the server sends on SIGHUP: a full rescan that restarts only scripts whose
// content changed.
//
// Goroutines: the watcher goroutine is the linked task of the worker's main
// facet; it ends when that facet stops (context cancelled), and Run closes
// fsnotify (whose own reader goroutine Close waits for) before returning.
package config
