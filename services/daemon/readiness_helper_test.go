package daemon

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// readinessChild is the helper daemon of the readiness tests: it performs
// its arguments as steps, in order, then waits to be stopped.
//
//	notify:MSG        send MSG (\n for newlines) to $NOTIFY_SOCKET
//	fd:N              write a newline to fd N
//	close:N           close fd N without writing
//	listen:NET:ADDR   listen on ADDR (tcp or unix) and accept in the background
//	sleep:DUR         sleep
//	watchdog:DUR:K    send WATCHDOG=1 K times, DUR apart
//	env:NAME          print NAME=value of the environment
//	mainpid-child     start a child in our group and send MAINPID= for it
//	say:TEXT          print TEXT
//	wait-file:PATH    wait until PATH exists (the test's go-ahead)
//	exit:N            exit with status N
func readinessChild(steps []string) int {
	for _, st := range steps {
		op, arg, _ := strings.Cut(st, ":")
		switch op {
		case "notify":
			if err := sdNotify(strings.ReplaceAll(arg, `\n`, "\n")); err != nil {
				fmt.Println("notify failed:", err)
				return 3
			}
		case "fd", "close":
			n, _ := strconv.Atoi(arg)
			f := os.NewFile(uintptr(n), "notification")
			if op == "fd" {
				if _, err := f.Write([]byte("\n")); err != nil {
					fmt.Println("fd write failed:", err)
					return 3
				}
			}
			f.Close()
		case "listen":
			network, addr, _ := strings.Cut(arg, ":")
			ln, err := net.Listen(network, addr)
			if err != nil {
				fmt.Println("listen failed:", err)
				return 3
			}
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		case "sleep":
			d, _ := time.ParseDuration(arg)
			time.Sleep(d)
		case "watchdog":
			ds, ks, _ := strings.Cut(arg, ":")
			d, _ := time.ParseDuration(ds)
			k, _ := strconv.Atoi(ks)
			for i := 0; i < k; i++ {
				if err := sdNotify("WATCHDOG=1"); err != nil {
					return 3
				}
				time.Sleep(d)
			}
		case "env":
			fmt.Printf("%s=%s\n", arg, os.Getenv(arg))
		case "mainpid-child":
			c := exec.Command("sleep", "60")
			if err := c.Start(); err != nil {
				return 3
			}
			if err := sdNotify(fmt.Sprintf("MAINPID=%d", c.Process.Pid)); err != nil {
				return 3
			}
		case "wait-file":
			for {
				if _, err := os.Stat(arg); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		case "say":
			fmt.Println(arg)
		case "exit":
			n, _ := strconv.Atoi(arg)
			return n
		}
	}
	time.Sleep(time.Hour)
	return 0
}

// sdNotify is a minimal sd_notify(3) client.
func sdNotify(msg string) error {
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: os.Getenv("NOTIFY_SOCKET"), Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}
