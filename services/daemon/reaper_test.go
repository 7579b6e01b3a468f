package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestReaperReapsOrphansNotOurChildren runs, in a child copy of the test
// binary made a subreaper, 20 concurrent daemons that each leave an orphan
// in a new session and exit with status 7. Every daemon's Wait must still
// see status 7 (the reaper did not steal it) and every orphan must be
// reaped (no zombie children remain).
func TestReaperReapsOrphansNotOurChildren(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=reaper")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reaper child: %v\n%s", err, out)
	}
}

func TestReadStat(t *testing.T) {
	pid, st, ppid, ok := readStat("/proc/self/stat")
	if !ok || pid != os.Getpid() || ppid != os.Getppid() || st == 0 {
		t.Errorf("readStat(self) = %d %c %d %v", pid, st, ppid, ok)
	}
}

func reaperChild([]string) int {
	if err := BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "prctl:", err)
		return 1
	}
	if !IsSubreaper() {
		fmt.Fprintln(os.Stderr, "IsSubreaper false after BecomeSubreaper")
		return 1
	}
	stop := StartReaper(zerolog.Nop())
	defer stop()
	r := NewRunner(nil)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan string, n)
	orphans := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := shSpec(`setsid sh -c 'sleep 0.2' </dev/null >/dev/null 2>&1 & echo $!; exit 7`)
			s.Restart = RestartNever
			var last Exit
			r.Run(context.Background(), s, Events{
				Line:   func(l Line) { orphans <- strings.TrimSpace(string(l.Text)) },
				Exited: func(e Exit, _ Next) { last = e },
			})
			if last.Code != 7 {
				errs <- fmt.Sprintf("daemon exit %v, want status 7", last)
			}
		}()
	}
	wg.Wait()
	r.Wait()
	close(errs)
	for e := range errs {
		fmt.Fprintln(os.Stderr, e)
		return 1
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		z := zombieChildren(os.Getpid())
		if len(z) == 0 && childrenOf(os.Getpid()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "zombies left: %v, children %d\n", z, childrenOf(os.Getpid()))
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(orphans) != n {
		fmt.Fprintf(os.Stderr, "%d orphans reported, want %d\n", len(orphans), n)
		return 1
	}
	return 0
}

// childrenOf counts processes (any state) whose parent is ppid.
func childrenOf(ppid int) int {
	ents, _ := os.ReadDir("/proc")
	c := 0
	for _, e := range ents {
		if _, _, pp, ok := readStat("/proc/" + e.Name() + "/stat"); ok && pp == ppid {
			c++
		}
	}
	return c
}

func TestParseStat(t *testing.T) {
	parallel(t)
	pid, st, ppid, ok := parseStat("42 (a) b) c) Z 7 42 42 0")
	if !ok || pid != 42 || st != 'Z' || ppid != 7 {
		t.Errorf("parseStat = %d %c %d %v", pid, st, ppid, ok)
	}
	for _, bad := range []string{"", "42", "x (a) Z 7", "42 (a) ZZ 7", "42 (a) Z x", "42 (a)"} {
		if _, _, _, ok := parseStat(bad); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("1 (init) S 0 1 1 0 -1")
	f.Add("42 (a) b) c) Z 7 42")
	f.Fuzz(func(t *testing.T, s string) {
		pid, _, ppid, ok := parseStat(s)
		if ok && (pid < 0 && !strings.HasPrefix(s, "-") || ppid < 0 && !strings.Contains(s, "-")) {
			t.Fatalf("parseStat(%q) = %d, %d", s, pid, ppid)
		}
	})
}
