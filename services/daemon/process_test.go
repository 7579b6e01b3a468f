package daemon

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func run(t *testing.T, ctx context.Context, s *Spec) (Exit, *lineLog, int) {
	t.Helper()
	var wg sync.WaitGroup
	var log lineLog
	var pid atomic.Int64
	exit := runProcess(ctx, s, procHooks{
		started: func(p int) { pid.Store(int64(p)) },
		line:    log.add,
	}, RealClock, &wg)
	wg.Wait()
	return exit, &log, int(pid.Load())
}

func TestProcessLinesKeepNewlineAndFlushPartialTail(t *testing.T) {
	leakCheck(t)
	exit, log, pid := run(t, context.Background(), shSpec(`printf 'one\ntwo\n'; printf 'err\n' >&2; printf 'tail'`))
	if !exit.Success() || exit.Pid != pid || pid == 0 {
		t.Fatalf("exit = %v (pid %d), started pid %d", exit, exit.Pid, pid)
	}
	if got, want := log.texts(Stdout), []string{"one\n", "two\n", "tail"}; !slices.Equal(got, want) {
		t.Errorf("stdout lines = %q, want %q", got, want)
	}
	if got, want := log.texts(Stderr), []string{"err\n"}; !slices.Equal(got, want) {
		t.Errorf("stderr lines = %q, want %q", got, want)
	}
	for _, l := range log.lines {
		if l.Pid != pid || l.Time.IsZero() {
			t.Errorf("line %+v: pid/time not set", l)
		}
	}
}

func TestProcessNothingLostOnFastExit(t *testing.T) {
	leakCheck(t)
	// Many lines written just before exit must all arrive before the exit
	// is reported (quirk Q8).
	exit, log, _ := run(t, context.Background(), shSpec(`i=0; while [ $i -lt 500 ]; do echo line$i; i=$((i+1)); done; printf end; exit 3`))
	if exit.Success() || exit.Code != 3 || exit.String() != "exit status: 3" {
		t.Fatalf("exit = %v", exit)
	}
	got := log.texts(Stdout)
	if len(got) != 501 || got[0] != "line0\n" || got[499] != "line499\n" || got[500] != "end" {
		t.Fatalf("got %d lines (first %q, last %q)", len(got), got[0], got[len(got)-1])
	}
}

func TestProcessLongLineSplit(t *testing.T) {
	leakCheck(t)
	exit, log, _ := run(t, context.Background(), shSpec(`head -c 150000 /dev/zero | tr '\0' x; echo`))
	if !exit.Success() {
		t.Fatal(exit)
	}
	total := 0
	for _, l := range log.texts(Stdout) {
		if len(l) > maxLine+4096 {
			t.Errorf("line of %d bytes exceeds the bound", len(l))
		}
		total += len(l)
	}
	if total != 150001 {
		t.Errorf("delivered %d bytes, want 150001", total)
	}
}

func TestProcessSpawnFailure(t *testing.T) {
	leakCheck(t)
	exit, _, pid := run(t, context.Background(), &Spec{Argv: []string{"/nonexistent"}, StopTimeout: time.Second})
	if exit.SpawnErr == nil || exit.Success() || pid != 0 {
		t.Fatalf("exit = %+v, pid %d", exit, pid)
	}
	if !errors.Is(exit.SpawnErr, os.ErrNotExist) {
		t.Errorf("spawn error %v is not ErrNotExist", exit.SpawnErr)
	}
	exit, _, _ = run(t, context.Background(), &Spec{Argv: []string{"true"}, Dir: "/nonexistent-dir", StopTimeout: time.Second})
	if exit.SpawnErr == nil {
		t.Fatalf("bad dir: exit = %+v", exit)
	}
}

func TestProcessClearEnvAndSet(t *testing.T) {
	leakCheck(t)
	s := &Spec{Argv: []string{"/usr/bin/env"}, ClearEnv: true, Env: []EnvChange{{Name: "FOO", Value: "bar"}}, StopTimeout: time.Second}
	exit, log, _ := run(t, context.Background(), s)
	if !exit.Success() {
		t.Fatal(exit)
	}
	if got := log.texts(Stdout); !slices.Equal(got, []string{"FOO=bar\n"}) {
		t.Errorf("env output = %q", got)
	}
}

func TestProcessEnvRemoveAndInherit(t *testing.T) {
	leakCheck(t)
	t.Setenv("DAEMON_TEST_KEEP", "k")
	t.Setenv("DAEMON_TEST_DROP", "d")
	s := shSpec(`echo "$DAEMON_TEST_KEEP/${DAEMON_TEST_DROP-unset}/$NEWVAR"`)
	s.Env = []EnvChange{{Name: "DAEMON_TEST_DROP", Remove: true}, {Name: "NEWVAR", Value: "n"}}
	_, log, _ := run(t, context.Background(), s)
	if got := log.texts(Stdout); !slices.Equal(got, []string{"k/unset/n\n"}) {
		t.Errorf("output = %q", got)
	}
}

