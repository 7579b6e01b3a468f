package relay

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// outputCost is what queued output costs its account until written: one
// unit per event plus one per KiB, so that credit bounds both the number
// of events in flight and the memory they hold.
func outputCost(events, bytes int) int64 { return int64(events) + int64(bytes>>10) }

// loan is debt charged to an account for bytes waiting in the outbound
// queue; the writer repays it once they are written (or dropped).
type loan struct {
	acct *dataspace.Account
	n    int64
}

// kick starts a writer goroutine if there is something to write (or the
// stream to close) and none runs. The writer runs only while it has
// bytes to write: an idle connection holds no writer goroutine and no
// stack (issue 16: memory per idle session).
func (c *Conn) kick() {
	c.mu.Lock()
	start, wake := c.kickLocked()
	c.mu.Unlock()
	c.kicked(start, wake)
}

// kickLocked is kick's decision, taken under c.mu (so that enqueueRaw
// takes the lock once per packet): start a writer, or wake the running one.
func (c *Conn) kickLocked() (start, wake bool) {
	if c.writing {
		return false, true
	}
	start = !c.final && (len(c.out) > 0 || c.closing)
	c.writing = start
	return start, false
}

// kicked carries out kickLocked's decision, after c.mu is released.
func (c *Conn) kicked(start, wake bool) {
	switch {
	case start:
		go c.writeRun()
	case wake:
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// writerLinger is how long an idle writer waits for more output before
// its goroutine ends: long enough that a busy connection does not start
// one per packet (a fresh goroutine also regrows its stack), short enough
// that idle sessions soon hold none.
const writerLinger = 250 * time.Millisecond

// enqueueRaw hands encoded packet bytes to the writer, as enqueueBytes,
// charging cost to t's account (if any) until they are written. The
// writer is woken when the goroutine running t has run the turns handed
// to it (Turn.WakeLater): a reader's whole read, through the dataspace to
// this connection, then costs one wake-up and one write, not one per
// packet.
func (c *Conn) enqueueRaw(t *dataspace.Turn, b []byte, force bool, cost int64) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return true
	}
	if !force && len(c.out) > 0 && len(c.out)+len(b) > c.opts.MaxOutbound {
		c.mu.Unlock()
		return false
	}
	c.out = append(c.out, b...)
	if acct := t.Account(); acct != nil {
		acct.Borrow(cost)
		if n := len(c.loans); n > 0 && c.loans[n-1].acct == acct {
			c.loans[n-1].n += cost
		} else {
			c.loans = append(c.loans, loan{acct, cost})
		}
	}
	if c.wakeDeferred {
		c.mu.Unlock()
		return true
	}
	if t.WakeLater(&c.ww) {
		c.wakeDeferred = true
		c.mu.Unlock()
		return true
	}
	start, wake := c.kickLocked()
	c.mu.Unlock()
	c.kicked(start, wake)
	return true
}

// writerWake is the writer's deferred wake-up (enqueueRaw).
type writerWake struct{ c *Conn }

func (w *writerWake) Wake() {
	c := w.c
	c.mu.Lock()
	c.wakeDeferred = false
	start, wake := c.kickLocked()
	c.mu.Unlock()
	c.kicked(start, wake)
}

// enqueueBytes encodes v in the current output syntax and hands it to the
// writer. It reports false when the bounded outbound buffer overflowed.
// force appends even past the bound (a final Error packet).
func (c *Conn) enqueueBytes(v preserves.Value, force bool) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return true
	}
	n := len(c.out)
	out, err := AppendPacket(c.out, v, c.syntax)
	if err != nil {
		c.mu.Unlock()
		c.logger().Error().Err(err).Msg("relay: cannot encode packet")
		return true
	}
	if !force && len(out) > c.opts.MaxOutbound && n > 0 {
		c.out = out[:n]
		c.mu.Unlock()
		return false
	}
	c.out = out
	c.mu.Unlock()
	c.kick()
	return true
}

