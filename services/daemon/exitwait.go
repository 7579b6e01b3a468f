package daemon

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit blocks until child pid has exited, without reaping it, in the
// runtime's network poller rather than in a system call: the caller's
// cmd.Wait then returns at once. os.Process.Wait alone blocks in waitid,
// which holds an OS thread per supervised child for the child's whole
// life, and every thread costs the server about 48 kB of Go stacks (its
// g0 and signal stacks) besides the kernel's: 1,000 daemons were 1,005
// threads (issue 16, memory per daemon). A pidfd becomes readable when
// its process exits, so the goroutine waits parked, like a socket read.
// Where pidfds are missing (Linux before 5.3) it returns at once and
// cmd.Wait blocks as before.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		// Exited already? (The poller reports readiness only from now on.)
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err != nil || n > 0
	})
}
