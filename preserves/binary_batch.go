package preserves

// Batch decoding. A protocol packet often carries many small values (the
// payloads of a Syndicate Turn, say) inside framing the caller takes apart
// itself. Decoding each payload with its own DecodeBinary call costs, per
// payload, a pooled decoder round trip and fresh slab and arena chunks, and
// a fresh interface box for every symbol. A BatchDecoder decodes them all
// from one buffer with one decoder: the payloads share slab and arena
// chunks (so a small payload costs no chunk of its own), and a short symbol
// repeated across the batch — record labels, mostly — is boxed once.
//
// Sharing chunks means a value retained from the batch keeps the rest of
// its chunk reachable; chunks are capped exactly as in DecodeBinary
// (slabMax slots, arenaChunk bytes), so what one retained value can pin
// stays bounded.

import (
	"hash/maphash"
	"unicode/utf8"
)

// symCacheSize is the number of entries of a batch's symbol cache; symbols
// longer than symCacheMaxLen are not cached.
const (
	symCacheSize   = 64
	symCacheMaxLen = 64
)

// symCache is a direct-mapped cache of boxed symbols, keyed by their text.
// A collision simply evicts: correctness never depends on a hit.
type symCache struct {
	seed    maphash.Seed
	entries [symCacheSize]symEntry
}

type symEntry struct {
	s string
	v Value
}

func (c *symCache) clear() {
	for i := range c.entries {
		c.entries[i].s, c.entries[i].v = "", nil
	}
}

// BatchDecoder decodes binary values found at caller-chosen positions of
// one buffer, sharing allocation chunks and symbol boxes between them (see
// above). Reset it with the buffer, call DecodeAt for each value, and Reset
// again (with nil to let go of the buffer and the batch's chunks) before
// reusing it; like DecodeBinary's pooled decoders, it keeps the spare tail
// of its string arena for the next batch (strings handed out are never
// overwritten). It is not safe for concurrent use; the zero value is ready
// to Reset.
type BatchDecoder struct {
	d    binDecoder
	syms symCache
}

// Reset starts a batch over b. opts apply to every value: MaxDepth bounds
// the nesting of each one, MaxLength the claimed length of any atom. A nil
// b drops the buffer, the slab chunks and the symbol cache.
func (bd *BatchDecoder) Reset(b []byte, opts DecodeOptions) {
	d := &bd.d
	if d.stack == nil {
		d.stack = make([]Value, 0, 64)
		bd.syms.seed = maphash.MakeSeed()
	}
	if len(d.stack) > 0 { // an error may leave items behind
		clear(d.stack)
		d.stack = d.stack[:0]
	}
	if cap(d.stack) > 1<<12 {
		d.stack = make([]Value, 0, 64)
	}
	d.init(opts)
	d.buf, d.pos, d.base, d.dropping = b, 0, 0, 0
	d.resetSlabs()
	bd.syms.clear()
	if b == nil {
		d.embedded = nil
	}
}

// DecodeAt decodes the value starting at b[pos] and returns it with the
// position just past it. Errors are *Error values positioned in b; after an
// error the batch may continue at another position.
func (bd *BatchDecoder) DecodeAt(pos int) (Value, int, error) {
	d := &bd.d
	if pos < 0 || pos >= len(d.buf) {
		return nil, pos, d.errAt(ErrUnexpectedEOF, pos, "input ends before a value")
	}
	d.pos = pos
	d.dropping = 0
	d.syms = &bd.syms
	v, err := d.value(0)
	d.syms = nil
	if err != nil {
		return nil, d.pos, err
	}
	return v, d.pos, nil
}

// decodeSymbol is value's symbol case: validated, copied into the arena,
// and, with a batch's cache in use, boxed once per batch.
func (d *binDecoder) decodeSymbol(start int, body []byte) (Value, error) {
	var e *symEntry
	if d.syms != nil && len(body) <= symCacheMaxLen {
		e = &d.syms.entries[maphash.Bytes(d.syms.seed, body)%symCacheSize]
		if e.v != nil && e.s == string(body) {
			return e.v, nil // validated when it was cached
		}
	}
	if !utf8.Valid(body) {
		return nil, d.errAt(ErrSyntax, start, "invalid UTF-8 in string or symbol")
	}
	s := d.str(body)
	if e == nil {
		return Symbol(s), nil
	}
	e.s, e.v = s, Symbol(s)
	return e.v, nil
}
