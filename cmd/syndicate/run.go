package main

// Command-line structure: `syndicate [CONNECTION FLAGS] COMMAND [FLAGS] [ARGS]`.
// Every command has its own flag set, and the connection flags are accepted
// both before the command and among its flags. Errors are printed as one line
// `syndicate: …` with exit status 1 (2 for usage errors); only this package
// decides what goes to stdout and stderr.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// adminSocketEnv names the environment variable both commands read for
// the admin socket's path (the flag wins).
const adminSocketEnv = "SYNDICATE_ADMIN_SOCKET"

// registerConn adds the connection flags to fs.
func registerConn(c *session.Options, fs *flag.FlagSet) {
	fs.StringVar(&c.AdminSocket, "admin-socket", c.AdminSocket, "admin socket `PATH` (default $"+adminSocketEnv+" or "+admin.DefaultPath()+")")
	fs.StringVar(&c.AdminSocket, "admin", c.AdminSocket, "alias of --admin-socket")
	fs.StringVar(&c.Connect, "connect", c.Connect, "connect to a relay listener `ADDRESS` such as '<tcp \"127.0.0.1\" 9001>' or '<unix \"/path\">' (needs --ref)")
	fs.StringVar(&c.Ref, "ref", c.Ref, "sturdy `REF` to resolve at the listener's gatekeeper, e.g. '<ref {oid: \"syndicate\" sig: #x\"…\"}>'")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "time allowed for connecting and for the first answer")
}

// command is one subcommand.
type command struct {
	name, args, help string
	run              func(ctx context.Context, cl *cli, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"status", "[--watch] [--json] [PATTERN]", "services with their states (and daemons' pids, restarts, uptime)", runStatus},
		{"dump", "[PATTERN]", "current assertions in the config dataspace, pretty-printed", runDump},
		{"observe", "PATTERN", "live +/-/! lines for assertions and messages matching PATTERN", runObserve},
		{"assert", "VALUE", "assert VALUE until interrupted", runAssert},
		{"send", "VALUE", "send VALUE as a message", runSend},
		{"restart", "NAME", "send <restart-service NAME>", runRestart},
		{"logs", "[-f] [-n N] [SERVICE]", "recent service output (SERVICE: <daemon web>, or just web), -f to follow", runLogs},
		{"check", "FILE|DIR...", "compile and validate scripts (as syndicate-server --check)", runCheck},
		{"fmt", "[-w] [--upgrade] [FILE...]", "canonical layout of .pr scripts, comments kept (--upgrade: ';' comments to '#')", runFmt},
		{"disasm", "FILE...", "the instructions a script compiles to, each with its line:col", runDisasm},
		{"analyze", "SUBCOMMAND", "boot analysis: blame [--json], critical-chain [--json] [SERVICE], plot (SVG), graph [--svg]", runAnalyze},
		{"noise-key", "[SERVICE]", "a fresh key pair for <bind <noise {…}> …>, as the spec's dictionary", runNoiseKey},
		{"bench", "pubsub|reqrep|idle [FLAGS]", "measure the server: msg/s and MB/s, round-trip latency, memory per session", runBench},
	}
}

// cli is the state shared by the commands of one invocation.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	conn           session.Options
	// positioned is the VALUE argument as read, with source positions
	// (for validation messages).
	positioned preserves.Value
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runCtx(ctx, args, stdin, stdout, stderr)
}

// runCtx is run with an explicit context: its end is the "interrupt" that
// stops observe, assert and status --watch (tests cancel it).
func runCtx(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cl := &cli{stdin: stdin, stdout: stdout, stderr: stderr, conn: session.Options{Timeout: 10 * time.Second, AdminSocket: os.Getenv(adminSocketEnv)}}
	fs := flag.NewFlagSet("syndicate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	registerConn(&cl.conn, fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cl.usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "syndicate: %v\n", err)
		cl.usage(stderr)
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		cl.usage(stderr)
		return 2
	}
	if rest[0] == "help" || rest[0] == "-h" {
		cl.usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == rest[0] {
			err := c.run(ctx, cl, rest[1:])
			return cl.report(err)
		}
	}
	fmt.Fprintf(stderr, "syndicate: unknown command %q\n", rest[0])
	cl.usage(stderr)
	return 2
}

// report prints err as one line and returns the exit status.
func (cl *cli) report(err error) int {
	var ue *usageError
	var se *session.UsageError
	var ex exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ex):
		return int(ex)
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(cl.stderr, "syndicate: %s\n", ue.msg)
		return 2
	case errors.As(err, &se):
		fmt.Fprintf(cl.stderr, "syndicate: %s\n", se.Msg)
		return 2
	}
	fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
	return 1
}

// exitStatus ends a command with a status and no further message (the
// command has printed what needs printing).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func (cl *cli) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: syndicate [--admin-socket PATH | --connect ADDRESS --ref REF] COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %-26s %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintf(w, "\nPATTERN is Preserves text where _ matches anything and ?name (or ?) captures;\n"+
		"records, sequences and dictionaries match extensibly (extra fields allowed).\n"+
		"By default the server is reached through its admin socket, $%s or %s.\n", adminSocketEnv, admin.DefaultPath())
}

// flagSet makes a command's flag set, with the connection flags included
// when the command talks to a server.
func (cl *cli) flagSet(name string, connected bool) *flag.FlagSet {
	fs := flag.NewFlagSet("syndicate "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if connected {
		registerConn(&cl.conn, fs)
	}
	return fs
}

// parseFlags parses a command's flags, turning flag errors into usage
// errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	return nil
}
