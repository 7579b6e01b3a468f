package daemon

// Readiness protocols (issue 17): how a daemon tells the supervisor that it
// is ready, declared with the `readiness` key of the dictionary form of a
// spec (Go extension keys, docs/protocol.md "Readiness"):
//
//	readiness: <notification-fd N>   s6: the daemon writes a newline to fd N
//	readiness: sd-notify             systemd: datagrams to $NOTIFY_SOCKET
//	readiness: <tcp PORT>            ready once 127.0.0.1:PORT accepts
//	readiness: <tcp "HOST" PORT>     ready once HOST:PORT accepts
//	readiness: <unix "PATH">         ready once the Unix socket PATH accepts
//	readyTimeout: SECONDS            not ready in time: the process is stopped
//	                                 and counts as failed (default 90; 0 = never)
//	watchdog: SECONDS                sd-notify only: WATCHDOG=1 is due at least
//	                                 this often once ready; a miss is a failure
//
// A spec with a readiness protocol is not ready at start (readyOnStart
// defaults to #f, and #t is an invalid combination). The protocol runs per
// process: each restart starts it afresh.
//
// A readiness failure (never ready, watchdog missed) stops the process the
// way any stop does (SIGTERM to its group, SIGKILL after stopTimeout) and
// its exit carries the reason ([Exit.Failure]); the restart policy then
// treats it as an error exit, except that policy `never` gives up (the
// daemon reports failed) rather than calling it complete.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Notification is what an sd-notify daemon said in one datagram, beyond
// READY=1 and WATCHDOG=…, which the monitor handles itself.
type Notification struct {
	Ready     bool   // READY=1 (the first one is also reported as Ready)
	Reloading bool   // RELOADING=1
	Stopping  bool   // STOPPING=1
	Status    string // STATUS=…, if HasStatus
	HasStatus bool
	MainPID   int // MAINPID=…, once accepted (a member of the daemon's group)
}

// monitor runs the readiness protocol of one process instance.
type monitor struct {
	r      Readiness
	clock  Clock
	ready  func()               // the process is ready (called once)
	notify func(Notification)   // sd-notify messages
	fail   func(error)          // stop the process with this reason
	warn   func(string, ...any) // protocol trouble worth a log line
	fdR    *os.File             // ReadyFD: our end of the pipe
	fdW    *os.File             // ReadyFD: the child's end, closed after start
	sock   *notifySocket        // ReadySDNotify
	ctx    context.Context      // cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	warnings int  // warnings logged for this process (maxWarnings)
	extended bool // EXTEND_TIMEOUT_USEC moved the ready deadline
	isReady  bool
	readyT   func() bool // stops the ready deadline
	watchdog time.Duration
	dogT     func() bool // stops the watchdog
	done     bool
}

// prepareReadiness sets up the protocol's side of cmd before it starts: the
// notification pipe in the child's fd table, or the notify socket in its
// environment. A nil monitor and nil error mean there is nothing to run.
func prepareReadiness(s *Spec, cmd *exec.Cmd, h procHooks, clock Clock) (*monitor, error) {
	if s.Readiness.Kind == ReadyAtStart {
		return nil, nil
	}
	m := &monitor{r: s.Readiness, clock: clock, ready: h.ready, notify: h.notify, warn: h.warn, watchdog: s.Readiness.Watchdog}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if m.ready == nil {
		m.ready = func() {}
	}
	if m.notify == nil {
		m.notify = func(Notification) {}
	}
	if m.warn == nil {
		m.warn = func(string, ...any) {}
	}
	switch m.r.Kind {
	case ReadyFD:
		r, w, err := os.Pipe()
		if err != nil {
			m.cancel()
			return nil, err
		}
		m.fdR, m.fdW = r, w
		// ExtraFiles[i] becomes fd 3+i; nil slots are closed in the child.
		extra := make([]*os.File, m.r.FD-2)
		copy(extra, cmd.ExtraFiles)
		extra[m.r.FD-3] = w
		cmd.ExtraFiles = extra
	case ReadySDNotify:
		sock, err := listenNotify()
		if err != nil {
			m.cancel()
			return nil, fmt.Errorf("notify socket: %w", err)
		}
		m.sock = sock
		// The spec's environment plus the protocol's variables.
		sc := *s
		sc.Env = append(slices.Clone(s.Env), EnvChange{Name: "NOTIFY_SOCKET", Value: sock.path})
		if m.watchdog > 0 {
			// WATCHDOG_PID cannot be set: the pid is unknown before the
			// fork. sd_watchdog_enabled() accepts its absence.
			sc.Env = append(sc.Env, EnvChange{Name: "WATCHDOG_USEC", Value: strconv.FormatInt(m.watchdog.Microseconds(), 10)})
		}
		cmd.Env = buildEnv(&sc)
	}
	return m, nil
}

// maxWarnings bounds the protocol warnings logged per process, so that a
// daemon flooding its notify socket cannot flood the log.
const maxWarnings = 10

// warnf logs a protocol warning, at most maxWarnings per process.
func (m *monitor) warnf(format string, args ...any) {
	m.mu.Lock()
	n := m.warnings
	m.warnings++
	m.mu.Unlock()
	switch {
	case n < maxWarnings:
		m.warn(format, args...)
	case n == maxWarnings:
		m.warn("further readiness protocol warnings of this process are suppressed")
	}
}

