package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/trace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/validate"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/config"
	"github.com/syndicate-go/syndicate/services/daemon"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/ledger"
	"github.com/syndicate-go/syndicate/services/debt"
	"github.com/syndicate-go/syndicate/services/logger"
)

// shutdownGrace bounds an orderly shutdown beyond the daemons' own stop
// timeouts: after it, the server exits anyway.
const shutdownGrace = 30 * time.Second

// newLogger builds the diagnostic logger: console lines on a terminal, JSON
// otherwise, at the level from --log-level or $SYNDICATE_LOG. Console lines
// are coloured only on a terminal and never when $NO_COLOR is set, so a
// forced console format writes no escape sequences into files.
func newLogger(o *options, stderr io.Writer) (zerolog.Logger, error) {
	level := zerolog.InfoLevel
	name := o.logLevel
	if name == "" {
		name = os.Getenv("SYNDICATE_LOG")
	}
	if name != "" {
		l, err := zerolog.ParseLevel(name)
		if err != nil || l == zerolog.NoLevel {
			return zerolog.Logger{}, fmt.Errorf("log level %q is not one of trace, debug, info, warn, error", name)
		}
		level = l
	}
	var w io.Writer = stderr
	if logFormat(o, stderr) == "console" {
		w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: "15:04:05.000", NoColor: !logger.UseColor(stderr)}
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	// Durations carry their unit ("took":"313ms"), whatever the field.
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// showBanner says whether to print the banner: unless --no-banner or
// --inferior (as the reference), and only when stderr is a terminal and
// the log is in the console format. A deviation from the reference, which
// prints it whenever not suppressed: on a pipe or in a file it would break
// a JSON log (`2>&1 | jq`) and tells no one anything.
func showBanner(o *options, stderr io.Writer) bool {
	return !o.noBanner && !o.inferior && logger.IsTerminal(stderr) && logFormat(o, stderr) == "console"
}

// logFormat is --log-format, or console on a terminal and json otherwise.
func logFormat(o *options, stderr io.Writer) string {
	if o.logFormat != "" {
		return o.logFormat
	}
	if logger.IsTerminal(stderr) {
		return "console"
	}
	return "json"
}

// loggerOptions says where service output goes (issue 15): stderr in the
// diagnostic log's format unless --service-output=false, and --log-dir.
func (s *server) loggerOptions(stderr io.Writer) logger.Options {
	o := s.opts
	lo := logger.Options{Dir: o.logDir, FileSize: o.logFileSize, FileCount: o.logFileCount, Sink: s.sink}
	if o.serviceOutput && stderr != nil {
		lo.Console = stderr
		lo.JSON = logFormat(o, stderr) == "json"
		lo.Color = !lo.JSON && logger.UseColor(stderr)
	}
	return lo
}

// runCheck compiles every script under the -c paths and the named files
// without running anything, printing each error as file:line:col: message.
func runCheck(o *options, stdout, stderr io.Writer) int {
	if len(o.configs)+len(o.checkFiles) == 0 {
		fmt.Fprintln(stderr, "syndicate-server: --check needs -c PATH or file arguments")
		return 2
	}
	// The -c paths are what the server would load with the primordial
	// environment; the file arguments are lone files, or fragments that
	// a checked config watcher loads (script/validate, env.go).
	tree := validate.Tree{Roots: o.configs, Files: o.checkFiles}
	failed, err := validate.ReportTree(stdout, stderr, "syndicate-server", tree)
	if err != nil {
		fmt.Fprintln(stdout, err.Error())
	}
	if failed {
		return 1
	}
	return 0 // warnings only, or nothing
}

// server is one running instance: the actor system, the top-level actor
// and the way out (a signal or $control).
type server struct {
	opts *options
	log  zerolog.Logger
	// sink writes service output; runServer makes it before the actor
	// system and closes it after, so that it outlives every daemon (nil
	// in tests: the logger makes its own).
	sink   *logger.Sink
	stdout io.Writer
	stderr io.Writer
	sys    *dataspace.System
	top    *dataspace.Actor

	// Set by the boot turn, which then closes booted; read only after that.
	booted   chan struct{}
	cfg      *dataspace.Ref
	topFacet dataspace.FacetRef
	env      services.Env // the primordial environment

	// cgroups gives each daemon a cgroup (nil: process groups only).
	cgroups *cgroup.Manager
	// record lists the daemons' processes for a next server (nil: none);
	// leftovers are what this one stopped of a dead server's (leftovers.go).
	record    *ledger.Ledger
	leftovers []ledger.Found
	// daemonDryRun starts no daemon process, whatever the options (the
	// hostile-vocabulary harness).
	daemonDryRun bool
	// extraBuiltins are run after the server's own (tests).
	extraBuiltins []builtin
	// superviseOpts shortens the built-in services' restart delays in
	// tests; the zero value is the spec's timing.
	superviseOpts services.SuperviseOptions

	exitOnce sync.Once
	exitCode chan int // receives the requested status once
}

func newServer(o *options, log zerolog.Logger, stdout io.Writer) *server {
	return &server{opts: o, log: log, stdout: stdout, exitCode: make(chan int, 1), booted: make(chan struct{})}
}

// start creates the actor system and boots the top-level actor; signals,
// the reaper and the way out are runServer's (tests run servers in-process).
func (s *server) start(sysOpts dataspace.Options) {
	s.sys = dataspace.NewSystem(sysOpts)
	s.top = s.sys.Spawn("syndicate-server", s.boot)
}

func runServer(o *options, stdout, stderr io.Writer) int {
	// Catch signals first, so that a SIGTERM arriving during start-up is an
	// orderly shutdown too.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A write to a closed stderr must not kill the server (as PID 1, the
	// machine): with SIGPIPE notified, such writes fail with EPIPE
	// instead. Notified rather than ignored, so daemons still start with
	// the default disposition.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	log, err := newLogger(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "syndicate-server: %v\n", err)
		return 2
	}
	defer catchPID1Signals(log, os.Getpid() == 1)()
	lock, ok := lockInstance(o, log)
	if !ok {
		return 1
	}
	defer lock.Release()
	record, leftovers := recoverLeftovers(lock, log)
	if showBanner(o, stderr) {
		printBanner(stderr)
	}
	sysOpts := dataspace.Options{Logger: log}
	if o.traceFile != "" {
		// Best-effort diagnostics (services spec §1.6): failing to create
		// the file is fatal, anything later is only logged.
		tw, err := trace.NewFileWriter(o.traceFile, trace.Options{Logger: log})
		if err != nil {
			fmt.Fprintf(stderr, "syndicate-server: trace file: %v\n", err)
			return 1
		}
		// Deferred here, so it runs after the Shutdown below: the stop
		// records of every actor are written before the file is closed.
		defer func() {
			if err := tw.Close(); err != nil {
				log.Warn().Err(err).Str("path", o.traceFile).Msg("trace file")
			}
		}()
		sysOpts.Trace = tw // only a non-nil *Writer: a typed nil would not be a nil Tracer
	}

	// As PID 1 we reap adopted orphans anyway; otherwise become a
	// subreaper so that grandchildren of daemons are ours to reap too.
	if os.Getpid() != 1 {
		if err := daemon.BecomeSubreaper(); err != nil {
			log.Debug().Err(err).Msg("could not become a child subreaper")
		}
	}
	stopReaper := daemon.StartReaper(log)
	defer stopReaper()
	defer startMemoryReturner(log)()
	_, stopPacer := startGCPacer(gcHeadroom)
	defer stopPacer()

	s := newServer(o, log, stdout)
	s.stderr = stderr // service output (logger options)
	s.record, s.leftovers = record, leftovers
	sink, err := logger.NewSink(s.loggerOptions(stderr), log)
	if err != nil {
		fmt.Fprintf(stderr, "syndicate-server: %v\n", err)
		return 2
	}
	// Closed after the system's Shutdown (deferred before it runs): the
	// daemons' last words are written.
	defer sink.Close()
	s.sink = sink
	if !o.dryRun {
		// Closed after the Shutdown below, once every daemon is gone.
		s.cgroups = openCgroups(log)
		defer closeCgroups(log, s.cgroups)
	}
	s.start(sysOpts)

	code := s.wait(sigs)
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := s.sys.Shutdown(ctx); err != nil {
		log.Error().Err(err).Msg("shutdown did not finish in time")
		if code == 0 {
			code = 1
		}
		// The record stays: the next server stops what is left.
	} else if err := record.Close(); err != nil {
		log.Warn().Err(err).Msg("removing the record of the daemons")
	}
	return code
}

