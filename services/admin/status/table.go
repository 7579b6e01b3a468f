package status

// The status table fits its width: each column is as wide as its widest
// cell until the row would not fit; then the flexible columns (SERVICE,
// STATE, LAST EXIT, REASON) share the room the others leave. A cut service name
// keeps both ends (`<config-watcher "/e…ig" {…}>`), since the label and
// the end are what tell names apart; other cells keep their start. Rows
// never wrap. Width 0 means no limit (output that is not a terminal).

import (
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// column is one column of a table: its heading, its cells, how narrow it
// may become, and whether it is cut in the middle.
type column struct {
	head   string
	cells  []string
	min    int
	middle bool
	width  int
}

// writeColumns prints cols as a table of at most width columns (0: no
// limit), two spaces between columns, the last one not padded; after
// (if set) runs after each row of cells.
func writeColumns(w io.Writer, cols []*column, width int, after func(i int)) {
	for _, c := range cols {
		c.width = utf8.RuneCountInString(c.head)
		for _, s := range c.cells {
			c.width = max(c.width, utf8.RuneCountInString(s))
		}
	}
	if width > 0 {
		fit(cols, width)
	}
	var b strings.Builder
	row := func(cell func(c *column) string) {
		b.Reset()
		for i, c := range cols {
			s := cut(cell(c), c.width, c.middle)
			b.WriteString(s)
			if i < len(cols)-1 {
				b.WriteString(strings.Repeat(" ", c.width-utf8.RuneCountInString(s)+2))
			}
		}
		io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n")
	}
	row(func(c *column) string { return c.head })
	for i := range cols[0].cells {
		row(func(c *column) string { return c.cells[i] })
		if after != nil {
			after(i)
		}
	}
}

// fit narrows the flexible columns (those with a min) until the row fits
// width: the room left by the others is shared out evenly, a column that
// needs less than its share leaving the rest to the others (so short
// cells are never cut to make room for long ones).
func fit(cols []*column, width int) {
	room := width - 2*(len(cols)-1)
	var flex []*column
	for _, c := range cols {
		if c.min > 0 {
			flex = append(flex, c)
		} else {
			room -= c.width
		}
	}
	need := 0
	for _, c := range flex {
		need += c.width
	}
	if need <= room {
		return
	}
	// Water-filling: settle the columns narrower than the even share.
	slices.SortFunc(flex, func(a, b *column) int { return a.width - b.width })
	for i, c := range flex {
		share := max(room, 0) / (len(flex) - i)
		if c.width > share {
			c.width = max(share, c.min, utf8.RuneCountInString(c.head))
		}
		room -= c.width
	}
}

// cut shortens s to n runes with an ellipsis: at the end, or in the
// middle.
func cut(s string, n int, middle bool) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	if !middle {
		return string(r[:n-1]) + "…"
	}
	head := (n - 1 + 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// WriteTable prints the services as a table fitting width (0: no limit).
// When the row does not fit, LAST EXIT and REASON go on a line of their
// own under it (`  ↳ …`), cut to the width, and columns with nothing but
// `-` are left out.
func WriteTable(w io.Writer, svcs []Service, now time.Time, width int) {
	cols := []*column{
		{head: "SERVICE", min: 16, middle: true}, {head: "WANTED"}, {head: "STATE", min: 18}, {head: "FOR"},
		{head: "PID"}, {head: "RESTARTS"}, {head: "LAST EXIT", min: 14}, {head: "REASON", min: 12},
	}
	for _, s := range svcs {
		cells := []string{s.displayName(), s.wanted(), s.state(), s.held(now), s.pids(), s.restarts(), s.lastExit(now), s.reason(now)}
		for i, c := range cells {
			cols[i].cells = append(cols[i].cells, c)
		}
	}
	if width == 0 || naturalWidth(cols) <= width {
		writeColumns(w, cols, width, nil)
		return
	}
	// Narrow: LAST EXIT and REASON go on a line of their own under the
	// row, and a column with nothing to say leaves its room to the others.
	exits, reasons := cols[len(cols)-2].cells, cols[len(cols)-1].cells
	cols = slices.DeleteFunc(cols[:len(cols)-2], func(c *column) bool {
		return c.head != "SERVICE" && !slices.ContainsFunc(c.cells, func(s string) bool { return s != "-" })
	})
	writeColumns(w, cols, width, func(i int) {
		var parts []string
		if exits[i] != "-" {
			parts = append(parts, "last exit: "+exits[i])
		}
		if reasons[i] != "-" {
			parts = append(parts, reasons[i])
		}
		if len(parts) > 0 {
			io.WriteString(w, cut("  ↳ "+strings.Join(parts, "; "), width, false)+"\n")
		}
	})
}

// naturalWidth is the width of a row with no cell cut.
func naturalWidth(cols []*column) int {
	n := 2 * (len(cols) - 1)
	for _, c := range cols {
		n += max(utf8.RuneCountInString(c.head), maxRunes(c.cells))
	}
	return n
}

func maxRunes(cells []string) int {
	n := 0
	for _, s := range cells {
		n = max(n, utf8.RuneCountInString(s))
	}
	return n
}
