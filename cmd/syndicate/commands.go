package main

// The command table: every command with its arguments, one-line help,
// argument rules and flags, in one place. Help, shell completions and the
// man pages (docs/man, TestManPages) are generated from it. A command's
// work is a function in the file of its topic; the closures here only
// hand it the parsed options.

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/syndicate-go/syndicate/services/admin/bench"
)

// command is one row of the table.
type command struct {
	use     string // the name, then the arguments
	aliases []string
	short   string
	long    string
	args    cobra.PositionalArgs
	flags   func(fs *pflag.FlagSet)
	run     func(ctx context.Context, args []string) error
	sub     []command
	// services: the arguments are service names, completed from the
	// running server.
	services bool
}

func (cl *cli) commands() []command {
	var (
		st      statusOpts
		dumpAll bool
		lg      logsOpts
		// logsFlags tells whether logs' -n was given.
		logsFlags *pflag.FlagSet
		fm        fmtOpts
		// killSignal is kill's -s.
		killSignal string
	)
	cmds := []command{
		{use: "status [SERVICE|PATTERN]", short: "services with their states (and daemons' pids, restarts, uptime)",
			args: maxArgs(1, "status takes at most one SERVICE or PATTERN (such as web or '<daemon _>')"),
			flags: func(fs *pflag.FlagSet) {
				fs.BoolVarP(&st.watch, "watch", "w", false, "keep running and show the table again whenever it changes")
				fs.BoolVar(&st.json, "json", false, "print JSON (with --watch: one JSON array per line and change)")
				fs.BoolVarP(&st.all, "all", "a", false, "show everything hidden by default: built-in services, declared daemons nothing requires (inactive), inbound connections")
			},
			run: func(ctx context.Context, args []string) error { return cl.status(ctx, st, args) }, services: true},
		{use: "dump [PATTERN]", short: "current assertions in the config dataspace, pretty-printed",
			args:  maxArgs(1, "dump takes at most one PATTERN"),
			flags: func(fs *pflag.FlagSet) { fs.BoolVar(&dumpAll, "all", false, "include <Observe …> subscriptions") },
			run:   func(ctx context.Context, args []string) error { return cl.dump(ctx, dumpAll, args) }},
		{use: "observe PATTERN", short: "live +/-/! lines for assertions and messages matching PATTERN",
			args: exactArgs(1, "observe needs exactly one PATTERN (use _ for everything)"),
			run:  cl.observe},
		{use: "assert VALUE", short: "assert VALUE until interrupted",
			args: exactArgs(1, "assert needs exactly one VALUE"),
			run:  cl.assert},
		{use: "send VALUE", short: "send VALUE as a message",
			args: exactArgs(1, "send needs exactly one VALUE"),
			run:  cl.send},
		{use: "restart SERVICE", short: "send <restart-service SERVICE>",
			args: exactArgs(1, "restart needs exactly one service NAME (e.g. '<daemon web>')"),
			run:  cl.restart, services: true},
		{use: "stop SERVICE", short: "stop SERVICE (<daemon web>, or just web) after its dependents, until start; held by the server",
			args: exactArgs(1, "stop needs exactly one SERVICE"),
			run:  cl.stop, services: true},
		{use: "start SERVICE", short: "lift a stop of SERVICE; also runs a declared service nothing requires",
			args: exactArgs(1, "start needs exactly one SERVICE"),
			run:  cl.start, services: true},
		{use: "kill [-s SIGNAL] SERVICE", short: "send SIGNAL (default TERM) to every process of SERVICE: its cgroup, else its process group",
			args: exactArgs(1, "kill needs exactly one SERVICE"),
			flags: func(fs *pflag.FlagSet) {
				fs.StringVarP(&killSignal, "signal", "s", "TERM", "the signal, by name (HUP, SIGHUP) or number")
			},
			run: func(ctx context.Context, args []string) error { return cl.kill(ctx, killSignal, args) }, services: true},
		{use: "logs [SERVICE]", short: "recent service output (SERVICE: <daemon web>, or just web); -f to follow",
			args: maxArgs(1, "logs takes at most one SERVICE"),
			flags: func(fs *pflag.FlagSet) {
				fs.BoolVarP(&lg.follow, "follow", "f", false, "keep printing new lines until interrupted")
				fs.IntVarP(&lg.lines, "lines", "n", 20, "number of recent lines")
				fs.BoolVar(&lg.json, "json", false, "one JSON object per line")
				fs.StringVar(&lg.since, "since", "", "only lines since DURATION ago (10m, 2d) or TIME (15:04, 2006-01-02, 2006-01-02 15:04:05, RFC 3339, today, yesterday); without -n, all of them")
				logsFlags = fs
			},
			run: func(ctx context.Context, args []string) error {
				lg.linesSet = logsFlags.Changed("lines")
				return cl.logs(ctx, lg, args)
			}, services: true},
		{use: "check FILE|DIR...", short: "compile and validate scripts (as syndicate-server --check)",
			args: minArgs(1, "check needs FILE or DIR arguments"),
			run:  cl.check},
		{use: "fmt [FILE...]", short: "canonical layout of .pr scripts, comments kept (--upgrade: ';' comments to '#')",
			flags: func(fs *pflag.FlagSet) {
				fs.BoolVarP(&fm.write, "write", "w", false, "write the result to the file instead of stdout")
				fs.BoolVarP(&fm.list, "list", "l", false, "list the files whose layout differs, print nothing else")
				fs.BoolVar(&fm.upgrade, "upgrade", false, "rewrite legacy ';' comments to '#' in place, changing nothing else")
				fs.BoolVar(&fm.check, "check", false, "change nothing; list the files whose layout differs and exit 1 if there are any")
			},
			run: func(ctx context.Context, args []string) error { return cl.fmt(ctx, fm, args) }},
		{use: "disasm FILE...", short: "the instructions a script compiles to, each with its line:col",
			args: minArgs(1, "disasm needs FILE arguments"),
			run:  cl.disasm},
		cl.analyzeCommand(),
	}
	cmds = append(cmds, cl.refCommands()...)
	return append(cmds, cl.uiCommand(), cl.benchCommand())
}

