// Package testutil holds helpers shared by the tests of preserves and of the
// packages built on it. It is imported by tests only.
package testutil

import (
	"fmt"

	"github.com/syndicate-go/syndicate/preserves"
)

// EqualAnnotated reports whether a and b are equal including their
// annotations: equal stripped values and, at every node, equal annotation
// lists compared the same way. Set elements and dictionary entries are
// matched by their stripped values. Positions and comment flags are ignored.
func EqualAnnotated(a, b preserves.Value) bool { return DiffAnnotated(a, b) == "" }

// DiffAnnotated returns "" when EqualAnnotated(a, b), and otherwise a short
// description of the first difference found, with its path.
func DiffAnnotated(a, b preserves.Value) string { return diff("", a, b) }

func anns(v preserves.Value) []preserves.Value {
	if x, ok := v.(*preserves.Annotated); ok {
		return x.Anns
	}
	return nil
}

func diff(path string, a, b preserves.Value) string {
	if path == "" {
		path = "."
	}
	aa, ba := anns(a), anns(b)
	if len(aa) != len(ba) {
		return fmt.Sprintf("%s: %d annotations vs %d (%v vs %v)", path, len(aa), len(ba), a, b)
	}
	for i := range aa {
		if d := diff(fmt.Sprintf("%s@%d", path, i), aa[i], ba[i]); d != "" {
			return d
		}
	}
	a, b = preserves.Unwrap(a), preserves.Unwrap(b)
	if !preserves.Equal(a, b) {
		return fmt.Sprintf("%s: values differ: %v vs %v", path, preserves.Strip(a), preserves.Strip(b))
	}
	switch x := a.(type) {
	case *preserves.Record:
		y := b.(*preserves.Record)
		if d := diff(path+"/label", x.Label, y.Label); d != "" {
			return d
		}
		for i := range x.Fields {
			if d := diff(fmt.Sprintf("%s/%d", path, i), x.Fields[i], y.Fields[i]); d != "" {
				return d
			}
		}
	case preserves.Sequence:
		y := b.(preserves.Sequence)
		for i := range x {
			if d := diff(fmt.Sprintf("%s/%d", path, i), x[i], y[i]); d != "" {
				return d
			}
		}
	case *preserves.Set:
		// Both element lists are sorted by the (annotation-blind) value order
		// and the sets are equal, so elements pair up by index.
		xe, ye := x.Elems(), b.(*preserves.Set).Elems()
		for i := range xe {
			if d := diff(fmt.Sprintf("%s/#%v", path, preserves.Strip(xe[i])), xe[i], ye[i]); d != "" {
				return d
			}
		}
	case *preserves.Dictionary:
		xe, ye := x.Entries(), b.(*preserves.Dictionary).Entries()
		for i := range xe {
			p := fmt.Sprintf("%s/%v", path, preserves.Strip(xe[i].Key))
			if d := diff(p+"(key)", xe[i].Key, ye[i].Key); d != "" {
				return d
			}
			if d := diff(p, xe[i].Value, ye[i].Value); d != "" {
				return d
			}
		}
	case *preserves.Embedded:
		y := b.(*preserves.Embedded)
		xv, ok1 := x.Payload.(preserves.Value)
		yv, ok2 := y.Payload.(preserves.Value)
		if ok1 && ok2 {
			return diff(path+"/embedded", xv, yv)
		}
	}
	return ""
}

// HasAnnotations reports whether v carries an *Annotated wrapper anywhere.
func HasAnnotations(v preserves.Value) bool {
	switch x := v.(type) {
	case *preserves.Annotated:
		return true
	case *preserves.Record:
		if HasAnnotations(x.Label) {
			return true
		}
		return anyAnnotated(x.Fields)
	case preserves.Sequence:
		return anyAnnotated(x)
	case *preserves.Set:
		return anyAnnotated(x.Elems())
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			if HasAnnotations(e.Key) || HasAnnotations(e.Value) {
				return true
			}
		}
	case *preserves.Embedded:
		if pv, ok := x.Payload.(preserves.Value); ok {
			return HasAnnotations(pv)
		}
	}
	return false
}

func anyAnnotated(vs []preserves.Value) bool {
	for _, v := range vs {
		if HasAnnotations(v) {
			return true
		}
	}
	return false
}
