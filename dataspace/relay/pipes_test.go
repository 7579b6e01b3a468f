package relay

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// A relay over os.Pipe pairs (as for a daemon's stdio), importing the
// other side's oid 0; the other side is a relay over the opposite ends
// exporting a recorder, speaking text.
func TestRunOverPipes(t *testing.T) {
	checkGoroutines(t)
	sys := newSys(t)
	r1, w1, _ := os.Pipe() // parent → child
	r2, w2, _ := os.Pipe() // child → parent
	rec := newRecorder()
	drv := newDriver(t, sys, "drv")
	var recRef *dataspace.Ref
	drv.do(func(t *dataspace.Turn) { recRef = t.Create(rec) })
	child, _, err := spawn(sys, "child", pipeCloser{r1, w2}, func(t *dataspace.Turn) (*Conn, *dataspace.Ref) {
		return RunOverPipes(t, r1, w2, Options{InitialRef: recRef, TextOutput: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	var parent *Conn
	var peer *dataspace.Ref
	drv.do(func(t *dataspace.Turn) {
		parent, peer = RunOverPipes(t, r2, w1, Options{ImportInitial: true, TextOutput: true})
	})
	drv.do(func(t *dataspace.Turn) { t.Assert(peer, preserves.Symbol("hello-child")) })
	waitFor(t, "assertion through pipes", func() bool { return rec.has("+hello-child") })
	// Closing the parent's end: the child sees EOF and retracts.
	parent.Close()
	<-child.Done()
	<-parent.Done()
	waitFor(t, "retraction", func() bool { return rec.count() == 0 })
}

// Against a real child process: `cat` echoes our packets back, so the
// relay talks to itself through the process — a smoke test that process
// pipes behave (and close) as the daemon service will use them.
func TestRunOverPipesWithProcess(t *testing.T) {
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skip("no cat")
	}
	checkGoroutines(t)
	sys := newSys(t)
	cmd := exec.Command("cat")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// cat exits on end of input: close it first, or a failure before
	// conn.Close would leave Wait blocked forever.
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	drv := newDriver(t, sys, "drv")
	var conn *Conn
	var peer *dataspace.Ref
	rec := newRecorder()
	drv.do(func(t *dataspace.Turn) {
		// Export the recorder as oid 0 and import the "peer's" oid 0,
		// which is ourselves via cat: an assertion to peer comes back
		// addressed to our oid 0.
		conn, peer = RunOverPipes(t, stdout, stdin, Options{InitialRef: t.Create(rec), ImportInitial: true, TextOutput: true})
	})
	drv.do(func(t *dataspace.Turn) { t.Message(peer, preserves.Symbol("echo")) })
	waitFor(t, "echoed message", func() bool { return rec.has("!echo") })
	conn.Close()
	<-conn.Done()
}

// The detached reader used for blocking descriptors: Close unblocks Read
// even though the underlying Read never returns.
func TestAsyncReaderClose(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	a := newAsyncReader(readerFunc(func(p []byte) (int, error) { <-block; return 0, io.EOF }))
	done := make(chan error, 1)
	go func() { _, err := a.Read(make([]byte, 8)); done <- err }()
	a.Close()
	if err := <-done; err != io.ErrClosedPipe {
		t.Fatalf("err = %v", err)
	}
	// Data and errors pass through in order.
	b := newAsyncReader(strings.NewReader("hello"))
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "hello" {
		t.Fatalf("%q %v", got, err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
