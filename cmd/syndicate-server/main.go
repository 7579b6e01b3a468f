// Command syndicate-server runs the Syndicate actor dataspace server: the
// config dataspace, the services, and the config watchers named by -c.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "syndicate-server: %v\n", err)
		return 2
	}
	if opts.check {
		return runCheck(opts, stdout, stderr)
	}
	return runServer(opts, stdout, stderr)
}
