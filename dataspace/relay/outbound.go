package relay

import (
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// proxy is the local stand-in for one of the peer's exported objects. It
// lives in the relay facet; events to it become TurnEvents.
type proxy struct {
	c   *Conn
	oid int64
	sym *symbol
}

func (p *proxy) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	c := p.c
	if c.stopped {
		return nil
	}
	wv, pins, err := c.encodeValue(v, nil)
	if err != nil {
		c.release(pins)
		c.log.Warn().Err(err).Msg("relay: assertion not sent")
		return nil
	}
	if c.live(p.sym) {
		p.sym.count++
		pins = append(pins, p.sym)
	} else {
		// The peer has released this oid and will ignore the event: it
		// takes no pins there, so none are kept here (§15.6).
		c.release(pins)
		pins = nil
	}
	// Wire handles are allocated per connection rather than reusing the
	// process-wide local handle (the peer treats them as opaque): the
	// byte stream of a session is then deterministic, and the numbers
	// stay small.
	wh := c.nextWireHandle
	c.nextWireHandle++
	c.outbound[h] = outRec{wire: wh, pins: pins}
	c.queue(t, Event{Oid: p.oid, Kind: EvAssert, Value: wv, Handle: wh})
	return nil
}

func (p *proxy) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	c := p.c
	if c.stopped {
		return nil
	}
	o, ok := c.outbound[h]
	if !ok {
		return nil
	}
	delete(c.outbound, h)
	c.queue(t, Event{Oid: p.oid, Kind: EvRetract, Handle: o.wire})
	c.release(o.pins)
	return nil
}

func (p *proxy) Message(t *dataspace.Turn, v preserves.Value) error {
	c := p.c
	if c.stopped {
		return nil
	}
	if c.queuePlainMessage(t, p.oid, v) {
		return nil
	}
	wv, pins, err := c.encodeValue(v, nil)
	if err != nil {
		c.release(pins)
		c.log.Warn().Err(err).Msg("relay: message not sent")
		return nil
	}
	c.queue(t, Event{Oid: p.oid, Kind: EvMessage, Value: wv})
	if c.release(pins) {
		// Transient-reference rule, sender side (§15.5).
		c.stopIn(t, ErrTransient, true)
	}
	return nil
}

// Sync across the wire, outbound (§15.8): a one-shot local entity K is
// exported fresh and sent as the peer; the target proxy is pinned until K
// fires.
func (p *proxy) Sync(t *dataspace.Turn, peer *dataspace.Ref) error {
	c := p.c
	if c.stopped {
		return nil
	}
	k := &syncOut{c: c, peer: peer}
	kref := t.Create(k)
	w, ks := c.encodeRef(kref)
	k.pins = []*symbol{ks}
	if c.live(p.sym) {
		p.sym.count++
		k.pins = append(k.pins, p.sym)
	}
	c.queue(t, Event{Oid: p.oid, Kind: EvSync, Value: w})
	return nil
}

type syncOut struct {
	dataspace.BaseEntity
	c    *Conn
	peer *dataspace.Ref
	pins []*symbol
}

func (k *syncOut) Message(t *dataspace.Turn, _ preserves.Value) error {
	if k.pins == nil {
		return nil
	}
	k.c.release(k.pins)
	k.pins = nil
	t.Message(k.peer, preserves.Bool(true))
	return nil
}

// queue adds a TurnEvent to the packet this turn will send, scheduling the
// flush once per turn (§15.6: one Turn packet per relay turn).
func (c *Conn) queue(t *dataspace.Turn, ev Event) {
	n := len(c.pending)
	if c.pendingN == 0 {
		if c.syntax == Text {
			c.pending = append(c.pending[:0], '[')
		} else {
			c.pending = append(c.pending[:0], preserves.TagSequence)
		}
		n = len(c.pending)
	} else if c.syntax == Text {
		c.pending = append(c.pending, ' ')
	}
	out, err := appendEvent(c.pending, &ev, c.syntax)
	if err != nil {
		c.pending = c.pending[:n]
		c.log.Error().Err(err).Msg("relay: cannot encode event")
		return
	}
	c.pending = out
	c.queued(t)
}

// queued counts an event appended to the pending packet and schedules the
// flush once per turn.
func (c *Conn) queued(t *dataspace.Turn) {
	c.pendingN++
	if !c.flushQueued {
		c.flushQueued = true
		t.PreCommit(c.flushFn)
	}
}

// queuePlainMessage is proxy.Message's fast path on a binary connection
// for a message without embedded references (so without membrane work):
// one walk encodes it straight into the pending packet, where the general
// path walks it once to look for references and again to encode it. The
// bytes are the same. It reports false, having queued nothing, for any
// other message.
func (c *Conn) queuePlainMessage(t *dataspace.Turn, oid int64, v preserves.Value) bool {
	if c.syntax != Binary {
		return false
	}
	buf := c.pending
	if c.pendingN == 0 {
		buf = append(buf[:0], preserves.TagSequence)
	}
	buf = append(buf, preserves.TagSequence)
	buf = preserves.AppendBinaryInt(buf, oid)
	buf = append(buf, binLabel[EvMessage]...)
	buf, ok := appendSimple(buf, v, 0, true)
	if !ok {
		return false // nothing queued: c.pending keeps its length and events
	}
	c.pending = append(buf, preserves.TagEnd, preserves.TagEnd)
	c.queued(t)
	return true
}

func (c *Conn) flush(t *dataspace.Turn) error {
	c.flushQueued = false
	if c.pendingN == 0 {
		return nil
	}
	if c.syntax == Text {
		c.pending = append(c.pending, ']', '\n')
	} else {
		c.pending = append(c.pending, preserves.TagEnd)
	}
	ok := c.enqueueRaw(c.pending, false, t.Account(), outputCost(c.pendingN, len(c.pending)))
	c.pendingN = 0
	c.pending = c.pending[:0]
	if cap(c.pending) > 1<<20 {
		c.pending = nil
	}
	if !ok && !c.stopped {
		c.stopIn(t, fmt.Errorf("%w (%d bytes)", ErrOutboundFull, c.opts.MaxOutbound), false)
	}
	return nil
}
