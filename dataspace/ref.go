package dataspace

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync/atomic"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

// Handle names one outbound assertion. Handles are unique across the whole
// process (a dataspace keys its table by handle, whoever asserted), never
// reused, and never 0: the zero Handle means "no assertion".
type Handle uint64

// FacetID names a facet. Unique within the process, never reused.
type FacetID uint64

// Entity is an object living in one facet of one actor that reacts to
// events. Callbacks run inside a turn of the owning actor, with the entity's
// facet active, one at a time. Returning an error (or panicking) fails the
// turn and crashes the owning actor, and only that actor.
type Entity interface {
	// Assert: a peer placed v; h names it until the matching Retract.
	Assert(t *Turn, v preserves.Value, h Handle) error
	// Retract: the assertion named h is withdrawn. The value is not
	// supplied; an entity that needs it remembers it from Assert.
	Retract(t *Turn, h Handle) error
	// Message: a one-shot message.
	Message(t *Turn, v preserves.Value) error
	// Sync: reply to peer (by convention with the message #t) once every
	// event the syncing actor sent earlier has been handled. Proxies
	// forward it instead.
	Sync(t *Turn, peer *Ref) error
}

// BaseEntity gives an entity no-op defaults for every callback; Sync
// replies #t to the peer at once. Embed it and override what you need.
type BaseEntity struct{}

// Assert does nothing.
func (BaseEntity) Assert(*Turn, preserves.Value, Handle) error { return nil }

// Retract does nothing.
func (BaseEntity) Retract(*Turn, Handle) error { return nil }

// Message does nothing.
func (BaseEntity) Message(*Turn, preserves.Value) error { return nil }

// Sync replies Synced (#t) to peer.
func (BaseEntity) Sync(t *Turn, peer *Ref) error {
	t.Message(peer, preserves.Bool(true))
	return nil
}

// StopHandler is implemented by entities that want to hear when their facet
// stops cleanly. [Turn.Create] registers OnStop as a stop action of the
// facet, so it runs (with the parent facet active) exactly when the facet's
// other stop actions run: never when the actor crashes.
type StopHandler interface {
	OnStop(t *Turn) error
}

// target is an entity placed in a facet: what a Ref points at. Its base
// field is the unattenuated Ref, so creating an entity costs one allocation.
type target struct {
	id     uint64 // process-unique; orders and hashes refs deterministically
	actor  *Actor
	facet  *facet
	entity Entity
	base   Ref
}

var targetIDs atomic.Uint64

// Ref is a capability: a target entity plus an attenuation (a list of
// caveats, oldest first). Refs are immutable and safe to share between
// goroutines. Assert and Message through a Ref rewrite the value with the
// caveats (newest first) in the sender's turn; Sync and Retract do not.
//
// Two Refs are equal (Equal, preserves.Compare on embedded refs, Key) when
// they name the same entity and carry equal caveat lists, whether or not
// they are the same pointer.
type Ref struct {
	tgt     *target
	caveats []caveat.Caveat
	cavKey  string // injective encoding of caveats; "" when there are none
}

// Ref is the capability type embedded in Preserves values and attenuated
// by `<attenuate …>` caveat templates.
var (
	_ preserves.EmbeddedPayload = (*Ref)(nil)
	_ caveat.Attenuable         = (*Ref)(nil)
)

// RefKey is a comparable key with the same equality as Ref, for maps.
type RefKey struct {
	tgt     *target
	caveats string
}

// Key returns the map key of r.
func (r *Ref) Key() RefKey { return RefKey{r.tgt, r.cavKey} }

// Equal reports whether r and o are the same capability.
func (r *Ref) Equal(o *Ref) bool {
	return r == o || (r != nil && o != nil && r.tgt == o.tgt && r.cavKey == o.cavKey)
}

// Entity returns the entity r points at (relays use it to recognise their
// own proxies).
func (r *Ref) Entity() Entity { return r.tgt.entity }

// Actor returns the actor owning r's entity.
func (r *Ref) Actor() *Actor { return r.tgt.actor }

// Caveats returns r's attenuation, oldest first. Do not modify.
func (r *Ref) Caveats() []caveat.Caveat { return r.caveats }

// Unattenuated returns the Ref to the same entity without caveats.
func (r *Ref) Unattenuated() *Ref { return &r.tgt.base }

// Attenuate validates cs and returns a Ref to the same entity whose
// attenuation is r's followed by cs (so cs apply first).
func (r *Ref) Attenuate(cs ...caveat.Caveat) (*Ref, error) {
	if len(cs) == 0 {
		return r, nil
	}
	if err := caveat.Validate(cs); err != nil {
		return nil, err
	}
	all := make([]caveat.Caveat, 0, len(r.caveats)+len(cs))
	all = append(append(all, r.caveats...), cs...)
	return &Ref{tgt: r.tgt, caveats: all, cavKey: caveatKey(all)}, nil
}