// wait runs the server until a signal other than SIGHUP (which rescans
// the configuration), an exit request or the end of the top-level actor,
// and returns the exit code so far.
func (s *server) wait(sigs <-chan os.Signal) int {
	code := 0
	for running := true; running; {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				select {
				case <-s.booted:
				default:
					continue // still starting: the initial scan is about to happen anyway
				}
				s.log.Info().Msg("SIGHUP: rescanning config directories")
				s.topFacet.ActivateNow(func(t *dataspace.Turn) error {
					t.Message(s.cfg, config.RescanMessage())
					return nil
				})
				continue
			}
			s.log.Info().Str("signal", sig.String()).Msg("shutting down")
			running = false
		case code = <-s.exitCode:
			running = false
		case <-s.top.Done():
			if err := s.top.Err(); err != nil {
				s.log.Error().Err(err).Msg("top-level actor failed")
				code = 1
			}
			running = false
		}
	}
	return code
}

// boot is the top-level actor's first turn (services spec §1.2 step 4).
//
// The top-level actor holds only what must outlive every service: the
// primordial dataspaces, the stable capabilities of the primordial
// gatekeeper and `$control` (forwarders to the actors that implement
// them), the supervisors of the built-in services and the run-service
// requests of the command line. Every built-in service runs in worker
// actors of its own (see builtins), so nothing a script or a peer sends
// is handled here, and a crash in one service is contained in its actor.
func (s *server) boot(t *dataspace.Turn) error {
	o := s.opts
	cfg := t.Create(dataspace.NewDataspace())
	logds := t.Create(dataspace.NewDataspace())
	s.cfg, s.topFacet = cfg, t.FacetRef()
	env := services.Env{Config: cfg, Log: logds, Logger: s.log}
	if s.sink != nil {
		env.LogLate = s.sink.Late
		env.LogDirect = s.sink
	}
	// Scripts reach the log through a forwarder that holds their lines
	// until the logger listens (services.Env.LogListening).
	scriptLogTarget, logListening := services.NewForwarder(t)
	env.LogListening = logListening
	defer func() { s.env = env }()
	var wiring primordial
	env.Gatekeeper, wiring.gatekeeper = services.NewForwarder(t)
	if o.control {
		env.Control, wiring.control = services.NewForwarder(t)
	}
	bs := s.builtins(wiring)
	for _, b := range bs {
		services.RunBuiltin(t, env, b.name, b.boot, s.superviseOpts)
	}
	s.announceWhenReady(t, cfg, bs)

	// §1.1: the debt reporter first, then ports, sockets, configs.
	if o.debtReporter {
		t.Assert(cfg, services.RunService(debt.ServiceName(1.0)))
	}
	s.requestListeners(t, env)
	if o.inferior && !o.dryRun {
		s.spawnParent(t, env)
	}
	// Scripts hold a $log that marks their lines as theirs (issue 22).
	scriptLog := services.NewScriptLog(t, scriptLogTarget)
	for _, path := range o.configs {
		name := preserves.Rec("config-watcher", preserves.String(path), primordialEnv(env, scriptLog))
		t.Assert(cfg, services.RunService(name))
	}
	// The server runs until told otherwise, even with nothing to do.
	t.PreventInertCheck()
	t.PreCommit(func(*dataspace.Turn) error {
		close(s.booted)
		return nil
	})
	return nil
}

