package relay

// Membranes (runtime spec §15.3–§15.5). Each connection keeps two tables of
// wire symbols, both indexed by oid and by capability:
//
//   - exported: local objects the peer may address, under oids this side
//     allocates from a counter that starts at 0 and never goes back;
//   - imported: proxies (entities in the relay facet) for the peer's
//     exported objects, under the peer's oids.
//
// A symbol's count is the number of live pins (§15.5). Both sides take and
// drop pins at the same points of the packet stream, so they agree on when
// an oid dies without any release message. When a count reaches zero the
// symbol leaves both indexes for good: later events naming its oid are the
// benign race of §15.6 and are ignored.
//
// All of this state is touched only inside turns of the actor hosting the
// relay facet, so it needs no locks.

import (
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

type symbol struct {
	oid      int64
	ref      *dataspace.Ref // exported: the local Cap; imported: the proxy
	count    int
	imported bool
	// exported only: Caps the peer built with `[1 oid caveat…]`, memoised
	// by the canonical encoding of the caveat list, and also indexed in
	// byRef so that sending them back yields `[0 oid]` (quirk 12: they
	// leave the index with the base symbol).
	attenuated map[string]*dataspace.Ref
}

type table struct {
	byOid map[int64]*symbol
	byRef map[dataspace.RefKey]*symbol
}

func newTable() table {
	return table{byOid: make(map[int64]*symbol), byRef: make(map[dataspace.RefKey]*symbol)}
}

// export registers a local Cap under a fresh oid with count 0.
func (c *Conn) export(r *dataspace.Ref) *symbol {
	s := &symbol{oid: c.nextOid, ref: r}
	c.nextOid++
	c.exported.byOid[s.oid] = s
	c.exported.byRef[r.Key()] = s
	return s
}

// importOid returns the imported symbol for the peer's oid, creating its
// proxy in the relay facet (which must be active) if needed.
func (c *Conn) importOid(t *dataspace.Turn, oid int64) *symbol {
	if s := c.imported.byOid[oid]; s != nil {
		return s
	}
	p := &proxy{c: c, oid: oid}
	s := &symbol{oid: oid, ref: t.Create(p), imported: true}
	p.sym = s
	c.imported.byOid[oid] = s
	c.imported.byRef[s.ref.Key()] = s
	return s
}

// release drops one pin from each symbol; symbols reaching zero leave
// their table. It reports whether any symbol died.
func (c *Conn) release(pins []*symbol) (died bool) {
	for _, s := range pins {
		s.count--
		if s.count > 0 {
			continue
		}
		died = true
		tb := &c.exported
		if s.imported {
			tb = &c.imported
		}
		if tb.byOid[s.oid] == s {
			delete(tb.byOid, s.oid)
			delete(tb.byRef, s.ref.Key())
			for _, a := range s.attenuated {
				if tb.byRef[a.Key()] == s {
					delete(tb.byRef, a.Key())
				}
			}
		}
	}
	return died
}

// live reports whether s is still registered.
func (c *Conn) live(s *symbol) bool {
	if s.imported {
		return c.imported.byOid[s.oid] == s
	}
	return c.exported.byOid[s.oid] == s
}

// encodeRef turns a local Cap into a WireRef for the peer, pinning the
// symbol it names (§15.4, outbound).
func (c *Conn) encodeRef(r *dataspace.Ref) (preserves.Value, *symbol) {
	if s := c.exported.byRef[r.Key()]; s != nil {
		s.count++
		return mineRef(s.oid), s
	}
	if p, ok := r.Entity().(*proxy); ok && p.c == c && len(r.Caveats()) == 0 && c.live(p.sym) {
		p.sym.count++
		return yoursRef(p.oid), p.sym
	}
	// A local object not yet exported, or an attenuated proxy (re-exported
	// so that the peer's events pass through the local attenuation).
	s := c.export(r)
	s.count = 1
	return mineRef(s.oid), s
}

// encodeValue replaces every embedded Cap in v by its WireRef, appending
// the pins taken to pins.
func (c *Conn) encodeValue(v preserves.Value, pins []*symbol) (preserves.Value, []*symbol, error) {
	if !preserves.HasEmbedded(v) {
		return v, pins, nil
	}
	var err error
	out := mapEmbedded(v, func(e *preserves.Embedded) preserves.Value {
		r, ok := e.Payload.(*dataspace.Ref)
		if !ok || r == nil {
			if err == nil {
				err = fmt.Errorf("relay: cannot send embedded %T", e.Payload)
			}
			return e
		}
		w, s := c.encodeRef(r)
		pins = append(pins, s)
		return w
	})
	return out, pins, err
}

// decodeRef interprets a WireRef from the peer (§15.4, inbound), pinning
// the symbol it names. Must run with the relay facet active.
func (c *Conn) decodeRef(t *dataspace.Turn, w preserves.Value) (*dataspace.Ref, *symbol, error) {
	seq, ok := preserves.Unwrap(w).(preserves.Sequence)
	if !ok || len(seq) < 2 {
		return nil, nil, protoErr(-1, ErrProtocol, nil, "malformed WireRef %s", preserves.Show(w))
	}
	tag, ok1 := preserves.Unwrap(seq[0]).(preserves.Int)
	oidv, ok2 := preserves.Unwrap(seq[1]).(preserves.Int)
	if !ok1 || !ok2 || oidv < 0 || (tag == 0 && len(seq) != 2) {
		return nil, nil, protoErr(-1, ErrProtocol, nil, "malformed WireRef %s", preserves.Show(w))
	}
	oid := int64(oidv)
	switch tag {
	case 0:
		s := c.importOid(t, oid)
		s.count++
		return s.ref, s, nil
	case 1:
		s := c.exported.byOid[oid]
		if s == nil {
			if oid >= c.nextOid {
				return nil, nil, protoErr(-1, ErrProtocol, nil, "WireRef names oid %d, never exported", oid)
			}
			// Released a moment ago: the reference is dead. Register an
			// inert entity so that the pins balance as on the peer's side.
			s = &symbol{oid: oid, ref: t.Create(inert{})}
			c.exported.byOid[oid] = s
			c.exported.byRef[s.ref.Key()] = s
		}
		s.count++
		if len(seq) == 2 {
			return s.ref, s, nil
		}
		kb, _ := preserves.AppendBinary(nil, seq[2:], preserves.EncodeOptions{})
		key := string(kb)
		if a := s.attenuated[key]; a != nil {
			return a, s, nil
		}
		cs := make([]caveat.Caveat, 0, len(seq)-2)
		for _, cv := range seq[2:] {
			cav, err := caveat.FromValue(cv)
			if err != nil {
				s.count--
				return nil, nil, protoErr(-1, ErrProtocol, err, "invalid caveat in WireRef")
			}
			cs = append(cs, cav)
		}
		a, err := s.ref.Attenuate(cs...)
		if err != nil {
			s.count--
			return nil, nil, protoErr(-1, ErrProtocol, err, "invalid attenuation in WireRef")
		}
		if s.attenuated == nil {
			s.attenuated = make(map[string]*dataspace.Ref)
		}
		s.attenuated[key] = a
		if _, taken := c.exported.byRef[a.Key()]; !taken {
			c.exported.byRef[a.Key()] = s
		}
		return a, s, nil
	}
	return nil, nil, protoErr(-1, ErrProtocol, nil, "malformed WireRef %s", preserves.Show(w))
}

// decodeValue replaces every WireRef in v by a local Cap, appending pins.
func (c *Conn) decodeValue(t *dataspace.Turn, v preserves.Value, pins []*symbol) (preserves.Value, []*symbol, error) {
	if !preserves.HasEmbedded(v) {
		return v, pins, nil
	}
	var err error
	out := mapEmbedded(v, func(e *preserves.Embedded) preserves.Value {
		if err != nil {
			return e
		}
		w, ok := e.Payload.(preserves.Value)
		if !ok {
			err = protoErr(-1, ErrProtocol, nil, "embedded value is not a WireRef")
			return e
		}
		r, s, derr := c.decodeRef(t, w)
		if derr != nil {
			err = derr
			return e
		}
		pins = append(pins, s)
		return dataspace.Embed(r)
	})
	if err != nil {
		c.release(pins)
		return nil, nil, err
	}
	return out, pins, nil
}

// inert is the entity behind a dead reference: it ignores everything but
// still answers Sync, so a peer syncing with it is not left waiting.
type inert struct{ dataspace.BaseEntity }

// mapEmbedded rebuilds v with every embedded value replaced by fn's result,
// in Preserves order (records: label then fields; sets and dictionaries:
// sorted), dropping annotations. Subtrees without embedded values are
// shared, not copied.
func mapEmbedded(v preserves.Value, fn func(*preserves.Embedded) preserves.Value) preserves.Value {
	if !preserves.HasEmbedded(v) {
		return preserves.Strip(v)
	}
	switch x := v.(type) {
	case *preserves.Embedded:
		return fn(x)
	case *preserves.Annotated:
		return mapEmbedded(x.Item, fn)
	case *preserves.Record:
		fs := make([]preserves.Value, len(x.Fields))
		l := mapEmbedded(x.Label, fn)
		for i, f := range x.Fields {
			fs[i] = mapEmbedded(f, fn)
		}
		return preserves.NewRecord(l, fs...)
	case preserves.Sequence:
		s := make(preserves.Sequence, len(x))
		for i, f := range x {
			s[i] = mapEmbedded(f, fn)
		}
		return s
	case *preserves.Set:
		es := x.Elems()
		s := make([]preserves.Value, len(es))
		for i, f := range es {
			s[i] = mapEmbedded(f, fn)
		}
		return preserves.NewSet(s...)
	case *preserves.Dictionary:
		es := x.Entries()
		d := make([]preserves.DictEntry, len(es))
		for i, e := range es {
			d[i] = preserves.DictEntry{Key: mapEmbedded(e.Key, fn), Value: mapEmbedded(e.Value, fn)}
		}
		return preserves.NewDictionary(d...)
	}
	return v
}
