package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/exechelper"
	"github.com/syndicate-go/syndicate/services/daemon/ledger"
)

// Stream names an output pipe of a child.
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string { return string(streamSymbol[s]) }

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
	// cgroups, when set, gives each run a cgroup of its own (cgroup.go)
	// named after name.
	cgroups *cgroup.Manager
	name    string
	// ledger, when set, records the process while it runs (leftover.go).
	ledger *ledger.Ledger
	// spawned receives the handle of the process just started, before
	// started is called.
	spawned func(*ProcHandle)
	// sockets are passed as fds 3… (socket activation, sockets.go).
	sockets *sockets
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

// runProcess runs one instance of s to completion (see process).
func runProcess(ctx context.Context, s *Spec, h procHooks, clock Clock, cleanups *sync.WaitGroup) Exit {
	p := &process{spec: s, hooks: h, clock: clock, cleanups: cleanups, lc: lifecycle{timeout: s.StopTimeout}}
	return p.run(ctx)
}

// process is one run of a spec's process. run returns when the child has
// exited and been reaped and its output has been delivered. Cancelling
// its context stops the child: SIGTERM to its process group, SIGKILL to
// the group after the spec's stopTimeout (the phases are lifecycle's).
// Leftovers of the group (a background job of a shell that exited) are
// terminated the same way by a goroutine tracked in cleanups, so the exit
// is reported at once and no process outlives its daemon.
//
// The goroutine calling run is the only one that calls Wait on the
// child. Stopping is armed with context.AfterFunc and Clock.AfterFunc
// rather than a goroutine selecting on the context, so that a running
// process costs no goroutine besides this one (blocked in Wait) and its
// two readers, which park their pipes and end while the pipes are idle
// (pipeReader).
type process struct {
	spec     *Spec
	hooks    procHooks
	clock    Clock
	cleanups *sync.WaitGroup

	cmd   *exec.Cmd
	pid   int
	proto bool     // a Syndicate-protocol child: stdout and stdin go to the relay
	outR  *os.File // our end of its stdout (the relay's, when proto)
	errR  *os.File // our end of its stderr
	inW   *os.File // our end of its stdin, when proto
	mon   *monitor // its readiness protocol, if any
	// helper, when the spec has exec controls, is what the exec helper
	// applies; status is our end of its status pipe (exec.go).
	helper          *exechelper.Config
	status, statusW *os.File
	group           *cgroup.Group
	notes           []string // cgroup trouble and limits not in force (cgroup.go)
	recorded        uint64   // its entry in the ledger (leftover.go)

	readers   sync.WaitGroup // running or parked (pipeReader)
	outRd     *pipeReader    // nil when proto
	errRd     *pipeReader
	cut       context.CancelFunc // ends the readers' patience with the log
	relayDone <-chan struct{}

	// mu orders the signals against the reap: once Wait has returned, the
	// pid may be recycled and must not be signalled any more.
	mu       sync.Mutex
	lc       lifecycle
	stopKill func() bool // disarms the kill timer, once armed
}

func (p *process) run(ctx context.Context) Exit {
	if err := p.spawn(); err != nil {
		return Exit{SpawnErr: err}
	}
	p.startReaders()
	defer p.cut()
	// A readiness failure stops this process only: pctx is cancelled
	// with the reason, and the restart policy sees it in the exit.
	pctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	if p.hooks.spawned != nil {
		h := &ProcHandle{Pid: p.pid, Notes: p.notes, p: p}
		if p.group != nil {
			h.Cgroup = p.group.Path()
		}
		p.hooks.spawned(h)
	}
	if p.hooks.started != nil {
		p.hooks.started(p.pid)
	}
	if p.mon != nil {
		p.mon.start(p.pid, fail)
	}
	// The relay owns outR and inW from here on, and closes them.
	if p.proto {
		p.relayDone = p.hooks.stdio(p.pid, p.outR, p.inW)
	}
	stopWatch := context.AfterFunc(pctx, func() { p.stop(ctx.Err() != nil) })
	exit := p.wait()
	stopWatch()
	if ctx.Err() == nil && pctx.Err() != nil {
		exit.Failure = context.Cause(pctx)
	}
	p.endGroup()
	p.drain()
	return exit
}

// spawn starts the child with its pipes and readiness protocol; on
// failure everything it opened is closed again.
func (p *process) spawn() error {
	if err := p.prepareSpec(); err != nil {
		return err
	}
	s, h := p.spec, p.hooks
	p.cmd = command(s)
	p.makeGroup()
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			opened = append(opened, r, w)
		}
		return r, w, err
	}
	outW, errW, inR := (*os.File)(nil), (*os.File)(nil), (*os.File)(nil)
	var err error
	if p.outR, outW, err = pipe(); err != nil {
		return err
	}
	if p.errR, errW, err = pipe(); err != nil {
		closeAll()
		return err
	}
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	// A Syndicate-protocol child gets a pipe as stdin (§5.4 step 1) and
	// its stdout goes to the relay instead of the log.
	p.proto = s.Protocol != ProtocolNone && h.stdio != nil
	if p.proto {
		if inR, p.inW, err = pipe(); err != nil {
			closeAll()
			return err
		}
		p.cmd.Stdin = inR
	}
	if p.mon, err = prepareReadiness(s, p.cmd, h, p.clock); err != nil {
		closeAll()
		return err
	}
	h.sockets.apply(p.cmd) // fds 3…, before the helper's status fd
	if err = p.viaHelper(pipe); err == nil {
		err = children.start(p.cmd)
	}
	if err == nil {
		err = p.awaitExec()
	}
	if err != nil {
		p.mon.abandon()
		closeAll()
		p.removeGroup()
		var se *SpawnError
		if errors.As(err, &se) {
			return err
		}
		return spawnCause(s, err)
	}
	// The child holds its own copies of the write ends; closing ours
	// makes EOF arrive when the child's group lets go of them.
	for _, f := range []*os.File{outW, errW, inR} {
		if f != nil {
			f.Close()
		}
	}
	p.pid = p.cmd.Process.Pid
	p.attachGroup()
	p.record()
	p.lc.step(evSpawned, p.clock.Now())
	return nil
}