func TestProcessDir(t *testing.T) {
	leakCheck(t)
	s := shSpec("pwd")
	s.Dir = "/tmp"
	_, log, _ := run(t, context.Background(), s)
	if got := log.texts(Stdout); !slices.Equal(got, []string{"/tmp\n"}) {
		t.Errorf("pwd = %q", got)
	}
}

func TestProcessNonUTF8Bytes(t *testing.T) {
	leakCheck(t)
	_, log, _ := run(t, context.Background(), shSpec(`printf '\377\376\n'`))
	if got := log.texts(Stdout); !slices.Equal(got, []string{"\xff\xfe\n"}) {
		t.Errorf("bytes = %q", got)
	}
}

func TestProcessStopTermsWholeGroup(t *testing.T) {
	parallel(t)
	leakCheck(t)
	ctx, cancel := context.WithCancel(context.Background())
	var pid atomic.Int64
	var wg sync.WaitGroup
	done := make(chan Exit, 1)
	started := make(chan struct{})
	// A long stop timeout: the kill must never be escalated, and the exit
	// signal below proves it; the elapsed time only has to stay well short
	// of the timeout, however loaded the machine is.
	spec := shSpec(`sleep 100 & sleep 100 & wait`)
	spec.StopTimeout = 60 * time.Second
	go func() {
		done <- runProcess(ctx, spec, procHooks{
			started: func(p int) { pid.Store(int64(p)); close(started) },
		}, RealClock, &wg)
	}()
	<-started
	pgid := int(pid.Load())
	// Wait until both grandchildren are in the group.
	eventually(t, func() bool { return len(groupMembers(pgid)) >= 3 }, "group members")
	t0 := time.Now()
	cancel()
	exit := <-done
	wg.Wait()
	if exit.Signal != syscall.SIGTERM {
		t.Errorf("exit = %v, want SIGTERM", exit)
	}
	if d := time.Since(t0); d >= spec.StopTimeout/2 {
		t.Errorf("stop took %v for processes honouring SIGTERM", d)
	}
	eventually(t, func() bool { return len(groupMembers(pgid)) == 0 }, "group %d still has %v", pgid, groupMembers(pgid))
}

func TestProcessStopEscalatesToKill(t *testing.T) {
	leakCheck(t)
	s := helperSpec("ignore-term")
	s.StopTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan Exit, 1)
	go func() {
		done <- runProcess(ctx, s, procHooks{line: func(l Line) {
			if string(l.Text) == "ready\n" {
				once.Do(func() { close(ready) })
			}
		}}, RealClock, &wg)
	}()
	<-ready
	t0 := time.Now()
	cancel()
	exit := <-done
	wg.Wait()
	if exit.Signal != syscall.SIGKILL || exit.String() != "signal: 9 (SIGKILL)" {
		t.Errorf("exit = %v, want SIGKILL", exit)
	}
	if d := time.Since(t0); d < s.StopTimeout {
		t.Errorf("killed after %v, before the %v grace period", d, s.StopTimeout)
	}
}

func TestProcessLeftoverGroupTerminatedAfterLeaderExit(t *testing.T) {
	parallel(t)
	leakCheck(t)
	// The shell exits at once, leaving a background sleep holding the
	// pipes: the exit is still reported promptly and the sleep is killed.
	var wg sync.WaitGroup
	var pid atomic.Int64
	t0 := time.Now()
	exit := runProcess(context.Background(), shSpec(`sleep 100 & echo bg`), procHooks{
		started: func(p int) { pid.Store(int64(p)) },
	}, RealClock, &wg)
	if !exit.Success() {
		t.Fatal(exit)
	}
	// Not held up by the background sleep keeping the pipe open.
	if d := time.Since(t0); d >= DefaultStopTimeout {
		t.Errorf("exit reported after %v", d)
	}
	wg.Wait()
	pgid := int(pid.Load())
	eventually(t, func() bool { return len(groupMembers(pgid)) == 0 }, "leftover group members %v", groupMembers(pgid))
}

// groupMembers lists live (non-zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := 0
		for _, c := range e.Name() {
			if c < '0' || c > '9' {
				pid = -1
				break
			}
			pid = pid*10 + int(c-'0')
		}
		if pid <= 0 {
			continue
		}
		g, err := unix.Getpgid(pid)
		if err != nil || g != pgid {
			continue
		}
		_, st, _, ok := readStat("/proc/" + e.Name() + "/stat")
		if ok && st != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}
