package relay

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/idleread"
	"github.com/syndicate-go/syndicate/preserves"
)

// readLoop is the reader task: it reads, frames (framer), decodes
// (reader.decode) and handles each packet in one turn of the relay facet
// (reader.deliver), pausing for flow control (reader.wait). With nothing
// pending and nothing to read it parks the stream (reader.park) and gives
// up its goroutine; resume runs it again, on a new one, when input
// arrives or the stream is closed.
func (c *Conn) readLoop(ctx context.Context, resume func()) error {
	r := c.rd
	if r == nil {
		r = c.newReader(ctx)
		c.rd = r
		// The writer closes the stream when the facet ends, however it
		// ends; the reader, a linked task, ends after it.
		r.stop = context.AfterFunc(ctx, c.stopWriting)
	}
	err := r.loop(resume)
	if errors.Is(err, dataspace.ErrSuspended) {
		return err
	}
	r.close()
	if r.stop() { // not cancelled: this connection is over all the same
		c.stopWriting()
	}
	<-c.wdone
	c.taskDone()
	return err
}

func (r *reader) loop(resume func()) error {
	c := r.c
	for {
		if r.wait() != nil {
			return r.ctx.Err()
		}
		r.pt.arm()
		n, rerr := r.f.readFrom(r.ctx, c.r)
		r.pt.hold()
		if rerr == errWouldBlock {
			if r.park(resume) {
				return dataspace.ErrSuspended
			}
			continue // read the plain way from now on
		}
		if n > 0 {
			if err := r.drain(); err != nil {
				return err
			}
		}
		r.pt.track(r.f)
		if rerr != nil {
			return r.end(rerr)
		}
		if n > 0 && r.f.idle && !r.f.pending() && r.fresh < freshWaits {
			// Handling input ran turns, which grew this goroutine's
			// stack to several kilobytes; the wait for the next input
			// goes on on a fresh goroutine, whose stack is the small
			// one a wait needs (issue 28, memory per idle session).
			// Only for a connection's first few exchanges (a handshake,
			// a resolve), after which many connections idle: each
			// respawn costs a thread wake-up, measured at 20 µs of a
			// request/reply round trip's p50 when done on every one.
			r.fresh++
			resume()
			return dataspace.ErrSuspended
		}
	}
}

// park registers the idle stream with the shared poller (idleread.Waiter),
// to be resumed when input arrives or closeStream unparks it. False: the
// stream cannot be parked (or is closed), and the framer waits for input
// in its reads instead.
func (r *reader) park(resume func()) bool {
	c := r.c
	w := c.parker.Load()
	if w == nil {
		w = idleread.NewWaiter(r.f.idleRC)
		c.parker.Store(w)
	}
	r.f.idleRC = nil
	if err := w.Park(resume); err != nil {
		// Waits stay in the runtime's poller from now on; the sweeper
		// need not watch them.
		r.f.idle = false
		r.f.idler.Close()
		r.f.idler = nil
		return false
	}
	return true
}

// reader is the reader goroutine's state.
type reader struct {
	c     *Conn
	ctx   context.Context
	f     *framer
	pt    *packetTimer
	first *time.Timer  // FirstEventTimeout, until the first event
	evBuf []Event      // the gathered packets' events (fast path), reused
	pend  []pendPacket // the packets gathered for the next turn
	cost  int64        // their events' cost (eventCost)
	// burst: the packets of one read run their turns through one
	// runner, which wakes the writers they fed once, at its End.
	burst dataspace.Burst
	stop  func() bool // stops the context's AfterFunc (readLoop)
	fresh int         // waits moved to a fresh goroutine (freshWaits)
}

// freshWaits is how many times a reader moves its wait for input to a
// fresh goroutine (loop): enough for a connection's opening exchanges.
const freshWaits = 8

