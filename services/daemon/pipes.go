package daemon

import (
	"bytes"
	"context"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/idleread"
)

// pipeReader delivers one output pipe's content line by line until EOF,
// error or a read deadline, always flushing a final partial line. The
// lines of one read go to emit as one batch, sharing one timestamp; the
// next read happens only after emit has returned, so a blocking emit
// stops the reading. The lines are slices of the read buffer, which is
// reused once emit returns: emit keeps neither the batch slice nor the
// lines' texts (it copies what it keeps, once per batch rather than once
// per read and again per line).
//
// A quiet pipe holds no goroutine (issue 28, memory per daemon): the
// reader waits for input in the runtime's poller for one to two
// idleread.LingerTicks, then parks the pipe with the shared poller
// (idleread.Waiter) and its goroutine ends; input, or the end of input
// when the child's group lets go of the pipe (EPOLLHUP), runs the reader
// again on a new goroutine. A busy pipe always has input and never
// parks. done runs once, at the reader's real end, so a WaitGroup
// counting readers counts a parked one as running.
type pipeReader struct {
	ctx    context.Context
	r      io.Reader
	stream Stream
	pid    int
	now    func() time.Time
	emit   func(context.Context, []Line)
	done   func()

	acc   []byte // an unfinished line, assembled across reads
	batch []Line

	// For a pollable file (the pipes are); nil otherwise, and the reader
	// blocks in Read.
	rc     syscall.RawConn
	idler  *idleread.Idler
	waiter *idleread.Waiter
	// parks: false once parking failed (no epoll): waits stay in Read.
	parks bool
}

// newPipeReader prepares a reader of r; start it with start.
func newPipeReader(ctx context.Context, r io.Reader, stream Stream, pid int, now func() time.Time, emit func(context.Context, []Line), done func()) *pipeReader {
	pr := &pipeReader{ctx: ctx, r: r, stream: stream, pid: pid, now: now, emit: emit, done: done}
	sc, ok := r.(syscall.Conn)
	d, dok := r.(idleread.Deadliner)
	if !ok || !dok {
		return pr
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return pr
	}
	pr.rc, pr.idler, pr.waiter, pr.parks = rc, idleread.NewIdler(d), idleread.NewWaiter(rc), true
	return pr
}

// start starts the reader parked: a child has printed nothing yet, and
// most daemons print little, so the reader's first goroutine starts with
// the first input. Otherwise a burst of daemons starting together would
// hold a waiting goroutine per pipe for the linger, a peak of stacks the
// runtime keeps long after they end.
func (pr *pipeReader) start() {
	if pr.rc == nil || !pr.park() {
		go pr.run()
	}
}

// run reads until the end, or until the pipe is parked (then resume
// runs it again).
func (pr *pipeReader) run() {
	for {
		bp, n, err, parked := pr.read()
		if parked {
			return
		}
		if n > 0 {
			pr.split((*bp)[:n])
		}
		if bp != nil {
			readBufPool.Put(bp)
		}
		if err != nil {
			if len(pr.acc) > 0 {
				pr.emit(pr.ctx, []Line{{Stream: pr.stream, Pid: pr.pid, Text: pr.acc, Time: pr.now()}})
			}
			if pr.idler != nil {
				pr.idler.Close()
			}
			pr.done()
			return
		}
	}
}

// split cuts one read's data into lines and emits them as one batch.
func (pr *pipeReader) split(data []byte) {
	ts := pr.now()
	// The batch's lines are slices of the buffer, capacity-limited so
	// that nobody appends into a neighbour.
	batch := pr.batch[:0]
	acc := pr.acc
	for len(data) > 0 {
		// The next piece: up to a newline, cut at maxLine.
		end := len(data)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			end = i + 1
		}
		end = min(end, maxLine-len(acc))
		piece := data[:end:end]
		data = data[end:]
		if piece[end-1] != '\n' && len(acc)+end < maxLine {
			acc = append(acc, piece...) // unfinished: more to come
			continue
		}
		if len(acc) > 0 {
			piece = append(acc, piece...)
			acc = nil
		}
		batch = append(batch, Line{Stream: pr.stream, Pid: pr.pid, Text: piece, Time: ts})
	}
	pr.acc = acc
	if len(batch) > 0 {
		pr.emit(pr.ctx, batch)
	}
	pr.batch = batch
}

// read reads once, into a buffer from readBufPool that the caller
// returns. parked: the pipe was idle and is parked; this goroutine must
// end without touching pr.
func (pr *pipeReader) read() (bp *[]byte, n int, err error, parked bool) {
	switch {
	case pr.rc == nil:
		bp = readBufPool.Get().(*[]byte)
		n, err = pr.r.Read(*bp)
		return bp, n, err, false
	case !pr.parks:
		bp, n, err = idleread.Read(pr.rc, &readBufPool)
		return bp, n, err, false
	}
	pr.idler.Enter()
	bp, n, err = idleread.Read(pr.rc, &readBufPool)
	if !idleread.Lingered(pr.idler.Leave(), err) {
		return bp, n, err, false
	}
	if pr.park() {
		return nil, 0, nil, true
	}
	return pr.read()
}

// park parks the idle pipe; false: it cannot be parked (or is closed),
// and the reader waits in Read from now on.
func (pr *pipeReader) park() bool {
	pr.batch = nil // an idle pipe holds no batch
	idler, waiter := pr.idler, pr.waiter
	if err := waiter.Park(pr.run); err != nil {
		pr.parks = false
		return false
	}
	// pr belongs to the resumed reader from here on. A cut that came
	// before the Park found nothing to unpark: undo the park.
	if idler.WasCut() {
		waiter.Unpark()
	}
	return true
}

// cut ends the reader's patience with a pipe that a straggler holds: its
// reads fail with a deadline in the past from now on, and a parked reader
// runs again to see it (and flush its partial line).
func (pr *pipeReader) cut() {
	if pr.idler == nil {
		if d, ok := pr.r.(idleread.Deadliner); ok {
			_ = d.SetReadDeadline(pastDeadline)
		}
		return
	}
	_ = pr.idler.Cut()
	pr.waiter.Unpark()
}

// readBufPool holds the pipe readers' buffers. A reader borrows one only
// for the read itself, so that the two pipes of a quiet daemon hold no
// buffer while they wait: 32 kB per daemon otherwise (issue 16, memory
// per daemon).
var readBufPool = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}
