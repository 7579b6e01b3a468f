package daemon

import (
	"context"
	"strings"
	"sync"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The sockets of a daemon are held for the life of its declaration, not
// of its worker: `restart-service` and a worker crash stop the worker
// and its spec runs, and a new worker takes over the very sockets the
// old one had, so no connection is ever refused (they wait in the
// backlog) and a Unix socket file keeps its inode. The daemon's facet
// (daemonRun, which outlives its workers) owns a socketHold; the sockets
// are closed, and their files removed, once the declaration is withdrawn
// and no run uses them, or once the daemon is no longer required.
//
// A spec run asks for its sockets by key (heldKey: the addresses and the
// owner of the socket files), so an edit of the declaration that keeps
// its addresses hands the sockets over as well: the new spec's run
// waits for the old run to end (its process to stop), then takes them.

// socketHold is one daemon's held sockets. It has its own mutex: the
// daemon's facet (declare, undeclare, shut) and the linked tasks of its
// workers' spec runs (acquire, release) run on different goroutines.
type socketHold struct {
	mu    sync.Mutex
	byKey map[string]*heldSockets
	shut  bool // the daemon is no longer required
}

// heldSockets is the sockets of one key.
type heldSockets struct {
	socks    *sockets      // nil until bound
	declared int           // declarations standing with this key
	busy     chan struct{} // non-nil while a spec run uses them; closed at release
}

func newSocketHold() *socketHold { return &socketHold{byKey: map[string]*heldSockets{}} }

// heldKey is the identity of a spec's sockets: its addresses and the
// owner given to their files.
func heldKey(s *Spec) string {
	var b strings.Builder
	for _, a := range s.Listen {
		b.WriteString(a.String())
		b.WriteByte(' ')
	}
	b.WriteString("owner " + s.Exec.User + ":" + s.Exec.Group)
	return b.String()
}

// acquire returns the sockets of key for a spec run, binding them with
// bind if none are held. While another run uses them it waits (logging
// once, through waiting) for that run to end, or for ctx.
func (h *socketHold) acquire(ctx context.Context, key string, bind func() (*sockets, error), waiting func()) (*sockets, error) {
	for {
		h.mu.Lock()
		e := h.byKey[key]
		if e == nil {
			e = &heldSockets{}
			h.byKey[key] = e
		}
		if ch := e.busy; ch != nil {
			h.mu.Unlock()
			if waiting != nil {
				waiting()
				waiting = nil
			}
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if e.socks == nil {
			b, err := bind()
			if err != nil {
				h.forget(key, e)
				h.mu.Unlock()
				return nil, err
			}
			e.socks = b
		}
		e.busy = make(chan struct{})
		h.mu.Unlock()
		return e.socks, nil
	}
}

// release is the event "the run using key's sockets has ended" (its
// processes are gone): they stay held while the declaration stands and
// the daemon is required, and are closed otherwise.
func (h *socketHold) release(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byKey[key]
	close(e.busy)
	e.busy = nil
	if h.shut || e.declared == 0 {
		h.forget(key, e)
	}
}

// declare and undeclare count the declarations standing with key.
func (h *socketHold) declare(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byKey[key]
	if e == nil {
		e = &heldSockets{}
		h.byKey[key] = e
	}
	e.declared++
}

func (h *socketHold) undeclare(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byKey[key]
	e.declared--
	if e.declared == 0 && e.busy == nil {
		h.forget(key, e)
	}
}

// close is the event "the daemon is no longer required": every socket no
// run uses is closed now, the others when their run ends.
func (h *socketHold) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shut = true
	for key, e := range h.byKey {
		if e.busy == nil {
			h.forget(key, e)
		}
	}
}

// forget closes e's sockets and drops it. The caller holds h.mu.
func (h *socketHold) forget(key string, e *heldSockets) {
	if e.socks != nil {
		e.socks.close()
		e.socks = nil
	}
	if e.busy == nil && e.declared <= 0 {
		delete(h.byKey, key)
	}
}

// watchDeclarations counts, in the daemon's facet, the declarations of
// the daemon that have sockets, so that the hold knows when a spec's
// sockets are no longer declared (a worker's own view ends with the
// worker). It starts when a worker first meets a spec with `listen`, so
// the many daemons without sockets pay nothing: the declaration is then
// counted long before its first run can end.
func (d *daemonRun) watchDeclarations(t *dataspace.Turn) {
	if d.watching {
		return
	}
	d.watching = true
	pat := pattern.Rec(externalservices.LabelDaemon, services.Literal(d.id), pattern.Capture())
	t.During(d.env.Config, pat, func(t *dataspace.Turn, caps []preserves.Value) error {
		dict, ok := caps[0].(*preserves.Dictionary)
		if !ok {
			return nil
		}
		if _, ok := dict.Get(preserves.Symbol("listen")); !ok {
			return nil
		}
		spec, err := ParseSpec(caps[0])
		if err != nil || len(spec.Listen) == 0 {
			return nil // the worker reports it
		}
		key := heldKey(spec)
		d.held.declare(key)
		t.OnStop(func(*dataspace.Turn) error {
			d.held.undeclare(key)
			return nil
		})
		return nil
	})
}