func (c *Conn) newReader(ctx context.Context) *reader {
	r := &reader{c: c, ctx: ctx, pt: c.packetTimer()}
	r.f = newFramer(c.opts.MaxPacketSize, c.opts.MaxDepth, c.opts.MaxPacketValues)
	r.f.budget = c.opts.BufferBudget
	r.f.onWait, r.f.onResume = r.pt.hold, r.pt.arm
	r.f.idle = true
	if d := c.opts.FirstEventTimeout; d > 0 {
		r.first = time.AfterFunc(d, func() {
			c.limitClose(protoErr(-1, ErrLimit, nil, "no event within %v of connecting", d))
		})
	}
	return r
}

func (r *reader) close() {
	if r.first != nil {
		r.first.Stop()
	}
	r.pt.stop()
	r.f.close()
}

// wait is flow control (§9): no reading while what the peer sent earlier
// is still being handled downstream. A packet that arrives late because
// we stopped reading is not the peer's fault: its timer is held
// meanwhile.
func (r *reader) wait() error {
	credit := r.c.opts.Credit
	if r.c.acct.Debt() <= credit {
		return nil
	}
	r.burst.End() // the writers it holds back may be what repays the debt
	r.pt.hold()
	return r.c.acct.Wait(r.ctx, credit)
}

// drain handles every complete packet buffered. A run of consecutive
// packets of one read that carry only messages is handled in one turn of
// the relay facet (gather), so that the dataspace and the subscribers'
// relays take them as one batch each: one turn per read instead of three
// per packet (issue 28; docs/protocol.md, "Messages of one read: one
// turn"). Any other packet is a turn of its own, as runtime spec §15.7
// says. A non-nil error ends the reader (the facet is being stopped or
// the context ended).
func (r *reader) drain() error {
	c := r.c
	defer r.burst.End()
	for {
		more, err := r.gather()
		if len(r.pend) > 0 {
			if r.wait() != nil {
				r.forget()
				return r.ctx.Err()
			}
			if !r.deliver() || r.ctx.Err() != nil {
				return r.ctx.Err()
			}
		}
		if err != nil {
			c.fr.ActivateNow(func(t *dataspace.Turn) error {
				c.stopIn(t, err, true)
				return nil
			})
			return dataspace.ErrKeepFacet
		}
		if !more {
			return nil
		}
	}
}

// A turn takes at most mergeBytes of packets, or mergeEvents events: a
// large read becomes several turns, so that decoded values wait for their
// turn in bounded numbers and flow control (wait) looks at the account
// between them.
const (
	mergeBytes  = 64 << 10
	mergeEvents = 1024
)

// pendPacket is a decoded packet waiting for its turn (gather).
type pendPacket struct {
	pkt      Packet
	syn      Syntax
	off      int64
	from, to int // its events in evBuf, for a fast-path Turn packet
	fast     bool
}

// gather decodes the buffered packets of the next turn into r.pend: one
// packet, or as many consecutive packets of messages only (mergeable) as
// the merge limits allow, all of one event cost (so that the turn's
// SetEventCost charges each event what its own packet costs). more is
// false once the buffer holds no complete packet; err is a decoding or
// framing error, which ends the connection after the packets before it
// are handled.
func (r *reader) gather() (more bool, err error) {
	var bytes, events int
	opts := r.c.opts
	var bd *preserves.BatchDecoder // the binary payloads' decoder (fastTurnAt)
	defer func() {
		if bd != nil {
			bd.Reset(nil, preserves.DecodeOptions{})
			batchDecoders.Put(bd)
		}
	}()
	for bytes < mergeBytes && events < mergeEvents && len(r.pend) < mergeEvents {
		raw, syn, off, err := r.f.next()
		if err != nil {
			return false, err
		}
		if raw == nil {
			return false, nil
		}
		n0 := len(r.evBuf)
		p := pendPacket{syn: syn, off: off, from: n0}
		if syn == Binary {
			if bd == nil {
				bd = batchDecoders.Get().(*preserves.BatchDecoder)
				bd.Reset(r.f.buf, turnDecodeOptions(opts.MaxDepth, opts.MaxPacketSize))
			}
			var evs []Event
			if evs, p.fast = fastTurnAt(bd, r.evBuf, r.f.buf, r.f.last, r.f.last+len(raw), opts.MaxDepth); p.fast {
				r.evBuf, p.to = evs, len(evs)
				p.pkt.Kind = TurnPacket
			}
		}
		evn := p.to - p.from
		if !p.fast {
			if p.pkt, err = r.decode(raw, syn, off); err != nil {
				return false, err
			}
			evn = len(p.pkt.Events)
		}
		cost := eventCost(len(raw), evn)
		merge := p.mergeable(r.evBuf)
		if len(r.pend) > 0 && (!merge || cost != r.cost) {
			// It starts the next turn: read it again then.
			clear(r.evBuf[n0:])
			r.evBuf = r.evBuf[:n0]
			r.f.unread(raw)
			return true, nil
		}
		r.cost = cost
		r.pend = append(r.pend, p)
		if !merge {
			return true, nil // a turn of its own
		}
		bytes += len(raw)
		events += evn
	}
	return true, nil
}