// analyzeCommand is `analyze` with its four views.
func (cl *cli) analyzeCommand() command {
	var an analyzeOpts
	return command{use: "analyze", short: "boot analysis: blame, critical-chain, plot (SVG), graph",
		args: subcommand("analyze needs a subcommand: blame, critical-chain [SERVICE], plot or graph [--svg]"),
		sub: []command{
			{use: "blame", short: "each service's time from request to up, slowest first",
				args:  maxArgs(0, "analyze blame takes no arguments"),
				flags: func(fs *pflag.FlagSet) { an.allFlag(fs); fs.BoolVar(&an.json, "json", false, "print JSON") },
				run:   func(ctx context.Context, args []string) error { return cl.analyze(ctx, "blame", an, args) }},
			{use: "critical-chain [SERVICE]", short: "the chain of dependencies that held SERVICE (default: the last up) back",
				args:  maxArgs(1, "analyze critical-chain takes at most one SERVICE"),
				flags: func(fs *pflag.FlagSet) { an.allFlag(fs); fs.BoolVar(&an.json, "json", false, "print JSON") },
				run:   func(ctx context.Context, args []string) error { return cl.analyze(ctx, "critical-chain", an, args) }, services: true},
			{use: "plot", short: "the boot as a timeline, in SVG",
				args:  maxArgs(0, "analyze plot takes no arguments"),
				flags: an.allFlag,
				run:   func(ctx context.Context, args []string) error { return cl.analyze(ctx, "plot", an, args) }},
			{use: "graph", short: "the dependency graph, in DOT (or --svg)",
				args: maxArgs(0, "analyze graph takes no arguments"),
				flags: func(fs *pflag.FlagSet) {
					fs.BoolVar(&an.svg, "svg", false, "draw the graph as SVG instead of writing DOT")
				},
				run: func(ctx context.Context, args []string) error { return cl.analyze(ctx, "graph", an, args) }},
		}}
}

