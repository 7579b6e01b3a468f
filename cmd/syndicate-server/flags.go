package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/transport"
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

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

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

// parseFlags parses args (without the program name). Both the short and the
// long spelling of each flag are accepted, with one or two dashes, as Go's
// flag package does.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{serviceOutput: true}
	fs := flag.NewFlagSet("syndicate-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := (*stringList)(&o.configs)
	fs.Var(cfg, "c", "")
	fs.Var(cfg, "config", "watch the `PATH` (file or directory) for .pr scripts; repeatable")
	ports := addrList{&o.ports, tcpPort}
	fs.Var(ports, "p", "")
	fs.Var(ports, "port", "listen for the Syndicate protocol on TCP `PORT` (0.0.0.0); repeatable")
	socks := addrList{&o.sockets, unixPath}
	fs.Var(socks, "s", "")
	fs.Var(socks, "socket", "listen for the Syndicate protocol on the Unix socket `PATH`; repeatable")
	fs.BoolVar(&o.inferior, "inferior", false, "speak the Syndicate protocol with the parent on stdin/stdout")
	fs.BoolVar(&o.debtReporter, "debt-reporter", false, "run the debt reporter service")
	fs.BoolVar(&o.noBanner, "no-banner", false, "do not print the start-up banner")
	fs.StringVar(&o.traceFile, "t", "", "")
	fs.StringVar(&o.traceFile, "trace-file", "", "write a causal trace to `PATH`")
	fs.BoolVar(&o.control, "control", false, "offer $control to scripts (<exit N> ends the server)")
	fs.BoolVar(&o.check, "check", false, "compile every script under the -c paths and the named files, run nothing, report every error")
	fs.StringVar(&o.logFormat, "log-format", "", "diagnostic log format: console or json (default: console on a terminal, json otherwise)")
	fs.StringVar(&o.logLevel, "log-level", "", "minimum diagnostic log level: debug, info, warn, error (default info, or $SYNDICATE_LOG)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "run every script and service, but start no process and bind no socket")
	fs.StringVar(&o.adminSocket, "admin-socket", os.Getenv("SYNDICATE_ADMIN_SOCKET"), "path of the admin socket (default $SYNDICATE_ADMIN_SOCKET, or under $XDG_RUNTIME_DIR or /run/syndicate; - for none)")
	fs.StringVar(&o.adminSocket, "admin", o.adminSocket, "alias of --admin-socket")
	fs.BoolVar(&o.serviceOutput, "service-output", true, "print daemons' output and $log messages on stderr (--service-output=false: only keep them)")
	fs.StringVar(&o.stateDir, "state-dir", "", "keep the operator's stops (syndicate stop NAME) in `DIR`, so that they survive a restart")
	fs.StringVar(&o.logDir, "log-dir", "", "keep each service's output in a directory of its own under `DIR`, rotated")
	fs.Int64Var(&o.logFileSize, "log-file-size", logger.DefaultFileSize, "rotate a service's log file when it reaches `BYTES`")
	fs.IntVar(&o.logFileCount, "log-file-count", logger.DefaultFileCount, "rotated log files kept per service")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: syndicate-server [flags] [FILE...]\n\n"+
			"  -c, --config PATH       watch PATH for .pr scripts (repeatable)\n"+
			"  -p, --port PORT         relay listener on TCP PORT (repeatable)\n"+
			"  -s, --socket PATH       relay listener on Unix socket PATH (repeatable)\n"+
			"      --inferior          relay with the parent process over stdin/stdout\n"+
			"      --debt-reporter     run the debt reporter\n"+
			"      --no-banner         no start-up banner\n"+
			"  -t, --trace-file PATH   write a causal trace\n"+
			"      --control           offer $control (<exit N>)\n"+
			"      --check             compile scripts, run nothing, report errors\n"+
			"      --dry-run           run scripts and services, start no process, bind no socket\n"+
			"      --log-format F      console or json\n"+
			"      --log-level L       debug, info, warn or error (the server's own messages)\n"+
			"      --service-output=false  do not print service output on stderr\n"+
			"      --log-dir DIR       keep service output under DIR/SERVICE/current, rotated\n"+
			"      --log-file-size N   rotate at N bytes (default 1048576)\n"+
			"      --log-file-count N  rotated files kept per service (default 10)\n"+
			"      --admin-socket PATH admin socket path (- for none; also --admin, $SYNDICATE_ADMIN_SOCKET)\n")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch o.logFormat {
	case "", "console", "json":
	default:
		return nil, fmt.Errorf("--log-format: %q is neither console nor json", o.logFormat)
	}
	if o.logFileSize < 4096 {
		return nil, fmt.Errorf("--log-file-size: %d is below the minimum of 4096 bytes", o.logFileSize)
	}
	if o.logFileCount < 1 {
		return nil, fmt.Errorf("--log-file-count: %d: at least one rotated file must be kept", o.logFileCount)
	}
	if fs.NArg() > 0 {
		if !o.check {
			return nil, errors.New("file arguments are only accepted with --check (use -c PATH to run scripts)")
		}
		o.checkFiles = fs.Args()
	}
	return o, nil
}
