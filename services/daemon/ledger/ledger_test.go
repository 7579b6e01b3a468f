package ledger

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// start runs argv in a process group of its own, as the daemon service
// does, and reaps it when the test ends.
func start(t *testing.T, argv ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd, done
}

func entry(t *testing.T, name string, pid int) Entry {
	t.Helper()
	st, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return Entry{Name: name, Pid: pid, Start: st, StopTimeout: 200 * time.Millisecond}
}

// A dead server's record: the process that still runs is stopped with
// SIGTERM, one that ignores it is killed after its stop timeout, one
// that is gone is reported so, and a pid now held by another process
// (a different start time) is never signalled. The record is removed.
func TestRecoverStopsWhatTheRecordNames(t *testing.T) {
	dir := t.TempDir()
	l, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	polite, politeDone := start(t, "sleep", "300")
	// The shell says when its trap is set: a TERM before that would end
	// it as it ends the polite one (seen under load).
	trapped := filepath.Join(dir, "trapped")
	stubborn, stubbornDone := start(t, "sh", "-c", "trap '' TERM; : > "+trapped+"; while :; do sleep 0.05; done")
	testutil.WaitFor(t, "the stubborn shell's trap", func() bool { _, err := os.Stat(trapped); return err == nil })
	gone, goneDone := start(t, "true")
	<-goneDone
	stranger, strangerDone := start(t, "sleep", "300")
	for _, e := range []Entry{entry(t, "polite", polite.Process.Pid), entry(t, "stubborn", stubborn.Process.Pid),
		{Name: "gone", Pid: gone.Process.Pid, Start: 1}} {
		if _, err := l.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	recycled := entry(t, "recycled", stranger.Process.Pid)
	recycled.Start-- // the pid's earlier owner
	id, _ := l.Add(recycled)
	_, _ = l.Add(Entry{Name: "removed", Pid: stranger.Process.Pid})
	if err := l.Remove(id + 1); err != nil {
		t.Fatal(err)
	}

	found, err := Recover(dir, []int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range found {
		got[f.Name] = f.How
	}
	want := map[string]string{"polite": HowTerm, "stubborn": HowKill, "gone": HowGone, "recycled": HowGone}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["removed"]; ok {
		t.Errorf("a removed entry was recovered: %v", got)
	}
	// Recover returns once the leftovers are dead; their Wait, in the
	// goroutine that closes ch, may come a little later.
	for _, ch := range []<-chan struct{}{politeDone, stubbornDone} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Errorf("a leftover still runs after Recover")
		}
	}
	select {
	case <-strangerDone:
		t.Errorf("the process that took a recorded pid was signalled")
	default:
	}
	if _, err := os.Stat(l.Path()); !os.IsNotExist(err) {
		t.Errorf("the record is still there: %v", err)
	}
}

// The record is rewritten once removals dominate it, and a live
// server's record is not touched by Recover.
func TestRecordCompactsAndLiveServerIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	l, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 1000; i++ {
		id, _ := l.Add(Entry{Name: "x", Pid: 1})
		if err := l.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(l.Path())
	if n := strings.Count(string(b), "\n"); n > 200 {
		t.Errorf("the record holds %d lines for no live process", n)
	}
	// A record whose server runs (here, a child with a record named
	// after it) is not recovered.
	srv, _ := start(t, "sleep", "300")
	st, _ := StartTime(srv.Process.Pid)
	path := FileName(dir, srv.Process.Pid)
	os.WriteFile(path, []byte("syndicate-server "+itoa(srv.Process.Pid)+" "+utoa(st)+"\n"), 0o600)
	if found, err := Recover(dir, []int{srv.Process.Pid}); err != nil || len(found) != 0 {
		t.Errorf("%v %v", found, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("a live server's record was removed: %v", err)
	}
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