// mergeable reports whether p may share a turn with the packets around
// it: it carries messages only (or nothing the turn acts on: Nop,
// Extension). Assertions, retractions and syncs keep a turn per packet,
// so that the state a peer's turn leaves is seen by local observers as
// the reference shows it.
func (p *pendPacket) mergeable(evBuf []Event) bool {
	evs := p.pkt.Events
	if p.fast {
		evs = evBuf[p.from:p.to]
	}
	switch p.pkt.Kind {
	case NopPacket, ExtensionPacket:
		return true
	case TurnPacket:
		for i := range evs {
			if evs[i].Kind != EvMessage {
				return false
			}
		}
		return true
	}
	return false
}

// decode takes one packet apart by the general decoder, which is
// authoritative for errors (gather tries the fast path first).
func (r *reader) decode(raw []byte, syn Syntax, off int64) (Packet, error) {
	c := r.c
	v, err := decodePacket(raw, syn, off, c.opts.MaxDepth, c.opts.MaxPacketSize)
	if err != nil {
		return Packet{}, err
	}
	pkt, err := ParsePacket(v)
	var pe *ProtocolError
	if errors.As(err, &pe) {
		pe.Offset = off
	}
	return pkt, err
}

// deliver handles the gathered packets in one turn of the relay facet on
// the connection's account; false once the facet is gone.
func (r *reader) deliver() bool {
	c := r.c
	for i := range r.pend {
		p := &r.pend[i]
		if p.fast {
			p.pkt.Events = r.evBuf[p.from:p.to:p.to]
		}
		if r.first != nil && p.pkt.Kind == TurnPacket && len(p.pkt.Events) > 0 {
			r.first.Stop()
			r.first = nil
		}
	}
	cost := r.cost
	alive := r.burst.ActivateAccount(c.fr, c.acct, func(t *dataspace.Turn) error {
		t.SetEventCost(cost)
		for i := range r.pend {
			p := &r.pend[i]
			c.handle(t, p.pkt, p.syn, p.off)
		}
		return nil
	})
	r.forget()
	return alive
}

// forget drops the gathered packets. Their events are not retained past
// their turn: the slices are reused, without pinning the values.
func (r *reader) forget() {
	clear(r.pend)
	r.pend = r.pend[:0]
	clear(r.evBuf)
	r.evBuf = r.evBuf[:0]
	if cap(r.evBuf) > 4096 {
		r.evBuf = nil
	}
}

// end stops the relay facet once reading failed: cleanly at EOF, else
// with the read error.
func (r *reader) end(rerr error) error {
	c := r.c
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	var err error
	if !errors.Is(rerr, io.EOF) {
		err = rerr
	} else if r.f.pending() {
		c.logger().Debug().Msg("relay: input ended inside a packet")
	}
	c.fr.ActivateNow(func(t *dataspace.Turn) error {
		c.stopIn(t, err, false)
		return nil
	})
	return dataspace.ErrKeepFacet
}

