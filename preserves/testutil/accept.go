package testutil

import (
	"net"
	"sync"
)

// Accept accepts connections on ln in the background and passes each to
// serve (nil: keep it open and idle). The returned stop closes ln, waits
// for the accept loop, then closes every accepted connection; it may be
// called more than once.
func Accept(ln net.Listener, serve func(net.Conn)) (stop func()) {
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if serve != nil {
				serve(c)
			}
		}
	}()
	return func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
}
