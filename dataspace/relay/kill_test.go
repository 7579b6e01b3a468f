package relay

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// TestHelperClientProcess is not a test: run as a child process (see
// TestKilledClientProcess), it connects to RELAY_HELPER_ADDR and asserts
// a stream of values, many per turn, until it is killed.
func TestHelperClientProcess(t *testing.T) {
	addr := os.Getenv("RELAY_HELPER_ADDR")
	if addr == "" {
		t.Skip("helper process only")
	}
	sys := dataspace.NewSystem(dataspace.Options{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	conn, peer, err := Spawn(sys, "client", c, Options{ImportInitial: true})
	if err != nil {
		os.Exit(3)
	}
	drv := newDriver(t, sys, "driver")
	for i := 0; ; i++ {
		// Should the test process go away without killing us, the
		// connection ends, and so do we: never an orphan spinning forever.
		select {
		case <-conn.Done():
			os.Exit(4)
		default:
		}
		drv.do(func(t *dataspace.Turn) {
			for j := range 50 {
				t.Assert(peer, rec("k", preserves.Int(i), preserves.Int(j)))
			}
		})
		time.Sleep(100 * time.Microsecond)
	}
}

// A client process killed with SIGKILL in the middle of producing turns:
// the server retracts everything it had asserted.
func TestKilledClientProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	checkGoroutines(t)
	srv := newServer(t, "srv")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(conns)
			return
		}
		conn, _, _ := Spawn(srv.sys, "conn", c, Options{InitialRef: srv.ds})
		conns <- conn
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClientProcess$")
	cmd.Env = append(os.Environ(), "RELAY_HELPER_ADDR="+ln.Addr().String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child runs until killed: kill it on every path out of the test
	// (a failed wait included), before the server shuts down.
	killed := false
	kill := func() {
		if !killed {
			killed = true
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}
	}
	t.Cleanup(kill)
	conn := <-conns
	if conn == nil {
		t.Fatal("no connection")
	}
	waitFor(t, "assertions from the child", func() bool { return srv.size() > 500 })
	kill()
	<-conn.Done()
	waitFor(t, "dataspace empty but for the mirror's own Observe", func() bool { return srv.size() == 1 })
}
