// Package relay implements the Syndicate wire protocol (runtime spec §15):
// a relay connects the local actor world to one peer over a byte stream,
// making local objects addressable by the peer and the peer's objects
// usable locally as ordinary Refs. It never opens sockets; it works over an
// io.Reader and an io.Writer (see the client subpackage for dialling).
//
// # Shape
//
// [Run] starts a connection as a child facet of the active facet: the
// relay facet. It holds the membrane (the exported and imported wire-symbol
// tables), the proxies standing for the peer's objects, and every assertion
// made on the peer's behalf, so that stopping the facet — for whatever
// reason: end of input, a protocol error, a local decision — retracts all of
// them. [Spawn] does the same in a fresh top-level actor. Two goroutines
// do the I/O: a reader, a linked task of the relay facet, that frames and
// decodes packets and hands them to turns of the facet
// ([dataspace.FacetRef.Activate]; see Batching), and a writer that writes queued bytes.
// The writer runs only while there is output, lingering 250 ms before it
// ends; its last run writes what is left and closes the stream, and the
// reader waits for that, so the actor still outlives every write. The
// reader (a [dataspace.Turn.ResumableTask]) of a socket or pipe that has
// waited for input for 0.5–1 s parks the stream with the shared poller
// (idleread.Waiter) and ends its goroutine, to be started again when
// input arrives or the stream is closed (closeStream unparks it): an idle
// connection holds no goroutine at all (issue 28, memory per idle
// session). The host actor never crashes
// because of the peer: connection errors stop the relay facet only.
//
// # Batching
//
// Events local actors address to proxies arrive at the host actor as one
// batch per sending turn and are handled in one relay turn. The proxies
// append TurnEvents to a pending list and the first of them schedules a
// pre-commit action that encodes them all as ONE Turn packet (§15.6). The
// writer swaps out everything queued since its last write and writes it in
// one call, so a burst of turns becomes one system call. Inbound, one Turn
// packet is one local turn (§15.7), so its effects on each local actor
// arrive as one batch; and consecutive packets of one read that carry
// only messages share one turn (at most 64 KiB or 1,024 events of one
// event cost), so that a stream of small messages costs the dataspace and
// each subscriber's relay one turn per read rather than one per packet
// (issue 28). The reference handles a whole read in one activation but
// commits after each packet; messages carry no state, so the coarser
// batches lose nothing an observer could rely on, and packets that
// assert, retract or sync keep a turn each (docs/protocol.md, "Messages
// of one read: one turn").
//
// # Flow control
//
// Each connection has a [dataspace.Account] (runtime spec §9). Every
// inbound packet is handled in a turn on it, so the batches it causes, and
// their fan-out, borrow against it until handled; the bytes a relay queues
// for its peer are charged to the account of the turn that queued them
// (one unit per event plus one per KiB) until the writer has written them.
// Events of large packets cost their share of the packet's size
// (dataspace.Turn.SetEventCost), and so does everything they cause
// downstream, so that a slow local actor cannot hoard them either.
// The reader waits before each read and each turn while its account's
// debt exceeds Options.Credit. A fast producer is thereby slowed to the
// pace of the slowest consumer it feeds, and a flood costs the server a
// few MiB per producer instead of everything the consumers have not read.
// Go producers outside the relay get the same from plain
// [dataspace.FacetRef.Activate], which charges the actor's outside account
// and waits while it is past dataspace.ActivateHighWater (the relay's own
// stops use ActivateNow, which never waits), or with an account of their
// own from [dataspace.FacetRef.ActivatePaced]. A peer cut off for not
// reading repays what its queue owed, so it holds producers for at most
// WriteTimeout.
//
// # Framing
//
// Each packet's syntax is detected from its first byte (≥ 0x80: binary,
// else text), and output follows the syntax of the most recent inbound
// packet, starting from Options.TextOutput. Text packets are followed by a
// newline. Packet extents are found by preserves.Scanner, resumable,
// before decoding (framing.go), which lets limits bite early: a packet over
// Options.MaxPacketSize bytes, nested deeper than Options.MaxDepth or
// holding more than Options.MaxPacketValues values is a connection error
// as soon as the limit is passed, before any decoding. Buffers for packets
// still arriving grow geometrically within a BufferBudget shared by the
// process's connections, and a packet must arrive within
// Options.PacketTimeout.
//
// # Membranes and pins
//
// Embedded Refs in outbound values become WireRefs `[0 oid]` (an object
// this side exports) or `[1 oid]` (the peer's own object, when sending a
// proxy back); inbound `[1 oid caveat…]` yields the local Cap attenuated by
// the caveats, so the peer can narrow but never widen what it was given.
// Attenuated proxies are re-exported as fresh local objects, so the local
// attenuation stays in force for the peer's events. Reference counts
// follow §15.5 exactly; oids die when their count reaches zero (the initial
// ref, oid 0, never), events for dead oids are ignored, events for oids
// never issued are protocol errors.
//
// # Deviations from the reference, and why
//
//   - Wire handles are allocated per connection from 0 instead of reusing
//     the process-wide local handle (§15.6): the peer treats them as
//     opaque, and a per-connection counter makes a session's byte stream
//     deterministic (the golden tests depend on it) and keeps varints
//     short.
//   - Outbound Sync is implemented (§15.8, quirk 1) as the spec asks.
//   - Quirks 11 and 12 are not copied: symbols reaching zero leave both
//     indexes, memoised attenuations with them.
//   - Errors caused by the peer stop the relay facet instead of crashing
//     the host actor, so a relay can share an actor with other work (the
//     connection's assertions are retracted either way).
//
// # Hostile input
//
// Malformed packets, unknown-oid events, duplicate remote handles,
// transient references, invalid WireRefs and oversize or overdeep packets
// produce an Error packet (best effort) and close that connection only. A
// peer that reads nothing for Options.WriteTimeout while output waits is
// disconnected with ErrSlowPeer; a slow but steady reader never is. The
// outbound queue is bounded by Options.MaxOutbound (ErrOutboundFull), a
// backstop for producers outside flow control. The final flush on close
// writes whole packets for Options.CloseTimeout, then stops between
// packets, counting what it drops (Conn.Unsent), so a stuck peer cannot
// pin the actor and no peer sees a packet cut short by the clock. For
// untrusted peers, Options.FirstEventTimeout and MaxInitialAssertions bound the time
// to the first event and the assertions held at oid 0 (a gatekeeper's
// resolves). Error messages render peer values with preserves.Show (at
// most preserves.ShowLimit bytes), so a huge value never costs more than a
// short string. docs/limits.md lists every limit with its default.
package relay
