package relay

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// readLoop is the reader goroutine: it frames and decodes packets and
// handles each in one turn of the relay facet.
func (c *Conn) readLoop(ctx context.Context) error {
	defer c.taskDone()
	// The writer closes the stream when the facet ends, however it ends;
	// the reader, a linked task, ends after it.
	stop := context.AfterFunc(ctx, c.stopWriting)
	defer func() {
		if stop() { // not cancelled: this connection is over all the same
			c.stopWriting()
		}
		<-c.wdone
	}()
	f := newFramer(c.opts.MaxPacketSize, c.opts.MaxDepth, c.opts.MaxPacketValues)
	f.budget = c.opts.BufferBudget
	defer f.close()
	var evBuf []Event
	credit := c.opts.Credit
	pt := c.packetTimer()
	defer pt.stop()
	f.onWait = pt.hold
	// wait is flow control (§9): no reading while what the peer sent
	// earlier is still being handled downstream. A packet that arrives
	// late because we stopped reading is not the peer's fault: its timer
	// is held meanwhile.
	wait := func() error {
		if c.acct.Debt() <= credit {
			return nil
		}
		pt.hold()
		return c.acct.Wait(ctx, credit)
	}
	var first *time.Timer
	if d := c.opts.FirstEventTimeout; d > 0 {
		first = time.AfterFunc(d, func() {
			c.limitClose(protoErr(-1, ErrLimit, nil, "no event within %v of connecting", d))
		})
		defer first.Stop()
	}
	for {
		if wait() != nil {
			return ctx.Err()
		}
		n, rerr := f.readFrom(ctx, c.r)
		if n > 0 {
			for {
				raw, syn, off, err := f.next()
				if err == nil && raw == nil {
					break
				}
				var pkt Packet
				if evs, ok := fastTurnIf(evBuf[:0], raw, syn, c.opts.MaxDepth, c.opts.MaxPacketSize); ok && err == nil {
					pkt = Packet{Kind: TurnPacket, Events: evs}
					evBuf = evs
				} else if err == nil {
					var v preserves.Value
					v, err = decodePacket(raw, syn, off, c.opts.MaxDepth, c.opts.MaxPacketSize)
					if err == nil {
						pkt, err = ParsePacket(v)
						var pe *ProtocolError
						if errors.As(err, &pe) {
							pe.Offset = off
						}
					}
				}
				if err != nil {
					c.fr.Activate(func(t *dataspace.Turn) error {
						c.stopIn(t, err, true)
						return nil
					})
					return dataspace.ErrKeepFacet
				}
				if wait() != nil {
					return ctx.Err()
				}
				if first != nil && pkt.Kind == TurnPacket && len(pkt.Events) > 0 {
					first.Stop()
					first = nil
				}
				cost := eventCost(len(raw), pkt)
				alive := c.fr.ActivateAccount(c.acct, func(t *dataspace.Turn) error {
					t.SetEventCost(cost)
					c.handle(t, pkt, syn, off)
					return nil
				})
				// The events are not retained past their turn: reuse the
				// slice, without pinning the values.
				clear(evBuf)
				if cap(evBuf) > 4096 {
					evBuf = nil
				}
				if !alive || ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
		pt.track(f)
		if rerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var err error
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			} else if f.pending() {
				c.log.Debug().Msg("relay: input ended inside a packet")
			}
			c.fr.Activate(func(t *dataspace.Turn) error {
				c.stopIn(t, err, false)
				return nil
			})
			return dataspace.ErrKeepFacet
		}
	}
}

// eventCost is what each event a packet causes costs the connection's
// account: one unit, plus one per KiB of the packet per event, so that
// large messages are charged by size wherever they wait downstream.
func eventCost(size int, pkt Packet) int64 {
	return 1 + int64(size>>10)/int64(max(len(pkt.Events), 1))
}

// limitClose ends the connection from a timer: err becomes the
// connection's error, and closing the stream makes the reader stop the
// relay facet.
func (c *Conn) limitClose(err error) {
	c.setErr(err)
	c.closeStream()
}

// packetTimer enforces PacketTimeout: it runs from the first byte of a
// partial packet until the packet is complete. The reader re-arms it only
// when a different packet is pending, so a steady stream of complete
// packets costs no timer operations.
type packetTimer struct {
	c       *Conn
	d       time.Duration
	tm      *time.Timer
	pending atomic.Int64 // stream offset+1 of the partial packet timed, 0: none
}

func (c *Conn) packetTimer() *packetTimer {
	return &packetTimer{c: c, d: c.opts.PacketTimeout}
}

func (p *packetTimer) track(f *framer) {
	if p.d <= 0 {
		return
	}
	var off int64
	if f.pending() {
		off = f.base + int64(f.start) + 1
	}
	if p.pending.Load() == off {
		return
	}
	p.pending.Store(off)
	if off == 0 {
		p.tm.Stop()
		return
	}
	if p.tm == nil {
		p.tm = time.AfterFunc(p.d, p.fire)
	} else {
		p.tm.Reset(p.d)
	}
}

func (p *packetTimer) fire() {
	if off := p.pending.Load(); off != 0 {
		p.c.limitClose(protoErr(off-1, ErrLimit, nil, "packet incomplete after %v", p.d))
	}
}

// hold stops timing the pending packet: the relay is about to stop
// reading for its own reasons (flow control, the buffer budget). The next
// track after the wait times the packet afresh.
func (p *packetTimer) hold() {
	if p.pending.Swap(0) != 0 {
		p.tm.Stop()
	}
}

func (p *packetTimer) stop() {
	p.pending.Store(0)
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
		c.log.Debug().Str("packet", preserves.Show(pkt.Detail)).Msg("relay: ignoring extension packet")
	case NopPacket:
	}
}

func (c *Conn) handleEvent(t *dataspace.Turn, ev *Event) error {
	target := c.exported.byOid[ev.Oid]
	if target == nil {
		if ev.Oid >= c.nextOid || ev.Oid < 0 {
			return protoErr(-1, ErrProtocol, nil, "event for oid %d, never issued", ev.Oid)
		}
		c.log.Debug().Int64("oid", ev.Oid).Msg("relay: event for a released oid ignored")
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
