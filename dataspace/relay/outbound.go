package relay

import (
	"bytes"
	"errors"
	"fmt"
	"math"

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
	wv, pins, ok := c.encodeOut(v, "assertion")
	if !ok {
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
	if !c.queue(t, Event{Oid: p.oid, Kind: EvAssert, Value: wv, Handle: wh}) {
		c.release(pins) // refused: never sent, so never retracted
		return nil
	}
	c.outbound[h] = outRec{wire: wh, pins: pins}
	return nil
}

// encodeOut encodes v for an event to the peer. A value that cannot go
// (what: "assertion" or "message") is logged and dropped, its pins
// released: the sender's turn goes on.
func (c *Conn) encodeOut(v preserves.Value, what string) (preserves.Value, []*symbol, bool) {
	wv, pins, err := c.encodeValue(v, nil)
	if err != nil {
		c.release(pins)
		c.logger().Warn().Err(err).Msg("relay: " + what + " not sent")
		return nil, nil, false
	}
	return wv, pins, true
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

// ErrTransient: a message tried to send a reference nothing else pins
// (runtime spec §15.5, sender side).
var ErrTransient = errors.New("relay: sent transient reference")

func (p *proxy) Message(t *dataspace.Turn, v preserves.Value) error {
	c := p.c
	if c.stopped {
		return nil
	}
	if c.queuePlainMessage(t, p.oid, v) {
		return nil
	}
	wv, pins, ok := c.encodeOut(v, "message")
	if !ok {
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
// flush once per turn (§15.6: one Turn packet per relay turn, unless the
// turn is too large for one: see fit). It reports false when the event
// was not queued.
func (c *Conn) queue(t *dataspace.Turn, ev Event) bool {
	if c.pendingN == 0 {
		c.pending = c.packetHead(c.pending[:0])
	} else if c.syntax == Text {
		c.pending = append(c.pending, ' ')
	}
	n := len(c.pending)
	out, err := appendEvent(c.pending, &ev, c.syntax)
	if err != nil {
		c.pending = c.trimSep(c.pending[:n])
		c.logger().Error().Err(err).Msg("relay: cannot encode event")
		return false
	}
	c.pending = out
	return c.fit(t, n)
}

// packetHead starts a Turn packet (a sequence) in the output syntax.
func (c *Conn) packetHead(b []byte) []byte {
	if c.syntax == Text {
		return append(b, '[')
	}
	return append(b, preserves.TagSequence)
}

// trimSep drops the separator a text packet's next event would have
// followed.
func (c *Conn) trimSep(b []byte) []byte {
	if c.syntax == Text && len(b) > 1 && b[len(b)-1] == ' ' {
		return b[:len(b)-1]
	}
	return b
}

// packetTail is the most bytes a Turn packet's end adds (text: "]\n").
const packetTail = 2

// fit admits the event just appended to the pending packet at start. An
// event the peer could take in no packet (Options.PeerMaxPacketSize,
// PeerMaxPacketValues) is refused: dropped, counted (Refused) and logged,
// never sent, since the peer would end the connection over it. An event
// that would take the packet past those limits ends the packet, which is
// sent at once, and starts the next: the events of one turn keep their
// order, but a peer may see the first part of a large turn before the
// rest.
func (c *Conn) fit(t *dataspace.Turn, start int) bool {
	if err := c.tooLarge(c.pending[start:]); err != nil {
		c.pending = c.trimSep(c.pending[:start])
		c.refused.Add(1)
		c.logger().Warn().Err(err).Msg("relay: event refused")
		return false
	}
	if c.pendingN > 0 && len(c.pending)+packetTail > c.splitAt() {
		ev := bytes.Clone(c.pending[start:])
		c.pending = c.trimSep(c.pending[:start])
		c.sendPending(t)
		c.pending = append(c.packetHead(c.pending[:0]), ev...)
	}
	c.queued(t)
	return true
}

// splitAt is the most bytes a Turn packet may hold: the peer's size limit,
// and its value limit, since no value takes less than a byte.
func (c *Conn) splitAt() int {
	return min(c.opts.PeerMaxPacketSize, c.opts.PeerMaxPacketValues)
}

// ErrTooLarge: an event was too large for any packet the peer takes
// (Options.PeerMaxPacketSize, PeerMaxPacketValues); it was not sent.
var ErrTooLarge = errors.New("relay: event too large for the peer")

// tooLarge reports an event (its encoded bytes) that no packet within the
// peer's limits can hold.
func (c *Conn) tooLarge(ev []byte) error {
	head := 1 + packetTail
	if len(ev)+head > c.opts.PeerMaxPacketSize {
		return fmt.Errorf("%w: an event of %d bytes; the peer takes packets of at most %d", ErrTooLarge, len(ev), c.opts.PeerMaxPacketSize)
	}
	limit := c.opts.PeerMaxPacketValues - 1 // the packet's sequence is one
	if len(ev) <= limit {
		return nil // no value takes less than a byte
	}
	s := preserves.Scanner{MaxDepth: math.MaxInt, MaxLength: math.MaxInt, MaxValues: limit}
	s.Begin(ev[0])
	if _, _, err := s.Scan(ev, 0); errors.Is(err, preserves.ErrLimit) {
		return fmt.Errorf("%w: an event of more than %d values; the peer takes packets of at most %d", ErrTooLarge, limit, c.opts.PeerMaxPacketValues)
	}
	return nil
}

// Refused returns how many events the connection refused to send because
// the peer's packet limits could not hold them (see Options.PeerMaxPacketSize).
func (c *Conn) Refused() int64 { return c.refused.Load() }

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
	n := len(buf)
	buf = append(buf, preserves.TagSequence)
	buf = preserves.AppendBinaryInt(buf, oid)
	buf = append(buf, binLabel[EvMessage]...)
	buf, ok := appendSimple(buf, v, 0, true)
	if !ok {
		return false // nothing queued: c.pending keeps its length and events
	}
	c.pending = append(buf, preserves.TagEnd, preserves.TagEnd)
	c.fit(t, n)
	return true
}

func (c *Conn) flush(t *dataspace.Turn) error {
	c.flushQueued = false
	if c.pendingN > 0 {
		c.sendPending(t)
	}
	return nil
}

// ErrOutboundFull: more than Options.MaxOutbound bytes were queued for
// the peer (only producers outside flow control can get there).
var ErrOutboundFull = errors.New("relay: output queue for the peer is full")

// sendPending ends the pending packet and hands it to the writer.
func (c *Conn) sendPending(t *dataspace.Turn) {
	if c.syntax == Text {
		c.pending = append(c.pending, ']', '\n')
	} else {
		c.pending = append(c.pending, preserves.TagEnd)
	}
	ok := c.enqueueRaw(t, c.pending, false, outputCost(c.pendingN, len(c.pending)))
	c.pendingN = 0
	c.pending = c.pending[:0]
	if cap(c.pending) > 1<<20 {
		c.pending = nil
	}
	if !ok && !c.stopped {
		c.stopIn(t, fmt.Errorf("%w (%d bytes)", ErrOutboundFull, c.opts.MaxOutbound), false)
	}
}
