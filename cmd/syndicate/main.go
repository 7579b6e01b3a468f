// Command syndicate is the operator's client for a running syndicate-server:
// it shows service status, dumps and observes the config dataspace, asserts
// and sends values, restarts services, analyses the boot (`analyze`), and
// checks and formats `.pr` scripts.
// See docs/operator.md, or run `syndicate help`.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