// AttenuateCaveats is Attenuate with the signature of caveat.Attenuable, so
// that `<attenuate …>` templates can attenuate embedded Refs.
func (r *Ref) AttenuateCaveats(cs []caveat.Caveat) (any, error) {
	return r.Attenuate(cs...)
}

// CompareEmbedded orders refs by target identity (creation order), then by
// caveats. It implements preserves.EmbeddedPayload.
func (r *Ref) CompareEmbedded(other any) int {
	o := other.(*Ref)
	if c := cmp.Compare(r.tgt.id, o.tgt.id); c != 0 || r.cavKey == o.cavKey {
		return c
	}
	return caveat.Compare(r.caveats, o.caveats)
}

var refSeed = maphash.MakeSeed()

// HashEmbedded implements preserves.EmbeddedPayload consistently with
// CompareEmbedded.
func (r *Ref) HashEmbedded() uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], r.tgt.id)
	var h maphash.Hash
	h.SetSeed(refSeed)
	h.Write(b[:])
	h.WriteString(r.cavKey)
	return h.Sum64()
}

// String renders the ref for logs: actor name, entity id, caveat count.
func (r *Ref) String() string {
	s := "ref<" + r.tgt.actor.name + "/" + strconv.FormatUint(r.tgt.id, 10)
	if len(r.caveats) > 0 {
		s += " +" + strconv.Itoa(len(r.caveats)) + " caveats"
	}
	return s + ">"
}

// Embed wraps r as a Preserves embedded value.
func Embed(r *Ref) preserves.Value { return preserves.NewEmbedded(r) }

// RefOf extracts the Ref from an embedded value (looking through
// annotations).
func RefOf(v preserves.Value) (*Ref, bool) {
	e, ok := preserves.Unwrap(v).(*preserves.Embedded)
	if !ok {
		return nil, false
	}
	r, ok := e.Payload.(*Ref)
	return r, ok && r != nil
}

// caveatKey returns an injective, deterministic encoding of a caveat list,
// used as the comparable part of RefKey. It cannot use the canonical binary
// encoding because caveats may contain embedded refs, which have no binary
// form; embedded refs are written as their target id plus their own key.
func caveatKey(cs []caveat.Caveat) string {
	if len(cs) == 0 {
		return ""
	}
	var b []byte
	b = appendKey(b, caveat.ListToValue(cs))
	return string(b)
}

func appendKey(b []byte, v preserves.Value) []byte {
	v = preserves.Unwrap(v)
	b = append(b, byte(v.Kind()))
	switch x := v.(type) {
	case preserves.Bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case preserves.Double:
		return binary.LittleEndian.AppendUint64(b, x.Bits())
	case preserves.Int:
		return binary.AppendVarint(append(b, 0), int64(x))
	case *preserves.BigInt:
		// Sign and magnitude: decimal would cost seconds for a hostile
		// integer of a million digits.
		n := x.Big()
		return appendStr(append(b, 1, byte(n.Sign()+1)), string(n.Bytes()))
	case preserves.String:
		return appendStr(b, string(x))
	case preserves.ByteString:
		return appendStr(b, string(x))
	case preserves.Symbol:
		return appendStr(b, string(x))
	case *preserves.Record:
		b = binary.AppendUvarint(b, uint64(len(x.Fields)))
		b = appendKey(b, x.Label)
		for _, f := range x.Fields {
			b = appendKey(b, f)
		}
		return b
	case preserves.Sequence:
		return appendKeys(b, x)
	case *preserves.Set:
		return appendKeys(b, x.Elems())
	case *preserves.Dictionary:
		es := x.Entries()
		b = binary.AppendUvarint(b, uint64(len(es)))
		for _, e := range es {
			b = appendKey(appendKey(b, e.Key), e.Value)
		}
		return b
	case *preserves.Embedded:
		switch p := x.Payload.(type) {
		case *Ref:
			b = binary.AppendUvarint(append(b, 'R'), p.tgt.id)
			return appendStr(b, p.cavKey)
		case preserves.Value:
			return appendKey(append(b, 'V'), p)
		default:
			// Opaque payloads are identified by pointer, like
			// preserves.Compare does; stable for the process lifetime.
			return appendStr(append(b, 'P'), fmt.Sprintf("%T/%x", p, preserves.Identity(p)))
		}
	}
	return b
}

func appendKeys(b []byte, vs []preserves.Value) []byte {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = appendKey(b, v)
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