// abandon releases what prepare set up when the process did not start.
func (m *monitor) abandon() {
	if m == nil {
		return
	}
	m.cancel()
	if m.fdR != nil {
		m.fdR.Close()
		m.fdW.Close()
	}
	if m.sock != nil {
		m.sock.close()
	}
}

// Failure reasons of a process stopped by its supervisor, carried by
// [Exit.Failure] (match with errors.Is).
var (
	ErrNotReady = errors.New("not ready in time")
	ErrWatchdog = errors.New("watchdog timeout")
)

// start runs the protocol for the process pid; fail stops the process
// with a reason.
func (m *monitor) start(pid int, fail func(error)) {
	m.fail = fail
	if m.r.Timeout > 0 {
		m.mu.Lock()
		m.armReadyLocked(m.r.Timeout)
		m.mu.Unlock()
	}
	switch m.r.Kind {
	case ReadyFD:
		m.fdW.Close() // the child holds its own copy
		m.fdW = nil
		m.wg.Go(m.readFD)
	case ReadySDNotify:
		m.wg.Go(func() { m.sock.serve(pid, m) })
	case ReadyListen:
		m.wg.Go(m.poll)
	}
}

// armReadyLocked (re)starts the ready deadline: not ready within d, the
// process fails.
func (m *monitor) armReadyLocked(d time.Duration) {
	if m.readyT != nil {
		m.readyT()
	}
	m.readyT = m.clock.AfterFunc(d, func() {
		err := fmt.Errorf("%w: no readiness (%s) within %v", ErrNotReady, m.describe(), m.r.Timeout)
		m.mu.Lock()
		if m.extended {
			err = fmt.Errorf("%w, extended by EXTEND_TIMEOUT_USEC", err)
		}
		m.mu.Unlock()
		m.fail(err)
	})
}

func (m *monitor) describe() string {
	switch m.r.Kind {
	case ReadyFD:
		return fmt.Sprintf("a newline on fd %d", m.r.FD)
	case ReadySDNotify:
		return "READY=1 on $NOTIFY_SOCKET"
	case ReadyListen:
		return fmt.Sprintf("%s %s accepting connections", m.r.Network, m.r.Address)
	}
	return m.r.Kind.String()
}

// stop ends the protocol once the process has exited; it returns when the
// monitor's goroutines are gone.
func (m *monitor) stop() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.done = true
	if m.readyT != nil {
		m.readyT()
	}
	if m.dogT != nil {
		m.dogT()
	}
	m.mu.Unlock()
	m.cancel()
	if m.fdR != nil {
		m.fdR.Close() // unblocks readFD
	}
	if m.sock != nil {
		m.sock.close() // unblocks serve
	}
	m.wg.Wait()
}

// becomeReady marks the process ready (once) and arms the watchdog.
func (m *monitor) becomeReady() {
	m.mu.Lock()
	if m.done || m.isReady {
		m.mu.Unlock()
		return
	}
	m.isReady = true
	if m.readyT != nil {
		m.readyT()
	}
	m.armWatchdogLocked()
	m.mu.Unlock()
	m.ready()
}

// armWatchdogLocked (re)starts the watchdog timer; the watchdog runs only
// once the process is ready (systemd: "activated when the start-up is
// completed").
func (m *monitor) armWatchdogLocked() {
	if m.done || !m.isReady || m.watchdog <= 0 {
		return
	}
	if m.dogT != nil {
		m.dogT()
	}
	d := m.watchdog
	m.dogT = m.clock.AfterFunc(d, func() {
		m.fail(fmt.Errorf("%w: no WATCHDOG=1 within %v", ErrWatchdog, d))
	})
}

// readFD waits for a newline on the notification pipe (s6: anything
// before it is ignored; EOF without one means no notification).
func (m *monitor) readFD() {
	buf := make([]byte, 64)
	for {
		n, err := m.fdR.Read(buf)
		if bytes.IndexByte(buf[:n], '\n') >= 0 {
			m.becomeReady()
			// Closed once signalled, as s6 does (issue 22): a daemon
			// that writes again gets EPIPE (or SIGPIPE) instead of
			// blocking for ever on a full pipe nobody reads.
			m.fdR.Close()
			return
		}
		if err != nil {
			if m.ctx.Err() == nil {
				m.warnf("notification fd closed without a newline: readiness never signalled")
			}
			return
		}
	}
}

// Back-off of the listening check.
const (
	pollFirst = 10 * time.Millisecond
	pollMax   = 500 * time.Millisecond
)

// poll dials the address with doubling delays until it accepts or the
// monitor stops.
func (m *monitor) poll() {
	delay := pollFirst
	d := net.Dialer{Timeout: time.Second}
	for {
		c, err := d.DialContext(m.ctx, m.r.Network, m.r.Address)
		if err == nil {
			c.Close()
			m.becomeReady()
			return
		}
		if !sleep(m.ctx, m.clock, delay) {
			return
		}
		delay = min(2*delay, pollMax)
	}
}
