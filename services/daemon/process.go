package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stream names an output pipe of a child.
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Line is one line of child output. Text keeps its trailing newline; a final
// unterminated line is delivered as it is (§5.6).
type Line struct {
	Stream Stream
	Pid    int
	Text   []byte
	Time   time.Time // when the line was read
}

// Exit describes how a process run ended.
type Exit struct {
	Pid      int            // 0 when the spawn failed
	Code     int            // exit status when the process exited normally
	Signal   syscall.Signal // non-zero when killed by a signal
	Core     bool           // core dumped
	SpawnErr error          // non-nil when the process could not be started
	// Failure, when not nil, is why the supervisor stopped the process
	// (ErrNotReady, ErrWatchdog): the exit is a failure whatever its code.
	Failure error
	// Stop describes the stop, when the process was stopped (signalled
	// by us) rather than exiting of its own accord.
	Stop *StopReport
}

// StopReport is how a stop went.
type StopReport struct {
	Waited time.Duration // held back until dependent daemons had stopped
	Took   time.Duration // from SIGTERM to the exit
	Killed bool          // SIGKILL was needed (stopTimeout passed)
}

// Success reports whether the process exited with status 0 of its own
// accord.
func (e Exit) Success() bool {
	return e.SpawnErr == nil && e.Failure == nil && e.Signal == 0 && e.Code == 0
}

// String renders the exit the way the reference does (`exit status: 3`,
// `signal: 9 (SIGKILL)`), or the spawn error text.
func (e Exit) String() string {
	if e.Failure != nil && e.SpawnErr == nil {
		f := e.Failure
		e.Failure = nil
		return f.Error() + "; stopped, " + e.String()
	}
	switch {
	case e.SpawnErr != nil:
		return e.SpawnErr.Error()
	case e.Signal != 0:
		s := fmt.Sprintf("signal: %d (%s)", int(e.Signal), unix.SignalName(e.Signal))
		if e.Core {
			s += " (core dumped)"
		}
		return s
	}
	return fmt.Sprintf("exit status: %d", e.Code)
}

func exitOf(pid int, st *os.ProcessState, err error) Exit {
	if st == nil {
		// Wait failed without a state; only possible if something else
		// reaped our child, which the reaper's table prevents.
		return Exit{Pid: pid, Code: -1, SpawnErr: fmt.Errorf("wait: %w", err)}
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return Exit{Pid: pid, Code: st.ExitCode()}
	}
	if ws.Signaled() {
		return Exit{Pid: pid, Signal: ws.Signal(), Core: ws.CoreDump()}
	}
	return Exit{Pid: pid, Code: ws.ExitStatus()}
}

const (
	// drainGrace bounds how long we wait, after the child exits, for its
	// pipes to reach EOF (a straggler in its group may hold them open).
	// Draining first means no output is lost on exit (quirk Q8).
	drainGrace = 250 * time.Millisecond
	// maxLine splits pathological lines so memory stays bounded.
	maxLine = 64 << 10
	// readBuf is the most each pipe reader takes from its pipe at once; the
	// lines of one read are handed on as one batch. Longer lines are
	// assembled across reads. A reader holds at most one batch beyond the
	// one being logged, so this also bounds the output a process can have
	// in the server (issue 12 §6).
	readBuf = 16 << 10
	// groupPoll is how often we look whether a process group is gone.
	groupPoll = 10 * time.Millisecond
)

// procHooks receive a process's life events; they are called from the
// goroutines of runProcess and must not block for long.
type procHooks struct {
	started func(pid int)
	line    func(Line)
	// output, when set, replaces line: it receives each read's lines as
	// one batch and may block until the log can take them, which is how
	// a daemon that prints faster than the log is written ends up blocked
	// on its pipe. ctx ends when the pipes are cut after the child's exit
	// (drainGrace); output must then deliver without waiting.
	output func(ctx context.Context, batch []Line)
	// stdio takes over stdout and stdin of a Syndicate-protocol child
	// (Events.Stdio); without it such a child runs like protocol none.
	stdio func(pid int, stdout, stdin *os.File) <-chan struct{}
	// ready, notify and warn serve the spec's readiness protocol
	// (readiness.go): ready once, when the process signals readiness.
	ready  func()
	notify func(Notification)
	warn   func(format string, args ...any)
	// beforeStop runs before a stopped process is signalled, and returns
	// how long it held the signal back (dependents first, stop.go).
	beforeStop func() time.Duration
}