// refCommands are the commands that make sturdy refs and Noise keys.
func (cl *cli) refCommands() []command {
	var rf refOpts
	return []command{
		{use: "mint", short: "a sturdy ref for --oid signed with a key, as syndicate-macaroon mint makes it",
			args:  maxArgs(0, "mint takes flags only: --oid VALUE (--phrase TEXT | --hex KEY) [--caveat C…]"),
			flags: func(fs *pflag.FlagSet) { rf.oidFlags(fs); rf.keyFlags(fs); rf.caveatFlag(fs) },
			run:   func(ctx context.Context, _ []string) error { return cl.mint(ctx, rf) }},
		{use: "attenuate REF", short: "REF with more caveats (no key needed)",
			args:  exactArgs(1, "attenuate needs exactly one REF"),
			flags: rf.caveatFlag,
			run:   func(ctx context.Context, args []string) error { return cl.attenuate(ctx, rf, args) }},
		{use: "noise [SERVICE]", aliases: []string{"noise-key"}, short: "a NoiseServiceSpec with its key pair, for <bind <noise {…}> …>",
			long: "noise prints a NoiseServiceSpec dictionary, ready for <bind <noise SPEC> …>. With --phrase or --hex the\n" +
				"secret key is the BLAKE2s-256 hash of the text as typed (as syndicate-macaroon noise); otherwise it is random.",
			args: maxArgs(1, "noise takes at most one SERVICE"),
			flags: func(fs *pflag.FlagSet) {
				fs.StringVar(&rf.service, "service", "", "the service `VALUE` clients name")
				fs.StringVar(&rf.phrase, "phrase", "", "derive the key from `TEXT`")
				fs.StringVar(&rf.hexKey, "hex", "", "derive the key from `TEXT` (hashed as typed)")
				fs.BoolVar(&rf.random, "random", false, "a random key (the default)")
				fs.StringVar(&rf.protocol, "protocol", "", "the Noise `PROTOCOL` name, if not the default")
			},
			run: func(ctx context.Context, args []string) error { return cl.noise(ctx, rf, args) }},
	}
}

// uiCommand is `ui`.
func (cl *cli) uiCommand() command {
	var ui uiOpts
	return command{use: "ui", short: "the live view in a browser: services, a service's log, the boot, the dataspace",
		long: "ui serves a page on loopback that follows the server live, bridged to this command's connection\n" +
			"(the server gains no listener). It prints the page's URL, which carries a random token.",
		args: maxArgs(0, "ui takes no arguments"),
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&ui.listen, "listen", "127.0.0.1:0", "serve the page on `HOST:PORT` (loopback only; port 0 picks a free one)")
			fs.BoolVar(&ui.open, "open", false, "open the page in a browser (xdg-open)")
			fs.BoolVar(&ui.noOpen, "no-open", false, "do not open a browser (the default)")
		},
		run: func(ctx context.Context, args []string) error { return cl.ui(ctx, ui) }}
}

