// Command listenfds is the socket-activation test daemon: it takes its
// listening sockets the way sd_listen_fds(3) does (LISTEN_PID must be its
// own pid, LISTEN_FDS counts fds from 3), writes its pid to the file
// named by its first argument, and answers each connection with
// "hello from PID NAMES\n". With a second argument "once" it exits after
// the first connection (so the server restarts it). On SIGTERM it stops
// accepting and answers the connections it has accepted before it exits,
// as a well-behaved socket-activated daemon does: those it has not
// accepted stay in the backlog of the socket the server holds.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

func main() {
	if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		fmt.Fprintf(os.Stderr, "LISTEN_PID=%q is not my pid %d\n", os.Getenv("LISTEN_PID"), os.Getpid())
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "LISTEN_FDS=%q\n", os.Getenv("LISTEN_FDS"))
		os.Exit(2)
	}
	os.WriteFile(os.Args[1], []byte(strconv.Itoa(os.Getpid())), 0o644)
	once := len(os.Args) > 2 && os.Args[2] == "once"
	names := os.Getenv("LISTEN_FDNAMES")
	var wg sync.WaitGroup
	done := make(chan struct{})
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.FileListener(os.NewFile(uintptr(3+i), "listen"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		lns = append(lns, ln)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "hello from %d %s\n", os.Getpid(), names)
				c.Close()
				if once {
					close(done)
					return
				}
			}
		}()
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		<-term
		for _, ln := range lns {
			ln.Close()
		}
		close(stopped)
	}()
	if once {
		select {
		case <-done:
		case <-stopped:
		}
		return
	}
	wg.Wait()
}
