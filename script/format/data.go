package format

// The layout of values (operands of instructions). It is the Preserves
// writer's "fits or breaks" rule, with three refinements for configuration
// files, and it knows the real column it starts at:
//
//   - a value is written on one line when it fits within lineWidth columns
//     and holds no comment;
//   - otherwise a record whose last field is a compound (record, sequence,
//     set, dictionary) "hangs": everything before that field stays on the
//     first line, recursively, so `<require-service <config-watcher $d {`
//     opens a dictionary whose entries follow one per line and the line
//     `}>>` closes all three;
//   - a sequence or set of plain atoms (an argv list) stays on one line
//     whatever its length: breaking it would not make it easier to read;
//   - otherwise the items go one per line, one level deeper: record fields
//     after the label, sequence and set items, dictionary entries `k: v`.
//
// Comments (line annotations) are written on lines of their own before the
// value they annotate; other annotations as `@ann ` before it.

import (
	"bytes"
	"unicode/utf8"

	"github.com/syndicate-go/syndicate/preserves"
)

// lineWidth is the width the layout aims for.
const lineWidth = 80

// column is the width (in code points) of the current line so far.
func (f *formatter) column() int {
	b := f.buf.Bytes()
	return utf8.RuneCount(b[bytes.LastIndexByte(b, '\n')+1:])
}

// data writes v at the current position; depth is the indentation level of
// the line it starts on.
func (f *formatter) data(v preserves.Value, depth int) {
	item := v
	if a, ok := v.(*preserves.Annotated); ok {
		item = a.Item
		f.annotations(a, depth, nil)
	}
	if !hasComment(item) {
		text := preserves.FormatText(item)
		if f.column()+utf8.RuneCountInString(text) <= lineWidth || atomsOnly(item) {
			f.buf.WriteString(text)
			return
		}
	}
	switch x := preserves.Unwrap(item).(type) {
	case *preserves.Record:
		f.buf.WriteByte('<')
		if f.hanging(x, depth) {
			return
		}
		f.data(x.Label, depth+1)
		for _, fl := range x.Fields {
			f.nl(depth + 1)
			f.data(fl, depth+1)
		}
		f.buf.WriteByte('>')
	case preserves.Sequence:
		f.items("[", x, "]", depth)
	case *preserves.Set:
		f.items("#{", x.Elems(), "}", depth)
	case *preserves.Dictionary:
		f.buf.WriteByte('{')
		for _, e := range x.Entries() {
			f.nl(depth + 1)
			f.data(e.Key, depth+1)
			f.buf.WriteString(": ")
			f.data(e.Value, depth+1)
		}
		f.nl(depth)
		f.buf.WriteByte('}')
	case *preserves.Embedded:
		f.buf.WriteString("#:")
		if pv, ok := x.Payload.(preserves.Value); ok {
			f.data(pv, depth)
		} else {
			f.buf.WriteString(preserves.FormatText(x))
		}
	default:
		f.buf.WriteString(preserves.FormatText(item))
	}
}

// hanging writes the rest of record x (after `<`) in the hanging style when
// it applies: the last field is a compound without leading annotations and
// the label and the other fields fit, without comments, on this line.
func (f *formatter) hanging(x *preserves.Record, depth int) bool {
	if len(x.Fields) == 0 {
		return false
	}
	last := x.Fields[len(x.Fields)-1]
	if a, ok := last.(*preserves.Annotated); ok && len(a.Anns) > 0 {
		return false
	}
	switch preserves.Unwrap(last).(type) {
	case *preserves.Record, preserves.Sequence, *preserves.Set, *preserves.Dictionary:
	default:
		return false
	}
	head := []preserves.Value{x.Label}
	head = append(head, x.Fields[:len(x.Fields)-1]...)
	width := f.column()
	for _, h := range head {
		if hasComment(h) {
			return false
		}
		width += utf8.RuneCountInString(preserves.FormatText(h)) + 1
	}
	if width >= lineWidth {
		return false
	}
	for _, h := range head {
		f.buf.WriteString(preserves.FormatText(h))
		f.buf.WriteByte(' ')
	}
	f.data(last, depth)
	f.buf.WriteByte('>')
	return true
}

func (f *formatter) items(open string, items []preserves.Value, close string, depth int) {
	f.buf.WriteString(open)
	for _, it := range items {
		f.nl(depth + 1)
		f.data(it, depth+1)
	}
	if len(items) > 0 {
		f.nl(depth)
	}
	f.buf.WriteString(close)
}

// hasComment reports whether v holds a line annotation anywhere (which
// compact text would turn into an `@"…"` annotation).
func hasComment(v preserves.Value) bool {
	if a, ok := v.(*preserves.Annotated); ok {
		for i := range a.Anns {
			if _, line := lineAnnotation(a, i); line || hasComment(a.Anns[i]) {
				return true
			}
		}
		v = a.Item
	}
	return preserves.AnyPart(v, hasComment)
}

// atomsOnly reports whether v is a sequence or set whose items are all
// atoms without annotations.
func atomsOnly(v preserves.Value) bool {
	var items []preserves.Value
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Sequence:
		items = x
	case *preserves.Set:
		items = x.Elems()
	default:
		return false
	}
	for _, it := range items {
		if a, ok := it.(*preserves.Annotated); ok && len(a.Anns) > 0 {
			return false
		}
		switch preserves.Unwrap(it).(type) {
		case *preserves.Record, preserves.Sequence, *preserves.Set, *preserves.Dictionary, *preserves.Embedded:
			return false
		}
	}
	return true
}