// writeRun is a writer goroutine, started by kick: it writes everything
// queued since its last write in one Write call (packets queued by several
// turns go out together, so a burst of turns costs one system call), and
// ends when nothing is left. Once the connection is closing it writes
// what is left, bounded in time, and closes the stream: that final run
// ends the writer's share of the connection (taskDone), and the reader
// waits for it (wdone) so that the actor outlives its last write.
func (c *Conn) writeRun() {
	// A timer, not one per wait: arming a timer on every idle moment
	// costs the hot path more than the whole write (measured).
	c.mu.Lock()
	c.writerGen++
	gen := c.writerGen
	linger := time.AfterFunc(writerLinger, func() { c.lingerCheck(gen) })
	c.lingerT = linger
	c.mu.Unlock()
	defer linger.Stop()
	var spare []byte // the last written buffer, reused for the next output
	var spareLoans []loan
	for {
		c.mu.Lock()
		buf, closing, loans := c.out, c.closing, c.loans
		if len(buf) == 0 && !closing {
			if c.retire {
				c.retire = false
				c.writing = false
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			<-c.wake
			continue
		}
		c.writes++
		c.out, c.loans = spare[:0], spareLoans[:0]
		spare, spareLoans = nil, nil // now owned by c; buf and loans become the next spares
		if closing {
			c.final = true
			c.out, c.loans = nil, nil
		}
		c.mu.Unlock()
		if closing {
			// Final flush, bounded: a peer that does not read cannot
			// hold the goroutine (and so the actor) forever.
			repay(loans)
			c.finalFlush(buf)
			c.closeStream()
			close(c.wdone)
			c.taskDone()
			return
		}
		err := c.write(buf)
		repay(loans)
		if err != nil {
			c.setErr(err) // before closing: the reader then fails too
			c.closeStream()
			c.fr.ActivateNow(func(t *dataspace.Turn) error {
				c.stopIn(t, err, false)
				return nil
			})
		}
		clear(loans)
		spareLoans = loans
		if cap(buf) <= 1<<20 {
			spare = buf
		}
	}
}

// finalBatch is how many bytes of whole packets the final flush writes at
// a time.
const finalBatch = 64 << 10

// finalFlush writes what is left once the connection is closing, in whole
// packets only: for Options.CloseTimeout it writes batches of whole packets,
// each under the WriteTimeout rule (a batch begun is finished if the peer
// reads at all, so no packet is cut short by the clock); after that, or
// after a write fails, it stops between packets. What it could not send is
// counted (Unsent) and logged: a peer never sees a truncated packet
// because the relay gave up on it.
func (c *Conn) finalFlush(buf []byte) {
	deadline := time.Now().Add(c.opts.CloseTimeout)
	for len(buf) > 0 {
		n := 0
		for n < len(buf) && n < finalBatch {
			n += packetLen(buf[n:])
		}
		if time.Now().After(deadline) || c.write(buf[:n]) != nil {
			c.noteUnsent(buf)
			return
		}
		buf = buf[n:]
	}
}

// packetLen returns the length of the first packet queued in b, with the
// newline after a text packet; all of b if it cannot tell.
func packetLen(b []byte) int {
	s := preserves.Scanner{MaxDepth: math.MaxInt, MaxLength: math.MaxInt}
	s.Begin(b[0])
	n, done, err := s.Scan(b, 0)
	if err != nil || !done {
		return len(b)
	}
	for n < len(b) && (b[n] == '\n' || b[n] == ' ') {
		n++
	}
	return n
}

// noteUnsent counts and reports the packets in b, which the connection
// closed without sending.
func (c *Conn) noteUnsent(b []byte) {
	var packets int64
	for rest := b; len(rest) > 0; packets++ {
		rest = rest[packetLen(rest):]
	}
	c.unsentPackets.Add(packets)
	c.unsentBytes.Add(int64(len(b)))
	c.logger().Warn().Err(c.Err()).Int64("packets", packets).Int("bytes", len(b)).Msg("relay: connection closed with output unsent")
}

// Unsent returns what the connection had accepted for its peer but
// closed without sending, in whole packets: none, unless the peer stopped
// reading or the final flush ran out of time (see finalFlush).
func (c *Conn) Unsent() (packets, bytes int64) {
	return c.unsentPackets.Load(), c.unsentBytes.Load()
}

// lingerCheck runs every writerLinger while writer gen runs: if it wrote
// nothing since the last check, it is told to end.
func (c *Conn) lingerCheck(gen uint64) {
	c.mu.Lock()
	if c.writerGen != gen || !c.writing {
		c.mu.Unlock()
		return
	}
	idle := c.writes == c.seenWrites
	c.seenWrites = c.writes
	c.retire = idle
	c.mu.Unlock()
	if idle {
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	}
	c.mu.Lock()
	if c.writerGen == gen && c.writing {
		c.lingerT.Reset(writerLinger)
	}
	c.mu.Unlock()
}

// stopWriting makes the writer write what is left and close the stream
// when the relay's context ends without the facet's stop action having
// run (the actor crashed).
func (c *Conn) stopWriting() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.kick()
}