// eventCost is what each of the events of a packet of size bytes costs
// the connection's account: one unit, plus one per KiB of the packet per
// event, so that large messages are charged by size wherever they wait
// downstream.
func eventCost(size, events int) int64 {
	return 1 + int64(size>>10)/int64(max(events, 1))
}

// limitClose ends the connection from a timer: err becomes the
// connection's error, and closing the stream makes the reader stop the
// relay facet.
func (c *Conn) limitClose(err error) {
	c.setErr(err)
	c.closeStream()
}

// packetTimer enforces PacketTimeout. It counts the time the reader
// spends waiting for the rest of a partial packet, from its first byte to
// its last, and only that: while the relay handles the packets before it,
// waits for flow control or for the buffer budget, the clock is paused,
// since none of that is the peer's delay. (It once ran from the packet's
// first byte whatever the reader did, so a reader busy with the packets
// of one large read, or starved of CPU on a loaded machine, cut off a
// peer that had sent everything.) A peer trickling a packet still runs
// out of time: the waits add up. The timer is touched only around reads
// that wait for a partial packet, so a stream of whole packets costs none.
type packetTimer struct {
	c     *Conn
	d     time.Duration
	tm    *time.Timer
	off   int64         // stream offset+1 of the partial packet timed, 0: none
	left  time.Duration // what remains of its time
	since time.Time     // when the current wait began (armed)
	armed atomic.Int64  // off while a wait is being timed, 0 otherwise
}

func (c *Conn) packetTimer() *packetTimer {
	return &packetTimer{c: c, d: c.opts.PacketTimeout}
}

// track notes which packet is partial after the reader handled what it
// read: a different one gets the whole PacketTimeout.
func (p *packetTimer) track(f *framer) {
	if p.d <= 0 {
		return
	}
	var off int64
	if f.pending() {
		off = f.base + int64(f.start) + 1
	}
	if off != p.off {
		p.off, p.left = off, p.d
	}
}

// arm starts timing the wait for input about to begin, if a packet is
// partial.
func (p *packetTimer) arm() {
	if p.off == 0 || p.d <= 0 {
		return
	}
	p.since = time.Now()
	p.armed.Store(p.off)
	if p.tm == nil {
		p.tm = time.AfterFunc(max(p.left, 0), p.fire)
	} else {
		p.tm.Reset(max(p.left, 0))
	}
}

// hold pauses the clock: the wait for input is over, or the relay is
// about to stop reading for its own reasons (flow control, the buffer
// budget).
func (p *packetTimer) hold() {
	if p.armed.Swap(0) != 0 {
		p.tm.Stop()
		p.left -= time.Since(p.since)
	}
}

func (p *packetTimer) fire() {
	if off := p.armed.Load(); off != 0 {
		p.c.limitClose(protoErr(off-1, ErrLimit, nil, "packet incomplete after %v", p.d))
	}
}

func (p *packetTimer) stop() {
	p.armed.Store(0)
	if p.tm != nil {
		p.tm.Stop()
	}
}

// handle processes one inbound packet in one turn (§15.7).
func (c *Conn) handle(t *dataspace.Turn, pkt Packet, syn Syntax, off int64) {
	if c.stopped {
		return
	}
	c.syntax = syn
	switch pkt.Kind {
	case TurnPacket:
		for i := range pkt.Events {
			if err := c.handleEvent(t, &pkt.Events[i]); err != nil {
				var pe *ProtocolError
				if errors.As(err, &pe) && pe.Offset < 0 {
					pe.Offset = off
				}
				c.stopIn(t, err, true)
				return
			}
		}
	case ErrorPacket:
		err := &PeerError{Message: pkt.Msg, Detail: preserves.Show(pkt.Detail)}
		c.stopIn(t, err, true)
	case ExtensionPacket:
		c.logger().Debug().Str("packet", preserves.Show(pkt.Detail)).Msg("relay: ignoring extension packet")
	case NopPacket:
	}
}

