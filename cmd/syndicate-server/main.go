// Command syndicate-server runs the Syndicate actor dataspace server: the
// config dataspace, the services, and the config watchers named by -c.
//
// # Actor layout
//
// The server may be PID 1, so nothing a script, a peer or a daemon sends may
// end it. Containment is by structure:
//
//	syndicate-server (top-level actor)
//	│   the primordial dataspaces ($config, $log); the forwarders that make
//	│   the primordial gatekeeper and $control stable capabilities; the
//	│   supervisors of the built-in services; the command line's requests
//	│   (-p, -s, -c, --debt-reporter)
//	├── dependencies   require-service → run-service tracker, milestones
//	├── daemons        one supervisor per <daemon …>, each with its worker
//	├── config         one supervised watcher per <config-watcher …>
//	├── logger, timeline
//	├── gatekeeper     the primordial gatekeeper; one supervised worker
//	│                  per <gatekeeper #:BS>
//	├── listeners      one supervised worker per <relay-listener …>;
//	│                  each accepted connection an actor of its own
//	├── http           one supervised worker per <http-router …> and per
//	│                  <http-static-files …> (which reports only
//	│                  `failed`: §2.5 gives it no states)
//	├── debt           one supervised reporter per <debt-reporter …>
//	├── resolve        connect-transport, resolve-path (not in a dry run)
//	├── control        $control (with --control)
//	├── admin          the admin socket (dry-run in a dry run)
//	└── parent         the --inferior relay over stdin/stdout
//
// Each built-in service is the worker actor of a services.RunBuiltin
// supervisor, named `<builtin NAME>` in `syndicate status`. The top-level
// actor runs only framework code that touches outside values through the
// dataspace (which is total on every well-formed value): the dataspaces,
// the forwarders (which store and pass values on without looking at them)
// and the supervisors. A crash in a service's actor is logged with the
// service's name, the offending value and its script position
// (services.ReportFailure), puts `<builtin NAME>` in `failed`, and a fresh
// worker boots after the §2.3 delay: the assertions it observes are
// replayed to it, and the forwarders re-assert what peers asserted at the
// gatekeeper. The server and every other service keep running.
package main

import (
	"fmt"
	"io"
	"os"

	commandline "github.com/syndicate-go/syndicate/services/admin/cmdline"
	"github.com/syndicate-go/syndicate/services/daemon/exechelper"
)

func main() {
	// Re-executed as the exec helper of a daemon with exec controls
	// (user, limits, …): apply them and exec the daemon; never returns.
	exechelper.MaybeRun()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses the command line and runs the server (or --check). A
// command-line mistake is exit status 2; -h and --version print to
// stdout and exit 0.
func run(args []string, stdout, stderr io.Writer) int {
	code := 0
	cmd := command(&options{}, func(o *options) {
		if o.check {
			code = runCheck(o, stdout, stderr)
		} else {
			code = runServer(o, stdout, stderr)
		}
	})
	cmd.SetArgs(commandline.NormaliseArgs(cmd, args))
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(stderr, "syndicate-server: %v\n", err)
		return 2
	}
	return code
}