func repay(loans []loan) {
	for _, l := range loans {
		l.acct.Repay(l.n)
	}
}

// writeChunk is the most the writer hands a stream without a write
// deadline in one call, so that its watchdog sees progress.
const writeChunk = 256 << 10

// write writes buf, disconnecting a peer that reads nothing for
// WriteTimeout: a slow reader is waited for as long as it makes progress.
// Streams with write deadlines (sockets, pipes) report partial progress;
// others are written in chunks, each under a watchdog that closes the
// stream.
func (c *Conn) write(buf []byte) error {
	if !c.probed { // the first write: find out what the stream supports
		c.probed = true
		if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Time{}) == nil {
			c.setDeadline = d.SetWriteDeadline
		}
	}
	if c.setDeadline != nil {
		return c.writeDeadlined(buf)
	}
	for len(buf) > 0 {
		n := min(len(buf), writeChunk)
		var fired atomic.Bool
		tm := time.AfterFunc(c.opts.WriteTimeout, func() { fired.Store(true); c.closeStream() })
		_, err := c.w.Write(buf[:n])
		tm.Stop()
		if fired.Load() {
			return c.slowPeer()
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

// ErrSlowPeer: the peer read nothing for Options.WriteTimeout while
// output waited for it.
var ErrSlowPeer = errors.New("relay: peer is not reading")

func (c *Conn) slowPeer() error {
	return fmt.Errorf("%w: it has read nothing for %v", ErrSlowPeer, c.opts.WriteTimeout)
}

// writeDeadlined is write for streams with write deadlines. Setting a
// deadline costs a runtime timer update, too much for every small write,
// so the deadline is moved only once a quarter of the timeout has passed
// since it was last set. A write that times out sooner than the full
// timeout after it began (its deadline was set earlier) is resumed with a
// fresh deadline, so the peer always gets the whole timeout.
func (c *Conn) writeDeadlined(buf []byte) error {
	timeout := c.opts.WriteTimeout
	begin := time.Now()
	for len(buf) > 0 {
		if now := time.Now(); now.Sub(c.deadlineSet) > timeout/4 {
			if err := c.setDeadline(now.Add(timeout)); err != nil {
				return err
			}
			c.deadlineSet = now
		}
		n, err := c.w.Write(buf)
		buf = buf[n:]
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return err
		case n > 0: // progress: the peer reads, however slowly
			begin, c.deadlineSet = time.Now(), time.Time{}
		case time.Since(begin) < timeout:
			c.deadlineSet = time.Time{}
		default:
			return c.slowPeer()
		}
	}
	return nil
}
