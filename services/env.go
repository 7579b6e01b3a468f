package services

import (
	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// Env is what every service's Boot receives: the server's well-known
// dataspaces and entities (services spec §1.3, §1.4) and the logger to use.
type Env struct {
	Config, Log, Gatekeeper, Control *dataspace.Ref
	Logger                           zerolog.Logger
	// LogLate, when set, writes a `<log …>` record straight to the
	// service output's console and files, from any goroutine: for what
	// a service must log while it (or the logger) is already stopping,
	// such as a daemon's last words at shutdown.
	LogLate func(record preserves.Value)
	// LogDirect, when set, takes daemon output to the logger without a
	// message while nobody else observes the log dataspace.
	LogDirect LogDirect
	// LogListening, when set, is the control Ref of the forwarder
	// (NewForwarder) in front of the scripts' `$log`: the logger asserts
	// #:Log there once it listens to Log, so that the lines a script
	// sends while the logger is still booting wait for it instead of
	// reaching a dataspace nobody observes yet.
	LogListening *dataspace.Ref
}

// The `$log` vocabulary (services spec §1.9, §5.6): the message
// `<log "TIMESTAMP" DETAIL>` sent to Env.Log, whose DETAIL dictionary may
// name the line, the service, the process and the stream it came from (a
// daemon's output lines name all four). The reference defines it in no
// schema, so its label and keys live here, once, for the daemon service
// that writes daemon lines, the logger that reads every line and
// `syndicate logs`.
var (
	LabelLog      = preserves.Symbol("log")
	LogKeyLine    = preserves.Symbol("line")
	LogKeyPid     = preserves.Symbol("pid")
	LogKeyService = preserves.Symbol("service")
	LogKeyStream  = preserves.Symbol("stream")
	// StreamStdout and StreamStderr are the values of LogKeyStream: the
	// output pipe of a daemon a line came from.
	StreamStdout = preserves.Symbol("stdout")
	StreamStderr = preserves.Symbol("stderr")
	// LogKeySource says who sent the line (issue 22): SourceDaemon for a
	// daemon's output, SourceServer for the server's lifecycle events of
	// a service, SourceScript for anything sent to the `$log` that
	// scripts hold (ScriptLog sets it, whatever the script said).
	LogKeySource = preserves.Symbol("source")
	SourceDaemon = preserves.Value(preserves.Symbol("daemon"))
	SourceServer = preserves.Value(preserves.Symbol("server"))
	SourceScript = preserves.Value(preserves.Symbol("script"))
)