// startReaders starts the goroutines reading the child's output pipes.
func (p *process) startReaders() {
	emit := p.hooks.output
	if emit == nil {
		line := p.hooks.line
		emit = func(_ context.Context, batch []Line) {
			if line != nil {
				for _, l := range batch {
					l.Text = bytes.Clone(l.Text) // the read buffer is reused
					line(l)
				}
			}
		}
	}
	var readCtx context.Context
	readCtx, p.cut = context.WithCancel(context.Background())
	p.readers.Add(1)
	p.errRd = newPipeReader(readCtx, p.errR, Stderr, p.pid, p.clock.Now, emit, p.readers.Done)
	p.errRd.start()
	if !p.proto {
		p.readers.Add(1)
		p.outRd = newPipeReader(readCtx, p.outR, Stdout, p.pid, p.clock.Now, emit, p.readers.Done)
		p.outRd.start()
	}
}

// stop is the event "stop the process". Dependents stop first (stop.go),
// but only when it is stopped from outside (external), not when it
// failed its readiness.
func (p *process) stop(external bool) {
	var waited time.Duration
	if external && p.hooks.beforeStop != nil {
		waited = p.hooks.beforeStop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signal(p.lc.step(evStop, p.clock.Now())) == sigTerm {
		p.lc.report.Waited = waited
	}
}

// killDue is the event "the stop timeout has passed".
func (p *process) killDue() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signal(p.lc.step(evKillDue, p.clock.Now()))
}

// signal carries out what the lifecycle decided; p.mu is held.
func (p *process) signal(sig groupSignal) groupSignal {
	switch sig {
	case sigTerm:
		p.signalAll(unix.SIGTERM)
		p.stopKill = p.clock.AfterFunc(p.lc.timeout, p.killDue)
	case sigKill:
		p.signalAll(unix.SIGKILL)
	}
	return sig
}

// wait reaps the child: the one and only Wait for it (awaitExit: without
// holding a thread while it runs).
func (p *process) wait() Exit {
	awaitExit(p.pid)
	werr := p.cmd.Wait()
	p.mu.Lock()
	p.lc.step(evReaped, p.clock.Now())
	if p.stopKill != nil {
		p.stopKill()
	}
	report := p.lc.report
	p.mu.Unlock()
	children.remove(p.pid)
	p.mon.stop()
	exit := exitOf(p.pid, p.cmd.ProcessState, werr)
	exit.Stop = report
	return exit
}

// endGroup terminates what is left of the group once its leader is gone:
// orphans of this daemon, terminated without delaying the exit report.
// With a cgroup, that is everything in it, setsid or not; the cgroup is
// removed once empty.
func (p *process) endGroup() {
	if !p.leftovers() {
		p.removeGroup()
		p.forget()
		return
	}
	p.mu.Lock()
	deadline := p.lc.leftoverDeadline(p.clock.Now())
	p.mu.Unlock()
	p.signalAll(unix.SIGTERM)
	p.cleanups.Go(func() {
		for p.leftovers() {
			if !p.clock.Now().Before(deadline) {
				p.signalAll(unix.SIGKILL)
				break
			}
			sleep(context.Background(), p.clock, groupPoll)
		}
		p.removeGroup()
		p.forget()
	})
}

// pastDeadline is a read deadline that has passed: it cuts a pipe read.
var pastDeadline = time.Unix(1, 0)

// drain gives the readers a short while to reach EOF, then cuts the
// pipes so that a straggler holding them cannot stall us; the readers
// (parked ones too: pipeReader.cut) still deliver whatever partial line
// they hold.
func (p *process) drain() {
	drained := make(chan struct{})
	go func() { p.readers.Wait(); close(drained) }()
	grace, release := timeout(p.clock, drainGrace)
	defer release()
	select {
	case <-drained:
		// A relay gets what is left of the grace to handle the child's
		// last packets; past it, stopping the process facet cuts it.
		if p.relayDone != nil {
			select {
			case <-p.relayDone:
			case <-grace:
			}
		}
	case <-grace:
		p.cut()
		if p.outRd != nil {
			p.outRd.cut()
		}
		p.errRd.cut()
		<-drained
	}
	if !p.proto {
		p.outR.Close()
	}
	p.errR.Close()
}

// groupAlive reports whether process group pgid still has members (zombies
// included).
func groupAlive(pgid int) bool {
	return unix.Kill(-pgid, 0) == nil
}