// announceWhenReady logs "server running" once every built-in service has
// booted for the first time (so the admin socket and the services are
// there when the line appears).
func (s *server) announceWhenReady(t *dataspace.Turn, cfg *dataspace.Ref, bs []builtin) {
	waiting := make(map[preserves.Symbol]bool, len(bs))
	for _, b := range bs {
		waiting[preserves.Symbol(b.name)] = true
	}
	announced := false
	p := pattern.Rec(service.LabelServiceState, pattern.Rec(services.LabelBuiltin, pattern.Capture()), pattern.MustLift(services.StateReady))
	t.During(cfg, p, func(t *dataspace.Turn, caps []preserves.Value) error {
		// Only our own builtins count: anyone may assert a state.
		if name, ok := preserves.Unwrap(caps[0]).(preserves.Symbol); ok {
			delete(waiting, name)
		}
		if len(waiting) == 0 && !announced {
			announced = true
			s.log.Info().Int("pid", os.Getpid()).Strs("config", s.opts.configs).Msg("server running")
		}
		return nil
	})
}

// primordialEnv is the environment dictionary of services spec §1.3, with
// scriptLog, which marks lines as a script's, as $log.
func primordialEnv(env services.Env, scriptLog *dataspace.Ref) preserves.Value {
	kvs := []preserves.Value{preserves.Symbol("config"), dataspace.Embed(env.Config), preserves.Symbol("log"), dataspace.Embed(scriptLog)}
	if env.Gatekeeper != nil {
		kvs = append(kvs, preserves.Symbol("gatekeeper"), dataspace.Embed(env.Gatekeeper))
	}
	if env.Control != nil {
		kvs = append(kvs, preserves.Symbol("control"), dataspace.Embed(env.Control))
	}
	return preserves.Dict(kvs...)
}

