package script

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/syndicate-go/syndicate/preserves"
)

// Fix is one edit of a suggested fix (Error.Fixes): Text replaces the value
// that starts at Pos, or, with Insert, goes in before it. A warning's
// suggestion is written once, as these edits, so that the message, a tool
// applying it (ApplyFixes) and the test that applies every suggestion of
// the test data agree.
type Fix struct {
	Pos    preserves.Pos
	Insert bool
	Text   string
}

// ApplyFixes applies edits to src, the text they were computed from. Edits
// must not overlap.
func ApplyFixes(src []byte, fixes []Fix) ([]byte, error) {
	fixes = slices.Clone(fixes)
	slices.SortStableFunc(fixes, func(a, b Fix) int { return b.Pos.Offset - a.Pos.Offset })
	out := slices.Clone(src)
	for _, f := range fixes {
		start := f.Pos.Offset
		if start < 0 || start > len(out) {
			return nil, fmt.Errorf("%s: fix outside the file", f.Pos)
		}
		end := start
		if !f.Insert {
			r := preserves.NewTextReader(bytes.NewReader(out[start:]), preserves.TextOptions{Annotations: true})
			if _, err := r.Next(); err != nil {
				return nil, fmt.Errorf("%s: no value to replace: %w", f.Pos, err)
			}
			end = start + r.Offset()
		}
		out = slices.Concat(out[:start], []byte(f.Text), out[end:])
	}
	return out, nil
}
