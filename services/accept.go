package services

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Accept back-off bounds (as net/http's Server.Serve).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Accept returns the next connection from ln. Errors that mean "not now"
// rather than "never" — the process or the system is out of file
// descriptors (EMFILE, ENFILE) or buffers, or a queued connection was
// aborted — are logged and retried after a delay that doubles from 5 ms
// to 1 s, as net/http does, so the listening socket stays open and the
// connections queued on it are served once descriptors are free again.
// Any other error, or ctx ending, is returned.
func Accept(ctx context.Context, ln net.Listener, log zerolog.Logger) (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			if delay > 0 {
				log.Info().Msg("accepting connections again")
			}
			return c, nil
		}
		if ctx.Err() != nil || !TemporaryAcceptError(err) {
			return nil, err
		}
		if delay == 0 {
			delay = acceptBackoffMin
			log.Warn().Err(err).Msg("accept failed; retrying with back-off")
		} else {
			delay = min(2*delay, acceptBackoffMax)
			if delay == acceptBackoffMax {
				log.Debug().Err(err).Msg("accept still failing")
			}
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TemporaryAcceptError reports whether an error from Accept is worth
// retrying: resource exhaustion, an aborted connection, an interruption,
// or a timeout.
func TemporaryAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{
		syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO,
	} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
