// Package testutil holds helpers shared by the tests of preserves and of the
// packages built on it. It is imported by tests only.
package testutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// DiffAnnotated returns "" when a and b are equal including their
// annotations (equal stripped values and, at every node, equal annotation
// lists compared the same way; set elements and dictionary entries are
// matched by their stripped values; positions and comment flags are
// ignored), and otherwise a short description of the first difference
// found, with its path.
func DiffAnnotated(a, b preserves.Value) string {
	d := diff(a, b)
	if d == nil {
		return ""
	}
	slices.Reverse(d.path) // the path was collected innermost first
	return "/" + strings.Join(d.path, "/") + ": " + d.msg
}

// difference is built only on failure, so comparing equal values costs no
// formatting however deep they are.
type difference struct {
	path []string
	msg  string
}

func (d *difference) at(format string, args ...any) *difference {
	d.path = append(d.path, fmt.Sprintf(format, args...))
	return d
}

func anns(v preserves.Value) []preserves.Value {
	if x, ok := v.(*preserves.Annotated); ok {
		return x.Anns
	}
	return nil
}

func diff(a, b preserves.Value) *difference {
	aa, ba := anns(a), anns(b)
	if len(aa) != len(ba) {
		return &difference{msg: fmt.Sprintf("%d annotations vs %d (%.100v vs %.100v)", len(aa), len(ba), a, b)}
	}
	for i := range aa {
		if d := diff(aa[i], ba[i]); d != nil {
			return d.at("@%d", i)
		}
	}
	a, b = preserves.Unwrap(a), preserves.Unwrap(b)
	if !preserves.Equal(a, b) {
		return &difference{msg: fmt.Sprintf("values differ: %.100v vs %.100v", preserves.Strip(a), preserves.Strip(b))}
	}
	switch x := a.(type) {
	case *preserves.Record:
		y := b.(*preserves.Record)
		if d := diff(x.Label, y.Label); d != nil {
			return d.at("label")
		}
		for i := range x.Fields {
			if d := diff(x.Fields[i], y.Fields[i]); d != nil {
				return d.at("%d", i)
			}
		}
	case preserves.Sequence:
		y := b.(preserves.Sequence)
		for i := range x {
			if d := diff(x[i], y[i]); d != nil {
				return d.at("%d", i)
			}
		}
	case *preserves.Set:
		// Both element lists are sorted by the (annotation-blind) value order
		// and the sets are equal, so elements pair up by index.
		xe, ye := x.Elems(), b.(*preserves.Set).Elems()
		for i := range xe {
			if d := diff(xe[i], ye[i]); d != nil {
				return d.at("#%.40v", preserves.Strip(xe[i]))
			}
		}
	case *preserves.Dictionary:
		xe, ye := x.Entries(), b.(*preserves.Dictionary).Entries()
		for i := range xe {
			if d := diff(xe[i].Key, ye[i].Key); d != nil {
				return d.at("%.40v(key)", preserves.Strip(xe[i].Key))
			}
			if d := diff(xe[i].Value, ye[i].Value); d != nil {
				return d.at("%.40v", preserves.Strip(xe[i].Key))
			}
		}
	case *preserves.Embedded:
		y := b.(*preserves.Embedded)
		xv, ok1 := x.Payload.(preserves.Value)
		yv, ok2 := y.Payload.(preserves.Value)
		if ok1 && ok2 {
			if d := diff(xv, yv); d != nil {
				return d.at("embedded")
			}
		}
	}
	return nil
}
