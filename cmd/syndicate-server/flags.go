package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/services/admin"
	commandline "github.com/syndicate-go/syndicate/services/admin/cmdline"
	"github.com/syndicate-go/syndicate/services/logger"
)

// options is the parsed command line. The flags are the reference server's
// (services spec §1.1) plus our additions (--check, --log-format, --dry-run,
// --admin-socket).
type options struct {
	configs      []string
	ports        []transport.Address // -p: TCP on 0.0.0.0
	sockets      []transport.Address // -s: Unix sockets
	inferior     bool
	debtReporter bool
	noBanner     bool
	traceFile    string
	control      bool

	check       bool
	checkFiles  []string // positional arguments in --check mode
	logFormat   string   // "", "console" or "json"
	logLevel    string
	dryRun      bool
	adminSocket string // "" = default path; "-" = none

	// Service output (issue 15): printed on stderr unless serviceOutput
	// is false; kept per service under logDir when set.
	serviceOutput bool
	logDir        string
	// stateDir keeps the operator's overrides (syndicate stop) across
	// restarts.
	stateDir     string
	logFileSize  int64
	logFileCount int
}

// addrList is a repeatable flag of transport addresses, each made from
// its argument by parse.
type addrList struct {
	list  *[]transport.Address
	parse func(string) (transport.Address, error)
}

func (l addrList) String() string {
	if l.list == nil {
		return ""
	}
	var parts []string
	for _, a := range *l.list {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, ",")
}

func (l addrList) Type() string { return "address" }

func (l addrList) Set(s string) error {
	a, err := l.parse(s)
	if err == nil {
		*l.list = append(*l.list, a)
	}
	return err
}

func tcpPort(s string) (transport.Address, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return transport.Address{}, fmt.Errorf("port %q is not a number from 0 to 65535", s)
	}
	return transport.TCPAddr("0.0.0.0", int(n)), nil
}

func unixPath(s string) (transport.Address, error) { return transport.UnixAddr(s), nil }

// listen is the relay listeners the flags ask for, ports first (§1.1).
func (o *options) listen() []transport.Address {
	return append(append([]transport.Address(nil), o.ports...), o.sockets...)
}

// command is the server's command line: the reference's flags (services
// spec §1.1: -c/--config, -p/--port, -s/--socket, --inferior,
// --debt-reporter, --no-banner, -t/--trace-file, --control, and clap's
// -h/--help and -V/--version) plus ours. o receives the flags; run, if
// set, runs with the positional arguments once they are checked.
func command(o *options, run func(o *options)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "syndicate-server [flags] [FILE...]",
		Short: "the Syndicate actor dataspace server",
		Long: "syndicate-server runs the config dataspace, the built-in services and the scripts under the -c paths.\n" +
			"FILE arguments are only accepted with --check. See docs/operator.md.",
		Version:               commandline.Version(),
		Args:                  cobra.ArbitraryArgs,
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			o.fromEnvironment()
			if run != nil {
				run(o)
			}
			return nil
		},
	}
	cmd.SetVersionTemplate("syndicate-server {{.Version}}\n")
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringArrayVarP(&o.configs, "config", "c", nil, "watch the `PATH` (file or directory) for .pr scripts; repeatable")
	fs.VarP(addrList{&o.ports, tcpPort}, "port", "p", "listen for the Syndicate protocol on TCP `PORT` (0.0.0.0); repeatable")
	fs.VarP(addrList{&o.sockets, unixPath}, "socket", "s", "listen for the Syndicate protocol on the Unix socket `PATH`; repeatable")
	fs.BoolVar(&o.inferior, "inferior", false, "speak the Syndicate protocol with the parent on stdin/stdout")
	fs.BoolVar(&o.debtReporter, "debt-reporter", false, "run the debt reporter service")
	fs.BoolVar(&o.noBanner, "no-banner", false, "do not print the start-up banner")
	fs.StringVarP(&o.traceFile, "trace-file", "t", "", "write a causal trace to `PATH`")
	fs.BoolVar(&o.control, "control", false, "offer $control to scripts (<exit N> ends the server)")
	fs.BoolVar(&o.check, "check", false, "compile every script under the -c paths and the named files, run nothing, report every error")
	fs.BoolVar(&o.dryRun, "dry-run", false, "run every script and service, but start no process and bind no socket")
	fs.StringVar(&o.logFormat, "log-format", "", "diagnostic log `FORMAT`: console or json (default: console on a terminal, json otherwise)")
	fs.StringVar(&o.logLevel, "log-level", "", "minimum diagnostic log `LEVEL`: debug, info, warn, error (default info, or $SYNDICATE_LOG)")
	fs.BoolVar(&o.serviceOutput, "service-output", true, "print daemons' output and $log messages on stderr (--service-output=false: only keep them)")
	fs.StringVar(&o.stateDir, "state-dir", "", "keep the operator's stops (syndicate stop NAME) and the last run of each scheduled daemon (catchUp) in `DIR`, so that they survive a restart")
	fs.StringVar(&o.logDir, "log-dir", "", "keep each service's output in a directory of its own under `DIR`, rotated")
	fs.Int64Var(&o.logFileSize, "log-file-size", logger.DefaultFileSize, "rotate a service's log file when it reaches `BYTES`")
	fs.IntVar(&o.logFileCount, "log-file-count", logger.DefaultFileCount, "rotated log files kept per service")
	fs.StringVar(&o.adminSocket, "admin-socket", "", "`PATH` of the admin socket, - for none (default $SYNDICATE_ADMIN_SOCKET, else "+admin.DefaultRule+")")
	fs.StringVar(&o.adminSocket, "admin", o.adminSocket, "alias of --admin-socket")
	_ = fs.MarkHidden("admin")
	fs.BoolP("version", "V", false, "print the version and exit")
	fs.BoolP("help", "h", false, "print this help and exit")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	return cmd
}

// validate checks the options once the flags are parsed; args are the
// positional arguments.
func (o *options) validate(args []string) error {
	switch o.logFormat {
	case "", "console", "json":
	default:
		return fmt.Errorf("--log-format: %q is neither console nor json", o.logFormat)
	}
	if o.logFileSize < 4096 {
		return fmt.Errorf("--log-file-size: %d is below the minimum of 4096 bytes", o.logFileSize)
	}
	if o.logFileCount < 1 {
		return fmt.Errorf("--log-file-count: %d: at least one rotated file must be kept", o.logFileCount)
	}
	if len(args) > 0 {
		if !o.check {
			return errors.New("file arguments are only accepted with --check (use -c PATH to run scripts)")
		}
		o.checkFiles = args
	}
	return nil
}

// fromEnvironment fills in what the flags left to the environment.
func (o *options) fromEnvironment() {
	if o.adminSocket == "" {
		o.adminSocket = os.Getenv("SYNDICATE_ADMIN_SOCKET")
	}
}

// parseFlags parses args (without the program name) as run would.
func parseFlags(args []string) (*options, error) {
	o := &options{}
	cmd := command(o, nil)
	cmd.SetArgs(commandline.NormaliseArgs(cmd, args))
	cmd.SetOut(io.Discard)
	if err := cmd.Execute(); err != nil {
		return nil, err
	}
	return o, nil
}
