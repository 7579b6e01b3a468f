package main

// Command-line structure: `syndicate [CONNECTION FLAGS] COMMAND [FLAGS]
// [ARGS]`, parsed by cobra from the command table (commands.go), which
// also gives help (`-h` on every command), shell completions and man pages.
// The connection flags are accepted both before the command and among its
// flags. Errors are printed as one line `syndicate: …` with exit status 1
// (2 for usage errors); only this package decides what goes to stdout and
// stderr.
//
// Go's flag package, which the commands used before, accepted one dash as
// well as two (`-json`, `-admin-socket`); cmdline.NormaliseArgs keeps those
// spellings working.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/admin/cmdline"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// runError marks an error a command's run function returned: anything
// else cobra reports (flags, arguments, unknown commands) is a usage
// error.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// adminSocketEnv names the environment variable both commands read for
// the admin socket's path (the flag wins).
const adminSocketEnv = "SYNDICATE_ADMIN_SOCKET"

// registerConn adds the connection flags to fs.
func registerConn(c *session.Options, fs *pflag.FlagSet) {
	fs.StringVar(&c.AdminSocket, "admin-socket", c.AdminSocket, "admin socket `PATH` (default $"+adminSocketEnv+", else "+admin.DefaultRule+")")
	fs.StringVar(&c.AdminSocket, "admin", c.AdminSocket, "alias of --admin-socket")
	_ = fs.MarkHidden("admin")
	fs.StringVar(&c.Connect, "connect", c.Connect, "connect to a relay listener `ADDRESS` such as '<tcp \"127.0.0.1\" 9001>' or '<unix \"/path\">' (needs --ref)")
	fs.StringVar(&c.Ref, "ref", c.Ref, "sturdy `REF` to resolve at the listener's gatekeeper, e.g. '<ref {oid: \"syndicate\" sig: #x\"…\"}>'")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "time allowed for connecting and for the first answer")
}

// cli is the state shared by the commands of one invocation.
type cli struct {
	ctx            context.Context
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
	cl := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr,
		conn: session.Options{Timeout: 10 * time.Second, AdminSocket: os.Getenv(adminSocketEnv)}}
	root := cl.root()
	root.SetArgs(cmdline.NormaliseArgs(root, args))
	return cl.report(root.ExecuteContext(ctx))
}

// root builds the command tree from the command table.
func init() { cobra.EnableCommandSorting = false } // help lists the table's order

func (cl *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "syndicate",
		Short: "the operator's client for syndicate-server",
		Long: "syndicate shows and changes what a running syndicate-server does, and checks and formats .pr scripts.\n\n" +
			"PATTERN is Preserves text where _ matches anything and ?name (or ?) captures;\n" +
			"records, sequences and dictionaries match extensibly (extra fields allowed).\n" +
			"By default the server is reached through its admin socket: $" + adminSocketEnv + ", else " + admin.DefaultRule + ".",
		Version:                    cmdline.Version(),
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		SilenceUsage:               true,
		Args:                       cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					return usagef("unknown command %q: did you mean %s?", args[0], s[0])
				}
				return usagef("unknown command %q (see syndicate help)", args[0])
			}
			cmd.SetOut(cl.stderr)
			_ = cmd.Usage()
			return &runError{exitStatus(2)}
		},
	}
	root.SetIn(cl.stdin)
	root.SetOut(cl.stdout)
	root.SetErr(cl.stderr)
	root.SetVersionTemplate("syndicate {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	registerConn(&cl.conn, root.PersistentFlags())
	for _, c := range cl.commands() {
		root.AddCommand(c.cobra(cl))
	}
	return root
}

// report prints err as one line and returns the exit status.
func (cl *cli) report(err error) int {
	var ue *usageError
	var se *session.UsageError
	var ex exitStatus
	var re *runError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ex):
		return int(ex)
	case errors.As(err, &ue):
		fmt.Fprintf(cl.stderr, "syndicate: %s\n", ue.msg)
		return 2
	case errors.As(err, &se):
		fmt.Fprintf(cl.stderr, "syndicate: %s\n", se.Msg)
		return 2
	case !errors.As(err, &re):
		// Cobra's own: an unknown command or a wrong argument count.
		fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
		return 2
	}
	fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
	return 1
}

// exitStatus ends a command with a status and no further message (the
// command has printed what needs printing).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
