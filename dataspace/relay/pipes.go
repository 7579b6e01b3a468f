package relay

import (
	"errors"
	"io"

	"github.com/syndicate-go/syndicate/dataspace"
)

// Pipe-based relays: a Syndicate-protocol daemon's stdin/stdout (services
// spec §5.7: import the child's oid 0, export nothing, TextOutput for
// text/syndicate) and the server's own stdin/stdout under --inferior (§1.5:
// export the config dataspace as oid 0, import nothing).

// pipeCloser closes both halves; either Close unblocks the matching
// goroutine (for os.File pipes from os/exec and os.Pipe, Close interrupts a
// blocked Read or Write).
type pipeCloser struct {
	in  io.Reader
	out io.Writer
}

func (p pipeCloser) Close() error {
	var errs []error
	if c, ok := p.out.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := p.in.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// RunOverPipes runs a relay reading in and writing out in a new child facet
// of the active facet (see Run). Both are closed (if they are io.Closers)
// when the connection ends. For a daemon speaking the protocol on its
// stdio, pass the child's stdout as in, its stdin as out, and
// Options{ImportInitial: true, TextOutput: protocol == text/syndicate}:
// the returned Ref is the child's oid 0, to publish as
// `<service-object <daemon ID> #:Ref>` while the process runs.
func RunOverPipes(t *dataspace.Turn, in io.Reader, out io.Writer, opts Options) (*Conn, *dataspace.Ref) {
	return RunSplit(t, in, out, pipeCloser{in, out}, opts)
}

// SpawnOverPipes is RunOverPipes in a new top-level actor of sys, waiting
// for it to boot; the server's --inferior mode uses it with os.Stdin,
// os.Stdout and Options{InitialRef: config}, naming the actor "parent",
// and logs "disconnect" once Done is closed (the server keeps running,
// Q1).
func SpawnOverPipes(sys *dataspace.System, name string, in io.Reader, out io.Writer, opts Options) (*Conn, *dataspace.Ref, error) {
	type res struct {
		c    *Conn
		peer *dataspace.Ref
	}
	ch := make(chan res, 1)
	a := sys.Spawn(name, func(t *dataspace.Turn) error {
		c, peer := RunOverPipes(t, in, out, opts)
		ch <- res{c, peer}
		return nil
	})
	select {
	case r := <-ch:
		return r.c, r.peer, nil
	case <-a.Done():
		select {
		case r := <-ch:
			return r.c, r.peer, nil
		default:
		}
		_ = pipeCloser{in, out}.Close()
		return nil, nil, ErrClosed
	}
}
