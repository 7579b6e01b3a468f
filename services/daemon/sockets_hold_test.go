package daemon

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

// inode is the inode of the file at path, 0 if there is none.
func inode(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// secondRunGreets is a daemon whose first run (restart policy keys
// given) never accepts a connection and runs first, and whose later runs
// answer each connection with "hello PID". A connection made during the
// first run waits in the socket's backlog: only a later run, on the same
// listener, can answer it.
func secondRunGreets(t *testing.T, path, first, keys string) (spec preserves.Value, mark string) {
	mark = filepath.Join(t.TempDir(), "ran")
	sh := fmt.Sprintf("if [ -e %s ]; then exec %s -test.run=^$; fi; touch %s; %s", mark, os.Args[0], mark, first)
	return pv(t, fmt.Sprintf(`{argv: ["sh" "-c" %q], env: {GO_WANT_HELPER_PROCESS: "greet"}, listen: [<unix %q>]%s}`, sh, path, keys)), mark
}

// readGreeting reads what the daemon answers on c.
func readGreeting(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testutil.WaitPatience))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("a connection made before the restart was not served: %v", err)
	}
	return line
}

// Issue 27: restart-service stops the worker and its processes, but the
// daemon's socket stays bound (the same listener), so a client that
// connected before is served by the next process, not refused or reset.
func TestSocketsHeldAcrossRestartService(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	path := filepath.Join(t.TempDir(), "d.sock")
	spec, mark := secondRunGreets(t, path, "exec sleep 100", "")
	require(h, "d", spec)
	eventually(t, func() bool { return inode(mark) != 0 }, "the first run")
	greetedAfter(t, path, func() { h.send(h.env.Config, services.RestartService(dname("d"))) })
}

// A worker crash (restart: all, the process failed) restarts the worker;
// the new worker takes the sockets the old one had.
func TestSocketsHeldAcrossWorkerCrash(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	path := filepath.Join(t.TempDir(), "d.sock")
	trigger := filepath.Join(t.TempDir(), "crash")
	first := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; exit 3", trigger)
	spec, mark := secondRunGreets(t, path, first, ", restart: all")
	require(h, "d", spec)
	eventually(t, func() bool { return inode(mark) != 0 }, "the first run")
	greetedAfter(t, path, func() {
		if err := os.WriteFile(trigger, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	})
}

// Withdrawing the declaration closes the sockets and removes their files,
// though the daemon is still required.
func TestSocketsClosedWithTheDeclaration(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	path := filepath.Join(t.TempDir(), "d.sock")
	_, unspec := require(h, "d", pv(t, fmt.Sprintf(`{argv: "exec sleep 100", listen: [<unix %q>]}`, path)))
	eventually(t, func() bool { return inode(path) != 0 }, "the socket file")
	unspec[0]()
	eventually(t, func() bool { return inode(path) == 0 }, "the socket file removed")
	if _, err := net.Dial("unix", path); err == nil {
		t.Error("the socket still accepts after its declaration went")
	}
}

// An edit that keeps the addresses hands the sockets over to the new
// spec: a connection made under the old one is served by the new one.
func TestSocketsHandedOverOnEdit(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	path := filepath.Join(t.TempDir(), "d.sock")
	_, unspec := require(h, "d", pv(t, fmt.Sprintf(`{argv: "echo old; exec sleep 100", listen: [<unix %q>]}`, path)))
	h.waitOutput("d", 1)
	greeter := fmt.Sprintf(`{argv: [%q "-test.run=^$"], env: {GO_WANT_HELPER_PROCESS: "greet"}, listen: [<unix %q>]}`, os.Args[0], path)
	greetedAfter(t, path, func() {
		t.Cleanup(h.assert(preserves.Rec("daemon", preserves.Symbol("d"), pv(t, greeter))))
		unspec[0]()
	})
}

// Issue 27: a Unix socket file belongs to the daemon's user and group,
// with mode 0666 (systemd's SocketMode default).
func TestSocketFileOwnedByTheDaemonsUser(t *testing.T) {
	parallel(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to change user") // CI and this machine run as root
	}
	h, _ := bootDaemons(t, Options{})
	dir := worldDir(t)
	path := filepath.Join(dir, "d.sock")
	require(h, "d", pv(t, fmt.Sprintf(`{argv: "exec sleep 100", user: "nobody", group: 100, listen: [<unix %q>]}`, path)))
	h.waitHas(state("d", services.StateReady), true)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 100 {
		t.Errorf("socket file owned by %d:%d, want 65534:100", st.Uid, st.Gid)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Errorf("socket file mode %v, want a socket with 0666", fi.Mode())
	}
}

// greetedAfter connects to the socket at path, runs act, and checks that
// the connection made before it is served by a greeter (a process started
// after act, on the sockets the server held meanwhile).
func greetedAfter(t *testing.T, path string, act func()) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	act()
	if line := readGreeting(t, c); !strings.HasPrefix(line, "hello ") {
		t.Errorf("greeting %q", line)
	}
}
