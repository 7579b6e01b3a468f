// Package operate is the client side of operator control (issue 24 item
// 5): `syndicate stop NAME`, `start NAME` and `kill [-s SIGNAL] NAME`, as
// systemctl stop/start/kill and s6-svc -d/-u/-k do. The server holds the
// result (services/override.go, the daemon service's <signal-service …>),
// so a command only asks and then waits until what it asked is so:
//
//   - Stop sends <stop-service NAME> and returns once the server holds
//     <service-stopped NAME …> and nothing runs for NAME (no run-service,
//     process-status or service-stopping): NAME and its dependents have
//     stopped, in order, and their processes are gone.
//   - Start sends <start-service NAME> and returns once the stop is lifted
//     and NAME is required (the server requires it itself when nothing
//     else does). A name nothing declares or requires is an error.
//   - Kill sends <signal-service NAME SIGNAL> once it has seen NAME's
//     processes, and returns when the message has reached the server.
//
// Each watches the config dataspace with a services.StatusModel, read in
// the client actor's turns only.
package operate

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// watch is what a command learns of one service.
type watch struct {
	*services.StatusModel
	key      string
	stopped  int // <service-stopped NAME _>
	procs    int // <process-status NAME _>
	stopping int // <service-stopping NAME>
	declared int // <daemon ID _>, for a name <daemon ID>
}

// known reports whether anything in the server knows the service.
func (w *watch) known() bool {
	return w.declared > 0 || w.Required[w.key] > 0 || w.Running[w.key] > 0 || w.stopped > 0 || w.procs > 0
}

// down reports whether the service is stopped and nothing of it runs.
func (w *watch) down() bool {
	return w.stopped > 0 && w.Running[w.key] == 0 && w.procs == 0 && w.stopping == 0
}

// ask connects, watches name, and once the first answer is complete runs
// send (in the client actor) if ok says so; then it waits until done
// holds. ok and done run in the client actor's turns.
func ask(ctx context.Context, o session.Options, what string, name preserves.Value,
	ok func(*watch) error, send func(*watch) preserves.Value, done func(*watch) bool) error {
	name = preserves.Strip(name)
	w := &watch{StatusModel: services.NewStatusModel(nil)}
	w.key = w.Key(name)
	finished := make(chan struct{})
	var refused error
	closed := false
	check := func(*dataspace.Turn) {
		if !closed && done != nil && done(w) {
			closed = true
			close(finished)
		}
	}
	s, fr, err := session.StartSynced(ctx, o, what, func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		w.Track(t, cfg)
		w.Watch(t, cfg, syndicatego.LabelServiceStopped, 2, func(c []preserves.Value, d int) { w.count(c[0], &w.stopped, d) })
		w.Watch(t, cfg, syndicatego.LabelProcessStatus, 2, func(c []preserves.Value, d int) { w.count(c[0], &w.procs, d) })
		w.Watch(t, cfg, syndicatego.LabelServiceStopping, 1, func(c []preserves.Value, d int) { w.count(c[0], &w.stopping, d) })
		if id, err := externalservices.ParseDaemonName(name); err == nil {
			w.Watch(t, cfg, externalservices.LabelDaemon, 2, func(c []preserves.Value, d int) {
				if preserves.Equal(preserves.Strip(c[0]), id) {
					w.declared += d
				}
			})
		}
		return nil
	}, func(t *dataspace.Turn, cfg *dataspace.Ref) {
		if refused = ok(w); refused != nil {
			return
		}
		t.Message(cfg, send(w))
		w.Changed = check
		check(t)
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if refused != nil {
		return refused
	}
	if done == nil {
		// The round trip goes through the actor that sent the message,
		// so that it has left before the connection closes.
		return s.Await(ctx, s.Sync(fr))
	}
	return s.Wait(ctx, finished)
}

func (w *watch) count(name preserves.Value, n *int, d int) {
	if w.Text(preserves.Strip(name)) == w.key {
		*n += d
	}
}

// Stop stops name (and, first, what depends on it) until Start.
func Stop(ctx context.Context, o session.Options, name preserves.Value) error {
	return ask(ctx, o, "stop", name, known(name),
		func(*watch) preserves.Value {
			return preserves.NewRecord(syndicatego.LabelStopService, preserves.Strip(name))
		},
		(*watch).down)
}

// Start lifts a stop of name, and runs a declared service that nothing
// requires until the next stop or server restart.
func Start(ctx context.Context, o session.Options, name preserves.Value) error {
	return ask(ctx, o, "start", name, known(name),
		func(*watch) preserves.Value {
			return preserves.NewRecord(syndicatego.LabelStartService, preserves.Strip(name))
		},
		func(w *watch) bool { return w.stopped == 0 && w.Required[w.key] > 0 })
}

// ErrNotRunning: kill found no process of the service.
var ErrNotRunning = errors.New("not running")

// Kill sends sig to every process of name (its cgroup, else its process
// group).
func Kill(ctx context.Context, o session.Options, name preserves.Value, sig syscall.Signal) error {
	return ask(ctx, o, "kill", name, func(w *watch) error {
		if w.procs == 0 {
			return fmt.Errorf("%s: %w (see syndicate status)", preserves.Show(preserves.Strip(name)), ErrNotRunning)
		}
		return nil
	}, func(*watch) preserves.Value {
		return syndicatego.SignalService{ServiceName: preserves.Strip(name), Signal: big.NewInt(int64(sig))}.ToValue()
	}, nil)
}

// ErrUnknown: nothing declares, requires or runs the service.
var ErrUnknown = errors.New("no such service")

func known(name preserves.Value) func(*watch) error {
	return func(w *watch) error {
		if !w.known() {
			return fmt.Errorf("%w %s: nothing declares, requires or runs it (see syndicate status --all)", ErrUnknown, preserves.Show(preserves.Strip(name)))
		}
		return nil
	}
}

// ErrBadSignal: the signal is neither a name nor a number of one.
var ErrBadSignal = errors.New("not a signal")

// ParseSignal reads a signal as kill(1) does: a name with or without SIG
// (HUP, SIGHUP, any case) or a number.
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("%w: %s", ErrBadSignal, s)
		}
		return syscall.Signal(n), nil
	}
	u := strings.ToUpper(s)
	if !strings.HasPrefix(u, "SIG") {
		u = "SIG" + u
	}
	if sig := unix.SignalNum(u); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrBadSignal, s)
}
