package relay

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

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
	if f, ok := in.(*os.File); ok && f.SetReadDeadline(time.Time{}) != nil {
		// A blocking descriptor (a terminal, or stdin inherited in
		// blocking mode): Close cannot interrupt its Read, so the read
		// happens on a detached goroutine and the relay's reader can
		// still finish when the connection is closed.
		ar := newAsyncReader(f)
		return RunSplit(t, ar, out, pipeCloser{ar, out}, opts)
	}
	return RunSplit(t, in, out, pipeCloser{in, out}, opts)
}

// asyncReader reads from r on its own goroutine. Close makes Read return
// at once; the goroutine itself ends at r's next read result (for the
// server's stdin: at process exit, EOF or the next input).
type asyncReader struct {
	r       io.Reader
	ch      chan asyncChunk
	done    chan struct{}
	once    sync.Once
	pending []byte
	err     error
}

type asyncChunk struct {
	b   []byte
	err error
}

func newAsyncReader(r io.Reader) *asyncReader {
	a := &asyncReader{r: r, ch: make(chan asyncChunk), done: make(chan struct{})}
	go func() {
		for {
			buf := make([]byte, 16<<10)
			n, err := r.Read(buf)
			select {
			case a.ch <- asyncChunk{buf[:n], err}:
			case <-a.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return a
}

func (a *asyncReader) Read(p []byte) (int, error) {
	for len(a.pending) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		select {
		case c := <-a.ch:
			a.pending, a.err = c.b, c.err
		case <-a.done:
			return 0, io.ErrClosedPipe
		}
	}
	n := copy(p, a.pending)
	a.pending = a.pending[n:]
	return n, nil
}

func (a *asyncReader) Close() error {
	a.once.Do(func() { close(a.done) })
	if c, ok := a.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