// benchCommand is `bench` with its three workloads.
func (cl *cli) benchCommand() command {
	var o bench.Options
	var jsonF, quiet bool
	common := func(fs *pflag.FlagSet) {
		fs.IntVar(&o.Size, "size", 16, "payload `BYTES` per message")
		fs.BoolVar(&jsonF, "json", false, "print the result as one JSON object")
		fs.BoolVar(&quiet, "quiet", false, "no live progress on stderr")
	}
	// workload is the subcommand of one workload, named once.
	workload := func(name, short string, flags func(fs *pflag.FlagSet)) command {
		return command{use: name, short: short,
			args: maxArgs(0, "bench "+name+" takes no arguments"),
			flags: func(fs *pflag.FlagSet) {
				common(fs)
				flags(fs)
			},
			run: func(ctx context.Context, _ []string) error { return cl.bench(ctx, name, o, jsonF, quiet) }}
	}
	return command{use: "bench", short: "measure the server: msg/s and MB/s, round-trip latency, memory per session",
		args: subcommand("bench needs a workload: pubsub, reqrep or idle"),
		sub: []command{
			workload("pubsub", "publishers and subscribers: messages and bytes per second, delivery latency", func(fs *pflag.FlagSet) {
				fs.IntVar(&o.Pubs, "pub", 1, "publisher sessions")
				fs.IntVar(&o.Subs, "sub", 1, "subscriber sessions")
				fs.IntVar(&o.PerTurn, "per-turn", 1, "messages each publisher sends per turn")
				fs.DurationVar(&o.Duration, "duration", 5*time.Second, "publishing time")
				fs.Int64Var(&o.Credit, "credit", 8192, "a publisher's account limit (events plus KiB queued) before it waits")
			}),
			workload("reqrep", "request and reply through a responder: round trips per second, latency", func(fs *pflag.FlagSet) {
				fs.IntVarP(&o.N, "n", "n", 20000, "measured round trips")
				fs.IntVar(&o.Warmup, "warmup", 2000, "unmeasured round trips first")
			}),
			workload("idle", "idle sessions: the server's memory per session", func(fs *pflag.FlagSet) {
				fs.IntVar(&o.Sessions, "sessions", 1000, "idle sessions to open")
				fs.DurationVar(&o.Settle, "settle", 2*time.Second, "wait after opening before reading the server's memory")
				fs.IntVar(&o.ServerPID, "server-pid", 0, "the server's `PID`, if it cannot be found from the connection")
			}),
		}}
}

// cobra makes the cobra command of a row (and its subcommands).
func (c command) cobra(cl *cli) *cobra.Command {
	cc := &cobra.Command{Use: c.use, Aliases: c.aliases, Short: c.short, Long: c.long, Args: c.args}
	if c.services {
		cc.ValidArgsFunction = cl.completeServices
	}
	if c.flags != nil {
		c.flags(cc.Flags())
	}
	if c.run != nil {
		cc.RunE = func(cmd *cobra.Command, args []string) error {
			if err := c.run(cmd.Context(), args); err != nil {
				return &runError{err}
			}
			return nil
		}
	}
	for _, s := range c.sub {
		cc.AddCommand(s.cobra(cl))
	}
	if len(c.sub) > 0 && c.run == nil {
		// An unknown or missing subcommand is a usage error (the
		// argument rule says which), not a help page with status 0.
		cc.RunE = func(*cobra.Command, []string) error { return nil }
	}
	return cc
}

// maxArgs, exactArgs and minArgs check the number of arguments, with msg
// as the usage error.
func maxArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return usagef("%s", msg)
		}
		return nil
	}
}

func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s", msg)
		}
		return nil
	}
}

func minArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s", msg)
		}
		return nil
	}
}

// subcommand is the argument rule of a command that only groups others:
// reaching it at all means the subcommand is missing or unknown.
func subcommand(msg string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("%s: unknown subcommand %q (%s)", cmd.Name(), args[0], subNames(cmd))
		}
		return usagef("%s", msg)
	}
}

func subNames(cmd *cobra.Command) string {
	var names string
	for i, s := range cmd.Commands() {
		if i > 0 {
			names += ", "
		}
		names += s.Name()
	}
	return names
}

func (o *refOpts) oidFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.oid, "oid", "", "the oid `VALUE` the ref names (Preserves text)")
}

func (o *refOpts) keyFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.phrase, "phrase", "", "the key: the UTF-8 bytes of `TEXT`")
	fs.StringVar(&o.hexKey, "hex", "", "the key: hex `DIGITS` (whitespace ignored)")
}

func (o *refOpts) caveatFlag(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.caveats, "caveat", nil, "a caveat `C` to add (Preserves text); repeatable")
}

func (o *analyzeOpts) allFlag(fs *pflag.FlagSet) {
	fs.BoolVarP(&o.all, "all", "a", false, "include the built-in services")
}
