package main

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/rs/zerolog"
)

// Signals (issue 22). The server's table:
//
//	signal            as PID 1                       otherwise
//	TERM, INT         orderly shutdown, exit 0       the same
//	HUP               rescan the config directories  the same
//	PIPE              ignored (writes fail, EPIPE)   the same
//	QUIT              goroutine dump to the log,     Go's default: dump to
//	                  go on                          stderr, exit 2
//	ILL TRAP ABRT BUS logged, go on                  Go's default: dump to
//	FPE SEGV STKFLT                                  stderr, exit 2 (a
//	SYS                                              supervisor's ABRT still
//	                                                 ends us, as systemd's
//	                                                 watchdog expects)
//	TSTP TTIN TTOU    logged, go on (never stopped)  Go's default: stopped
//	USR1 USR2 ALRM    logged, go on                  ignored (Go's default)
//	XCPU XFSZ VTALRM
//	IO PWR, RT 35–64
//	KILL, STOP        cannot be caught               the same
//	CHLD              reaps (services/daemon)        the same
//	CONT URG WINCH    ignored (default)              the same
//	PROF              the Go runtime's profiler      the same
//
// As PID 1 the server is the machine: a signal that ended it would panic
// the kernel (Ctrl-\ on the console sends QUIT), so every signal whose
// default action would end or stop the process is caught and logged. Only
// TERM, INT and `$control ! <exit N>` end it. Outside PID 1 the meanings a
// supervisor above us relies on are kept. The sender's pid is not logged:
// os/signal does not pass siginfo on, and reading it would mean replacing
// the Go runtime's handlers.

// pid1Signals are the signals caught only as PID 1, beside the always
// caught TERM, INT, HUP and PIPE.
func pid1Signals() []os.Signal {
	sigs := []os.Signal{
		syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT,
		syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSTKFLT,
		syscall.SIGSYS, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGXCPU,
		syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR,
	}
	// 32–34 belong to the C library and the Go runtime.
	for n := 35; n <= 64; n++ {
		sigs = append(sigs, syscall.Signal(n))
	}
	return sigs
}

// maxStackDump bounds the goroutine dump SIGQUIT writes to the log.
const maxStackDump = 16 << 20

// catchPID1Signals routes the PID-1-only signals to a goroutine that logs
// them (and dumps the goroutines on QUIT); it returns the function that
// stops it. Outside PID 1 it does nothing.
func catchPID1Signals(log zerolog.Logger, isPID1 bool) (stop func()) {
	if !isPID1 {
		return func() {}
	}
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, pid1Signals()...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				logPID1Signal(log, sig)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

func logPID1Signal(log zerolog.Logger, sig os.Signal) {
	if sig != syscall.SIGQUIT {
		log.Warn().Str("signal", sig.String()).Msg("signal ignored: as PID 1 only TERM and INT end the server")
		return
	}
	log.Warn().Str("signal", sig.String()).Str("goroutines", string(stackDump())).
		Msg("SIGQUIT: goroutine dump (as PID 1 the server goes on)")
}

// stackDump is every goroutine's stack, as the Go runtime prints it on an
// unhandled QUIT, cut at maxStackDump.
func stackDump() []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxStackDump {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
