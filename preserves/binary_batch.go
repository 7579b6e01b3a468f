package preserves

// Batch decoding. A protocol packet often carries many small values (the
// payloads of a Syndicate Turn, say) inside framing the caller takes apart
// itself. Decoding each payload with its own DecodeBinary call costs, per
// payload, a pooled decoder round trip and fresh slab chunks. A
// BatchDecoder decodes them all from one buffer with one decoder: the
// payloads share slab chunks, sized by extrapolating over the rest of the
// buffer, so a small payload costs no chunk of its own. Symbols go through
// the decoder's own cache of boxed symbols (see symbol), which outlives the
// batch.
//
// Sharing chunks means a value retained from the batch keeps the rest of
// its chunk reachable; chunks are capped exactly as in DecodeBinary
// (slabMax slots, arenaChunk bytes), so what one retained value can pin
// stays bounded.

// BatchDecoder decodes binary values found at caller-chosen positions of
// one buffer, sharing allocation chunks between them (see above). Reset it
// with the buffer, call DecodeAt for each value, and Reset again (with nil
// to let go of the buffer and the batch's chunks) before reusing it; like
// DecodeBinary's pooled decoders, it keeps its symbol cache and the spare
// tail of its string arena for the next batch (strings handed out are never
// overwritten). It is not safe for concurrent use; the zero value is ready
// to Reset.
type BatchDecoder struct {
	d binDecoder
}

// Reset starts a batch over b. opts apply to every value: MaxDepth bounds
// the nesting of each one, MaxLength the claimed length of any atom. A nil
// b drops the buffer, the slab chunks and every reference to decoded
// values.
func (bd *BatchDecoder) Reset(b []byte, opts DecodeOptions) {
	d := &bd.d
	d.resetSlabs() // clears the scratch stack, which an error may leave non-empty
	if d.stack == nil || cap(d.stack) > 1<<12 {
		d.stack = make([]Value, 0, 64)
	}
	d.init(opts)
	d.batch = true
	d.buf, d.pos, d.base, d.dropping = b, 0, 0, 0
	d.resetSlabs()
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
	v, err := d.value(0)
	if err != nil {
		return nil, d.pos, err
	}
	return v, d.pos, nil
}
