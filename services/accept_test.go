package services

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// fakeListener fails Accept with errs, in order, then accepts.
type fakeListener struct {
	net.Listener
	errs []error
	conn net.Conn
}

func (l *fakeListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	return l.conn, nil
}

// EMFILE and ENFILE from accept are waited out, never returned: the
// listener keeps its port (issue 12: the listener crashed and its port was
// refused for 10 s).
func TestAcceptRetriesDescriptorExhaustion(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	enfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}
	ln := &fakeListener{errs: []error{emfile, emfile, enfile, emfile}, conn: a}
	logs := &testutil.Buffer{}
	c, err := Accept(context.Background(), ln, zerolog.New(logs))
	if err != nil || c != a {
		t.Fatalf("Accept = %v, %v", c, err)
	}
	if !logs.Has("retrying with back-off") || !logs.Has("accepting connections again") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// Other errors end the accept loop; so does the context while waiting.
func TestAcceptReturnsPermanentErrors(t *testing.T) {
	ln := &fakeListener{errs: []error{net.ErrClosed}}
	if _, err := Accept(context.Background(), ln, zerolog.Nop()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ln = &fakeListener{errs: []error{syscall.EMFILE, syscall.EMFILE}}
	if _, err := Accept(ctx, ln, zerolog.Nop()); !errors.Is(err, syscall.EMFILE) && !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
