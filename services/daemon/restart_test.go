package daemon

import (
	"context"
	"sync"
	"testing"
	"time"
)

// scriptedRunner returns a Runner whose processes "exit" with the given
// exits in turn (the last one repeats), so the policy loop is tested with a
// fake clock and no processes.
func scriptedRunner(clock Clock, exits ...Exit) (*Runner, *int) {
	n := 0
	r := &Runner{clock: clock}
	r.run = func(ctx context.Context, s *Spec, h procHooks, _ *sync.WaitGroup) Exit {
		e := exits[min(n, len(exits)-1)]
		n++
		if h.started != nil && e.SpawnErr == nil {
			h.started(1000 + n)
		}
		return e
	}
	return r, &n
}

func TestRunnerRestartDelaysAreExact(t *testing.T) {
	parallel(t)
	clock := newFakeClock()
	r, runs := scriptedRunner(clock, Exit{}, Exit{Code: 1}, Exit{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome, 1)
	go func() { done <- r.Run(ctx, &Spec{Restart: RestartAlways}, Events{}) }()
	want := []time.Duration{DelayAfterSuccess, DelayAfterError, DelayAfterSuccess, DelayAfterSuccess}
	for i, w := range want {
		ft := clock.next(t)
		if ft.d != w {
			t.Fatalf("delay %d = %v, want %v", i, ft.d, w)
		}
		if i < len(want)-1 {
			ft.c <- time.Time{}
		}
	}
	cancel()
	if o := <-done; o != Stopped {
		t.Errorf("outcome = %v, want Stopped", o)
	}
	if *runs != 4 {
		t.Errorf("ran %d times, want 4", *runs)
	}
}

func TestRunnerOutcomes(t *testing.T) {
	parallel(t)
	tests := []struct {
		name   string
		policy RestartPolicy
		exits  []Exit
		want   Outcome
		delays []time.Duration
	}{
		{"on-error completes on success", RestartOnError, []Exit{{}}, Completed, nil},
		{"on-error retries errors after 1s", RestartOnError, []Exit{{Code: 1}, {SpawnErr: context.Canceled}, {}}, Completed, []time.Duration{time.Second, time.Second}},
		{"all crashes on error", RestartAll, []Exit{{Code: 1}}, Crashed, nil},
		{"never completes on error", RestartNever, []Exit{{Code: 1}}, Completed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			r, _ := scriptedRunner(clock, tc.exits...)
			var nexts []Next
			done := make(chan Outcome, 1)
			go func() {
				done <- r.Run(context.Background(), &Spec{Restart: tc.policy}, Events{
					Exited: func(e Exit, n Next) { nexts = append(nexts, n) },
				})
			}()
			for _, d := range tc.delays {
				ft := clock.next(t)
				if ft.d != d {
					t.Fatalf("delay %v, want %v", ft.d, d)
				}
				ft.c <- time.Time{}
			}
			if o := <-done; o != tc.want {
				t.Errorf("outcome %v, want %v", o, tc.want)
			}
			if len(nexts) != len(tc.exits) {
				t.Errorf("%d exit events for %d exits", len(nexts), len(tc.exits))
			}
		})
	}
}

func TestRunnerNoRestartWhenStoppedDuringDelay(t *testing.T) {
	parallel(t)
	clock := newFakeClock()
	r, runs := scriptedRunner(clock, Exit{Code: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome, 1)
	go func() { done <- r.Run(ctx, &Spec{Restart: RestartAlways}, Events{}) }()
	clock.next(t)
	cancel()
	if o := <-done; o != Stopped || *runs != 1 {
		t.Errorf("outcome %v after %d runs", o, *runs)
	}
}

func TestRunnerRealProcessesRestart(t *testing.T) {
	leakCheck(t)
	clock := newFakeClock()
	r := NewRunner(clock)
	ctx, cancel := context.WithCancel(context.Background())
	var log lineLog
	exits := make(chan Exit, 8)
	done := make(chan Outcome, 1)
	go func() {
		done <- r.Run(ctx, shSpec("echo hello"), Events{Line: log.add, Exited: func(e Exit, n Next) { exits <- e }})
	}()
	for i := 0; i < 3; i++ {
		if e := <-exits; !e.Success() {
			t.Fatal(e)
		}
		ft := clock.next(t)
		if ft.d != DelayAfterSuccess {
			t.Fatalf("delay %v", ft.d)
		}
		if i < 2 {
			ft.c <- time.Time{}
		}
	}
	cancel()
	<-done
	r.Wait()
	if got := log.texts(Stdout); len(got) != 3 || got[2] != "hello\n" {
		t.Errorf("lines %q", got)
	}
}