// command builds the exec.Cmd for s: its own process group, stdin from
// /dev/null, the environment of §5.2.
func command(s *Spec) *exec.Cmd {
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	if s.ClearEnv || len(s.Env) > 0 {
		cmd.Env = buildEnv(s)
	}
	// Setpgid puts the child in a fresh group whose id is its pid, so the
	// whole tree it forks can be signalled at once (§5.8, Q9).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func buildEnv(s *Spec) []string {
	env := []string{}
	if !s.ClearEnv {
		env = os.Environ()
	}
	for _, c := range s.Env {
		prefix := c.Name + "="
		kept := env[:0]
		for _, kv := range env {
			if !strings.HasPrefix(kv, prefix) {
				kept = append(kept, kv)
			}
		}
		env = kept
		if !c.Remove {
			env = append(env, prefix+c.Value)
		}
	}
	return env
}

// runProcess runs one instance of s to completion. It returns when the child
// has exited and been reaped and its output has been delivered. Cancelling
// ctx stops the child: SIGTERM to its process group, SIGKILL to the group
// after s.StopTimeout. Leftovers of the group (a background job of a shell
// that exited) are terminated the same way by a goroutine tracked in wg, so
// the exit is reported at once and no process outlives its daemon.
//
// The calling goroutine is the only one that calls Wait on the child.
func runProcess(ctx context.Context, s *Spec, h procHooks, now func() time.Time, wg *sync.WaitGroup) Exit {
	cmd := command(s)
	outR, outW, err := os.Pipe()
	if err != nil {
		return Exit{SpawnErr: err}
	}
	var errR, errW, inR, inW *os.File
	// closeAll closes the pipe ends opened so far (nil ones are skipped).
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	if errR, errW, err = os.Pipe(); err != nil {
		closeAll(outR, outW)
		return Exit{SpawnErr: err}
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	// A Syndicate-protocol child gets a pipe as stdin (§5.4 step 1) and its
	// stdout goes to the relay instead of the log.
	proto := s.Protocol != ProtocolNone && h.stdio != nil
	if proto {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return Exit{SpawnErr: err}
		}
		cmd.Stdin = inR
	}
	mon, err := prepareReadiness(s, cmd, h)
	if err != nil {
		closeAll(outR, outW, errR, errW, inR, inW)
		return Exit{SpawnErr: err}
	}
	err = children.start(cmd)
	if mon != nil && err != nil {
		mon.abandon()
	}
	// The child holds its own copies of the write ends; closing ours makes
	// EOF arrive when the child's group lets go of them.
	closeAll(outW, errW, inR)
	if err != nil {
		closeAll(outR, errR, inW)
		return Exit{SpawnErr: spawnCause(s, err)}
	}
	pid := cmd.Process.Pid

	emit := h.output
	if emit == nil {
		emit = func(_ context.Context, batch []Line) {
			if h.line != nil {
				for _, l := range batch {
					h.line(l)
				}
			}
		}
	}
	// cut ends the readers' patience with the log once the pipes are cut.
	readCtx, cut := context.WithCancel(context.Background())
	defer cut()
	var readers sync.WaitGroup
	readers.Go(func() { readLines(readCtx, errR, Stderr, pid, now, emit) })
	if !proto {
		readers.Go(func() { readLines(readCtx, outR, Stdout, pid, now, emit) })
	}

	// A readiness failure stops this process only: pctx is cancelled
	// with the reason, and the restart policy sees it in the exit.
	pctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	if h.started != nil {
		h.started(pid)
	}
	if mon != nil {
		mon.start(pid, fail)
	}
	// The relay owns outR and inW from here on, and closes them.
	var relayDone <-chan struct{}
	if proto {
		relayDone = h.stdio(pid, outR, inW)
	}

	// Stopping is armed with context.AfterFunc and time.AfterFunc rather
	// than a goroutine selecting on ctx, so that a running process costs
	// no goroutine besides this one (blocked in Wait) and its two readers.
	// mu orders the signals against the reap: once Wait has returned, the
	// pid may be recycled and must not be signalled any more.
	var (
		mu       sync.Mutex
		reaped   bool
		deadline time.Time // when the group gets SIGKILL, once stopping
		kill     *time.Timer
		stop     *StopReport
		termAt   time.Time
	)
	stopWatch := context.AfterFunc(pctx, func() {
		// Dependents first (stop.go): only when stopped from outside,
		// not when the process failed its readiness.
		var waited time.Duration
		if h.beforeStop != nil && ctx.Err() != nil {
			waited = h.beforeStop()
		}
		mu.Lock()
		defer mu.Unlock()
		if reaped {
			return
		}
		stop = &StopReport{Waited: waited}
		termAt = time.Now()
		_ = unix.Kill(-pid, unix.SIGTERM)
		deadline = termAt.Add(s.StopTimeout)
		kill = time.AfterFunc(s.StopTimeout, func() {
			mu.Lock()
			defer mu.Unlock()
			if !reaped {
				stop.Killed = true
				_ = unix.Kill(-pid, unix.SIGKILL)
			}
		})
	})
	// The one and only Wait for this child (awaitExit: without holding a
	// thread while it runs).
	awaitExit(pid)
	werr := cmd.Wait()
	mu.Lock()
	reaped = true
	if kill != nil {
		kill.Stop()
	}
	if stop != nil {
		stop.Took = time.Since(termAt)
	}
	report := stop
	mu.Unlock()
	stopWatch()
	children.remove(pid)
	mon.stop()
	exit := exitOf(pid, cmd.ProcessState, werr)
	exit.Stop = report
	if ctx.Err() == nil && pctx.Err() != nil {
		exit.Failure = context.Cause(pctx)
	}

	// The leader is gone. If members of its group remain, they are orphans
	// of this daemon: terminate them too, without delaying the exit report.
	if groupAlive(pid) {
		if deadline.IsZero() {
			deadline = time.Now().Add(s.StopTimeout)
		}
		_ = unix.Kill(-pid, unix.SIGTERM)
		wg.Go(func() { killGroupBy(pid, deadline) })
	}

	// Drain: give the readers a short while to reach EOF, then cut the
	// pipes so that a straggler holding them cannot stall us; the readers
	// still deliver whatever partial line they hold.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	grace := time.NewTimer(drainGrace)
	defer grace.Stop()
	select {
	case <-drained:
		// A relay gets what is left of the grace to handle the child's
		// last packets; past it, stopping the process facet cuts it.
		if relayDone != nil {
			select {
			case <-relayDone:
			case <-grace.C:
			}
		}
	case <-grace.C:
		cut()
		if !proto {
			_ = outR.SetReadDeadline(time.Now())
		}
		_ = errR.SetReadDeadline(time.Now())
		<-drained
	}
	if !proto {
		outR.Close()
	}
	errR.Close()
	return exit
}

// groupAlive reports whether process group pgid still has members (zombies
// included).
func groupAlive(pgid int) bool {
	return unix.Kill(-pgid, 0) == nil
}

// killGroupBy waits until group pgid is empty or deadline passes, then
// SIGKILLs whatever is left.
func killGroupBy(pgid int, deadline time.Time) {
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for groupAlive(pgid) {
		if !time.Now().Before(deadline) {
			_ = unix.Kill(-pgid, unix.SIGKILL)
			return
		}
		<-tick.C
	}
}