func (c *Conn) handleEvent(t *dataspace.Turn, ev *Event) error {
	target := c.exported.byOid[ev.Oid]
	if target == nil {
		if ev.Oid >= c.nextOid || ev.Oid < 0 {
			return protoErr(-1, ErrProtocol, nil, "event for oid %d, never issued", ev.Oid)
		}
		c.logger().Debug().Int64("oid", ev.Oid).Msg("relay: event for a released oid ignored")
		return nil
	}
	switch ev.Kind {
	case EvAssert:
		if _, dup := c.inbound[ev.Handle]; dup {
			return protoErr(-1, ErrProtocol, nil, "duplicate remote handle %d", ev.Handle)
		}
		v, pins, err := c.decodeValue(t, ev.Value, nil)
		if err != nil {
			return err
		}
		h := t.Assert(target.ref, v)
		if h == 0 {
			c.release(pins) // rejected by attenuation
			return nil
		}
		target.count++
		initial := ev.Oid == 0 && c.opts.InitialRef != nil
		if initial {
			if q := c.opts.InitialQuota; q != nil {
				if !q.take() {
					// Not counted: the connection ends, retracting it.
					c.inbound[ev.Handle] = inRec{local: h, pins: append(pins, target)}
					return protoErr(-1, ErrLimit, nil, "the server holds %d assertions at the initial object from all connections; no more", q.limit)
				}
				c.quotaHeld.Add(1)
			}
			c.initialAsserts++
		}
		c.inbound[ev.Handle] = inRec{local: h, pins: append(pins, target), initial: initial}
		if m := c.opts.MaxInitialAssertions; initial && m > 0 && c.initialAsserts > m {
			return protoErr(-1, ErrLimit, nil, "more than %d assertions at the initial object", m)
		}
	case EvRetract:
		rec, ok := c.inbound[ev.Handle]
		if !ok {
			return nil // e.g. after an attenuation rejection
		}
		delete(c.inbound, ev.Handle)
		if rec.initial {
			c.initialAsserts--
			if q := c.opts.InitialQuota; q != nil {
				c.quotaHeld.Add(-1)
				q.give(1)
			}
		}
		t.Retract(rec.local)
		c.release(rec.pins)
	case EvMessage:
		v, pins, err := c.decodeValue(t, ev.Value, nil)
		if err != nil {
			return err
		}
		for _, s := range pins {
			if s.count == 1 {
				c.release(pins)
				return protoErr(-1, ErrProtocol, nil, "cannot receive transient reference")
			}
		}
		t.Message(target.ref, v)
		c.release(pins)
	case EvSync:
		e, _ := preserves.Unwrap(ev.Value).(*preserves.Embedded)
		w, ok := e.Payload.(preserves.Value)
		if !ok {
			return protoErr(-1, ErrProtocol, nil, "sync peer is not a WireRef")
		}
		peer, ps, err := c.decodeRef(t, w)
		if err != nil {
			return err
		}
		target.count++
		k := t.Create(&syncIn{c: c, peer: peer, pins: []*symbol{target, ps}})
		t.SyncPeer(target.ref, k)
	}
	return nil
}

// syncIn answers an inbound Sync once the local target has synced: the
// reply goes to the peer's continuation, and the pins are dropped.
type syncIn struct {
	dataspace.BaseEntity
	c    *Conn
	peer *dataspace.Ref
	pins []*symbol
}

func (k *syncIn) Message(t *dataspace.Turn, _ preserves.Value) error {
	if k.pins == nil || k.c.stopped {
		return nil
	}
	t.Message(k.peer, preserves.Bool(true))
	k.c.release(k.pins)
	k.pins = nil
	return nil
}
