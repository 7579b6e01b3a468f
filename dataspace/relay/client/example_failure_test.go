package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
)

// Dial returns as soon as the connection is up; what goes wrong later
// arrives through the connection's Done and Err. Here the "server"
// answers with bytes that are no packet: the relay ends with a protocol
// error naming the byte at fault, and activating its facet reports that
// it is gone.
func Example_failure() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("]\n"))
		_, _ = io.Copy(io.Discard, c) // until the client hangs up
	}()

	sys := dataspace.NewSystem(dataspace.Options{})
	defer sys.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, _, err := client.Dial(ctx, sys, ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	<-conn.Done()
	fmt.Println(conn.Err())
	fmt.Println(errors.Is(conn.Err(), relay.ErrProtocol))
	fmt.Println(conn.Facet().Activate(func(*dataspace.Turn) error { return nil }))
	// Output:
	// relay: at byte 0: unbalanced closing bracket
	// true
	// false
}
