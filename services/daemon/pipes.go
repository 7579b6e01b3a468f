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

// readLines delivers r's content line by line until EOF, error or a read
// deadline, always flushing a final partial line. The lines of one read go
// to emit as one batch, sharing one timestamp; the next read happens only
// after emit has returned, so a blocking emit stops the reading. The lines
// are slices of the read buffer, which is reused once emit returns: emit
// keeps neither the batch slice nor the lines' texts (it copies what it
// keeps, once per batch rather than once per read and again per line).
func readLines(ctx context.Context, r io.Reader, stream Stream, pid int, now func() time.Time, emit func(context.Context, []Line)) {
	var acc []byte // an unfinished line, assembled across reads
	var batch []Line
	for {
		bp, n, err := readPooled(r)
		if n > 0 {
			ts := now()
			// The batch's lines are slices of the buffer,
			// capacity-limited so that nobody appends into a neighbour.
			data := (*bp)[:n]
			batch = batch[:0]
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
				batch = append(batch, Line{Stream: stream, Pid: pid, Text: piece, Time: ts})
			}
			if len(batch) > 0 {
				emit(ctx, batch)
			}
		}
		if bp != nil {
			readBufPool.Put(bp)
		}
		if err != nil {
			if len(acc) > 0 {
				emit(ctx, []Line{{Stream: stream, Pid: pid, Text: acc, Time: now()}})
			}
			return
		}
	}
}

// readBufPool holds the pipe readers' buffers. A reader borrows one only
// for the read itself (readPooled), so that the two pipes of a quiet
// daemon hold no buffer while they wait: 32 kB per daemon otherwise
// (issue 16, memory per daemon).
var readBufPool = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}

// readPooled reads once from r into a buffer from readBufPool, which the
// caller returns. On a pollable file (the pipes are) it waits for input
// in the poller holding no buffer; read deadlines still apply.
func readPooled(r io.Reader) (*[]byte, int, error) {
	sc, ok := r.(syscall.Conn)
	if !ok {
		bp := readBufPool.Get().(*[]byte)
		n, err := r.Read(*bp)
		return bp, n, err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	return idleread.Read(rc, &readBufPool)
}
