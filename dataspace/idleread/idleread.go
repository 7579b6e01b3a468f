// Package idleread reads a connection or pipe without holding a buffer
// while it waits. A reader blocked in Read holds its buffer for as long
// as nothing arrives; with thousands of idle peers or quiet daemons those
// buffers are most of the memory (issues 16 and 28). Read instead waits
// in the runtime's poller (syscall.RawConn) and takes a buffer from a
// pool only once input is there. The relay's framer and the daemon's
// output pipes read this way.
//
// A waiting goroutine still holds its stack, though. A relay's reader and
// a daemon's pipe readers therefore go further: once a wait has lasted
// one to two LingerTicks (an Idler, linger.go), the reader parks the
// stream with a Waiter and ends its goroutine; the package's one poller
// goroutine (running only while some stream is parked) starts the reader
// again when input or the end of input arrives (park_linux.go). A reader
// that others may cut with a read deadline (the daemon's drain) is cut
// with Idler.Cut and then unparked, so that Leave cannot clear the
// deadline and a parked reader sees it.
package idleread

import (
	"io"
	"os"
	"sync"
	"syscall"
)

// Read reads once from rc into a buffer taken from pool (holding
// *[]byte) when input has arrived. It returns that buffer, for the
// caller to use and give back, or nil when none was taken; n > 0 only
// on success. Read deadlines apply as for a plain Read; the end of input
// is io.EOF.
func Read(rc syscall.RawConn, pool *sync.Pool) (bp *[]byte, n int, err error) {
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		bp = pool.Get().(*[]byte)
		for {
			n, rerr = syscall.Read(int(fd), *bp)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			pool.Put(bp)
			bp = nil
			return false // wait for input
		}
		return true
	})
	switch {
	case err != nil: // a deadline, or the file closed
		return bp, 0, err
	case rerr != nil:
		return bp, 0, os.NewSyscallError("read", rerr)
	case n == 0:
		return bp, 0, io.EOF
	}
	return bp, n, nil
}
