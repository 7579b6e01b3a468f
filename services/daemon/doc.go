// Package daemon is the daemon supervisor of the services spec (§5): it runs
// the processes described by `<daemon ID SPEC>` assertions while
// `<run-service <daemon ID>>` is asserted, and reports
// `<service-state <daemon ID> …>`.
//
// # Layers
//
// The package is split in two layers so that the process layer can be tested
// without an actor runtime:
//
//   - the spec: a DaemonProcessSpec value is parsed into an elaborated
//     [Spec] (§5.2) by externalservices.ParseSpec
//     (dataspace/schemas/externalservices/spec.go, below `script`, so that
//     `--check` runs the same elaboration); spec.go only names its types
//     here. Its errors are *schema.ParseError of two classes
//     ([ErrNotASpec], [ErrInvalidField]) because §5.3 treats them
//     differently; unknown keys are warnings ([Spec].Unknown).
//   - process.go runs one process, a value of type process: its own
//     process group (Setpgid), stdin from /dev/null, stdout/stderr read
//     line by line by two readers (pipes.go), exactly one goroutine
//     calling Wait. Its phases (starting, running, stopping, killed,
//     exited) and the signals each event sends are lifecycle.go's, a plain
//     value tested with a transition table: stopping sends SIGTERM to the
//     group and SIGKILL after the spec's stopTimeout, and nothing is
//     signalled once the child is reaped. The pipes are drained (with a
//     short grace) before the exit is reported, so the tail of the output
//     is never lost (Q8).
//   - clock.go is the package's one time source, [Clock] ([Options.Clock]):
//     every timer and timestamp of the package reads it.
//   - output.go publishes output with back-pressure: the lines of each
//     read of a pipe go to $log as one turn charged to the spec's account,
//     and a pipe is read again only once the log has handled the previous
//     batch, so a daemon printing faster than the log is written blocks on
//     its pipe and the server holds at most two reads of its output.
//   - restart.go is the restart loop of §5.5 ([Runner], [Decide]); delays are exactly the spec's (200 ms after exit 0,
//     1 s after an error).
//   - reaper.go reaps orphans adopted when the server is PID 1 or a
//     subreaper, without stealing our own children's exit statuses.
//   - daemon.go is the dataspace integration: [Boot] observes run-service
//     requests in the config dataspace and runs one worker per daemon.
//   - worker.go holds the daemon's state machines as structs, state in
//     fields and one method per event: daemonRun (one run-service request
//     and its supervisor), worker (one worker actor and its readiness
//     tally) and specRun (one spec and the processes run for it). The
//     readiness counting is a plain value, tally, tested with a
//     transition table.
//   - running.go is the dataspace side of one running process: its process
//     facet holds `<process-status NAME {pid restarts since}>` (our
//     protocol extension: like `<status-text …>`, `<output-request …>` and
//     `<service-output …>` below, defined in
//     dataspace/schemas/syndicateGo.prs and built with the generated
//     syndicatego types) and, for `protocol: application/syndicate` or
//     `text/syndicate`, a relay over the child's stdout/stdin importing
//     its oid 0, published as `<service-object NAME #:C>` (§5.7); stdin is
//     then a pipe instead of /dev/null. It also holds the dry-run runner
//     ([Options.DryRun]: nothing is started, states are reported as if).
//   - readiness.go, readiness_notify.go run a spec's readiness protocol
//     per process (s6 notification fd, sd_notify socket with watchdog,
//     listening check, readyTimeout); a failure stops the process with the
//     reason in [Exit.Failure]. readiness_worker.go turns what the process
//     says into the daemon's states (ready, reloading, stopping) and
//     `<status-text NAME TEXT>`.
//   - status.go is what `syndicate status` learns beyond process-status:
//     each daemon's history (start counts, last exit, the last TailLines
//     output lines, kept where lines leave the pipe) and its
//     `<service-info …>` (services/status.go), plus `<service-output …>`
//     answering `<output-request …>`.
//   - spawn.go explains spawn failures (missing program, not executable,
//     missing dir: fork/exec says ENOENT for two of them) and grows their
//     retry delay up to MaxSpawnDelay; a spawn failure is its own phase
//     (cannot-start) and makes the daemon failed until a spawn succeeds.
//   - stop.go orders stops: a process is signalled only once the running
//     daemons that depend on it have stopped (a Go deviation).
//   - schedule.go runs scheduled one-shots (the spec's `schedule`):
//     [Runner.RunScheduled] waits for each time of the schedule on the
//     wall clock, runs the process once, and skips and counts the times
//     that come while it runs; the plan is a plain value. With a state
//     directory ([Options.StateDir]) it keeps each spec's last run for
//     catchUp. A scheduled spec counts as ready once armed.
//   - sockets.go is socket activation (the spec's `listen` and `start:
//     on-demand`): it binds the sockets in the spec's linked task;
//     sockets_hold.go keeps them in the daemon's facet for the life of
//     the declaration, across process restarts, restart-service and
//     worker crashes; passes them as fds 3… with the
//     sd_listen_fds variables, and gates each start on a pending
//     connection for on-demand specs (Events.Gate).
//   - limits.go applies the optional restart keys (restartDelay,
//     restartMaxDelay, restartLimit, restartWindow) to the decisions of
//     restart.go; without them the reference's delays apply exactly.
//
// # Goroutines
//
// Per running process: one goroutine runs [Runner.Run] (a linked task of the
// spec's facet) and is the only caller of Wait for the child; two read its
// pipes while they have input. A pipe idle for 0.5–1 s is parked with the
// shared poller of dataspace/idleread and its reader's goroutine ends;
// input or the end of input starts a new one (so a quiet daemon's output
// costs no goroutine), and the drain's cut unparks a parked reader, which
// then ends as a cut one does. Stopping is armed with context.AfterFunc and Clock.AfterFunc, so
// it costs no goroutine until it happens. They report to the worker actor
// only by activating its facets, so all dataspace state is owned by the
// actor. Per daemon there is also the worker actor's goroutine
// and the supervisor's task waiting for the worker to exit.
//
// # Stopping and shutdown
//
// Stopping a spec's facet (spec retracted, daemon no longer required,
// restart-service, worker crash) cancels the linked task: once every
// running daemon that depends on it has stopped (stop.go; bounded by their
// stop timeouts), the process group gets SIGTERM, then SIGKILL after
// stopTimeout. Each stop is logged with its duration, the wait for
// dependents and whether SIGKILL was needed. Output is logged from the
// service's own facet, so what a process prints while stopping, and an
// unterminated last line, reach the log. The task returns only once
// the child is reaped and the rest of its group is gone, and the actor
// runtime waits for linked tasks, so System.Shutdown stops every daemon
// before it returns (§5.8, Q9).
package daemon