func (s *server) requestExit(code int) {
	s.exitOnce.Do(func() { s.exitCode <- code })
}

func printBanner(w io.Writer) {
	fmt.Fprint(w, "  ____                 _ _           _\n"+
		" / ___| _   _ _ __   __| (_) ___ __ _| |_ ___\n"+
		" \\___ \\| | | | '_ \\ / _` | |/ __/ _` | __/ _ \\\n"+
		"  ___) | |_| | | | | (_| | | (_| (_| | ||  __/\n"+
		" |____/ \\__, |_| |_|\\__,_|_|\\___\\__,_|\\__\\___|\n"+
		"        |___/   syndicate-go server\n"+
		" docs: https://syndicate-lang.org/\n")
}

// bootAdmin opens the admin socket (operator issue): a Unix socket, mode
// 0600, whose oid 0 is the config dataspace, for the `syndicate` client. An
// explicitly named path that cannot be used ends the server; the default
// path is best-effort (the server still runs without it).
func (s *server) bootAdmin(t *dataspace.Turn, env services.Env) error {
	o := s.opts
	path := o.adminSocket
	if path == "" {
		path = admin.DefaultPath()
	}
	if err := admin.Listen(t, env, path); err != nil {
		if o.adminSocket != "" {
			s.log.Error().Err(err).Str("path", path).Msg("admin socket")
			s.requestExit(1)
			return nil
		}
		s.log.Warn().Err(err).Str("path", path).Msg("admin socket not available")
	}
	// admin.Listen logs "admin socket listening" itself.
	return nil
}

// openCgroups finds the server's cgroups and makes the daemons' parent
// (package cgroup: the server moves itself into a leaf when v2 has
// controllers to hand to the daemons). What is missing is said once,
// here; without any hierarchy daemons are held by process groups.
func openCgroups(log zerolog.Logger) *cgroup.Manager {
	m, err := cgroup.Open(cgroup.Options{MoveSelf: true})
	if err != nil {
		log.Warn().Err(err).Msg("no cgroups: a daemon's stop reaches its process group only")
		return nil
	}
	for _, n := range m.Notes() {
		log.Warn().Msg(n)
	}
	return m
}

func closeCgroups(log zerolog.Logger, m *cgroup.Manager) {
	if m == nil {
		return
	}
	if err := m.Close(); err != nil {
		log.Warn().Err(err).Msg("cgroups left behind")
	}
}
