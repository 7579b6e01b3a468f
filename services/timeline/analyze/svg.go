package analyze

// Pictures of the boot: `analyze plot` (a timeline, one bar per service
// from its start to up, coloured by state, like systemd-analyze plot) and
// `analyze graph` (the depends-on graph as DOT, or drawn as SVG with a
// layered layout: dependees left of their dependents). Both are written
// with the standard library only.

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// stateColours colours bars and nodes by state.
var stateColours = map[string]string{
	"ready":    "#43a047",
	"complete": "#1e88e5",
	"failed":   "#e53935",
	"started":  "#fb8c00",
	"starting": "#fdd835",
}

const otherColour = "#9e9e9e" // waiting, stopped, unknown

func colour(state string) string {
	if c, ok := stateColours[state]; ok {
		return c
	}
	return otherColour
}

// barState is the state a bar is coloured by: what the service holds now
// if that is an outcome, else what it reached, else where it is stuck.
func (u *Unit) barState() string {
	switch {
	case u.State == "ready" || u.State == "complete" || u.State == "failed":
		return u.State
	case !u.Up.IsZero():
		return u.UpState
	case !u.Failed.IsZero():
		return "failed"
	}
	return u.State
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// textWidth estimates the width of s in the 12px sans-serif font used.
func textWidth(s string) float64 { return charW * float64(len([]rune(s))) }

// charW is a generous average advance of the 12px sans-serif font, so
// that estimated widths are never short.
const charW = 7.5

// niceStep is a tick interval of 1, 2 or 5 × 10^k spanning total in at
// most about ten ticks.
func niceStep(total time.Duration) time.Duration {
	raw := float64(total) / 10
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return time.Duration(m * p)
		}
	}
	return time.Duration(10 * p)
}

// svgOpen starts an SVG document of the given size and title.
func svgOpen(s *strings.Builder, width, height float64, title string) {
	s.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(s, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(s, "<title>%s</title>\n", title)
}

// maxLabelW bounds the label column of the plot; a longer name is cut in
// the middle to fit (the whole name is the label's tooltip), never
// clipped at the picture's edge.
const maxLabelW = 420.0

// label is a service name cut in the middle to fit maxLabelW.
func label(name string) string {
	r := []rune(name)
	w := float64(maxLabelW - 20)
	n := int(w / charW)
	if len(r) <= n {
		return name
	}
	head := n / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// PlotSVG draws the boot as a timeline.
func PlotSVG(b *Boot) string {
	units := b.sorted()
	var shown []*Unit
	for _, u := range units {
		if !u.start().IsZero() {
			shown = append(shown, u)
		}
	}
	labelW := 120.0
	var end time.Time
	for _, u := range shown {
		labelW = max(labelW, textWidth(u.Name)+20)
		if e := u.end(b.Now); e.After(end) {
			end = e
		}
	}
	labelW = min(labelW, maxLabelW)
	const (
		chartW = 760.0
		rowH   = 22.0
		barH   = 14.0
		top    = 56.0
	)
	total := max(end.Sub(b.Origin), time.Millisecond)
	x := func(t time.Time) float64 { return labelW + chartW*float64(t.Sub(b.Origin))/float64(total) }
	width := labelW + chartW + 90
	height := top + rowH*float64(len(shown)) + 50

	var s strings.Builder
	svgOpen(&s, width, height, "syndicate analyze plot")
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	last := LastUp(b)
	title := fmt.Sprintf("%d services", len(shown))
	if last != nil {
		title += fmt.Sprintf("; the last up, %s, at %s", last.Name, fmtDur(b.since(last.Up)))
	}
	fmt.Fprintf(&s, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", esc(title))
	// Time axis and grid.
	step := niceStep(total)
	for t := time.Duration(0); t <= total; t += step {
		gx := labelW + chartW*float64(t)/float64(total)
		fmt.Fprintf(&s, `<line class="grid" x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#e0e0e0"/>`+"\n", gx, top-12, gx, top+rowH*float64(len(shown)))
		fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#616161">%s</text>`+"\n", gx, top-16, esc(fmtDur(t)))
	}
	for i, u := range shown {
		y := top + rowH*float64(i)
		st := u.barState()
		fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" text-anchor="end">%s<title>%s</title></text>`+"\n", labelW-8, y+barH-3, esc(label(u.Name)), esc(u.Name))
		if req := u.requested(); !req.IsZero() && u.start().After(req) {
			// Waiting for dependencies: from request to run.
			fmt.Fprintf(&s, `<rect class="wait" x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="#eeeeee"><title>%s waited %s for its dependencies</title></rect>`+"\n",
				x(req), y+barH/2-2, max(x(u.start())-x(req), 1), 4.0, esc(u.Name), esc(fmtDur(u.start().Sub(req))))
		}
		e := u.end(b.Now)
		x0, x1 := x(u.start()), x(e)
		what := fmt.Sprintf("%s: %s, %s from start", u.Name, st, fmtDur(e.Sub(u.start())))
		fmt.Fprintf(&s, `<rect class="bar" data-state="%s" x="%.1f" y="%.1f" width="%.1f" height="%.0f" rx="2" fill="%s"><title>%s</title></rect>`+"\n",
			esc(st), x0, y, max(x1-x0, 2), barH, colour(st), esc(what))
		fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" fill="#424242">%s</text>`+"\n", max(x1, x0+2)+4, y+barH-3, esc(fmtDur(e.Sub(u.start()))))
	}
	// Legend.
	ly := top + rowH*float64(len(shown)) + 24
	lx := 10.0
	for _, st := range []string{"ready", "complete", "failed", "started", "starting", "waiting"} {
		fmt.Fprintf(&s, `<rect class="legend" x="%.0f" y="%.0f" width="12" height="12" fill="%s"/>`, lx, ly, colour(st))
		fmt.Fprintf(&s, `<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+16, ly+10, st)
		lx += 30 + textWidth(st)
	}
	fmt.Fprintf(&s, `<text x="%.0f" y="%.0f" fill="#616161">thin grey: waiting for dependencies</text>`+"\n", lx+10, ly+10)
	s.WriteString("</svg>\n")
	return s.String()
}

// dotQuote quotes s as a DOT string.
func dotQuote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// graphUnits returns the units, in a stable order, and their edges.
func graphUnits(b *Boot) []*Unit {
	us := b.sorted()
	for _, u := range us {
		slices.SortFunc(u.Deps, func(a, c Dep) int { return strings.Compare(a.Key+a.Awaits, c.Key+c.Awaits) })
	}
	return us
}

// graphDOT writes the dependency graph in Graphviz's language: an edge
// from each service to each service it depends on, labelled with the
// awaited state.
// GraphDOT writes the dependency graph in Graphviz's DOT.
func GraphDOT(b *Boot) string {
	var s strings.Builder
	s.WriteString("digraph services {\n\trankdir=RL;\n\tnode [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\"];\n")
	for _, u := range graphUnits(b) {
		fmt.Fprintf(&s, "\t%s [fillcolor=%s, tooltip=%s];\n", dotQuote(u.Name), dotQuote(colour(u.barState())), dotQuote(u.State))
	}
	for _, u := range graphUnits(b) {
		for _, d := range u.Deps {
			if du := b.Units[d.Key]; du != nil {
				fmt.Fprintf(&s, "\t%s -> %s [label=%s];\n", dotQuote(u.Name), dotQuote(du.Name), dotQuote(d.Awaits))
			}
		}
	}
	s.WriteString("}\n")
	return s.String()
}

// layers assigns each unit a column: 0 for services with no dependency,
// else one more than its deepest dependee (cycles are cut).
func layers(b *Boot) map[string]int {
	depth := map[string]int{}
	visiting := map[string]bool{}
	var visit func(u *Unit) int
	visit = func(u *Unit) int {
		if d, ok := depth[u.Key]; ok {
			return d
		}
		if visiting[u.Key] {
			return 0
		}
		visiting[u.Key] = true
		d := 0
		for _, e := range u.Deps {
			if du := b.Units[e.Key]; du != nil {
				d = max(d, visit(du)+1)
			}
		}
		visiting[u.Key] = false
		depth[u.Key] = d
		return d
	}
	for _, u := range graphUnits(b) {
		visit(u)
	}
	return depth
}

// graphSVG draws the dependency graph: one column per layer, dependees on
// the left, an arrow from each dependent to each dependee.
// GraphSVG draws the dependency graph.
func GraphSVG(b *Boot) string {
	us := graphUnits(b)
	depth := layers(b)
	cols := map[int][]*Unit{}
	ncols, nrows := 0, 0
	boxW := 120.0
	for _, u := range us {
		d := depth[u.Key]
		cols[d] = append(cols[d], u)
		ncols = max(ncols, d+1)
		nrows = max(nrows, len(cols[d]))
		boxW = max(boxW, textWidth(u.Name)+24)
	}
	boxW = min(boxW, 420)
	// Services in the graph's edges first, isolated ones below them, so
	// that chains are drawn straight across the top.
	linked := map[string]bool{}
	for _, u := range us {
		for _, d := range u.Deps {
			linked[u.Key], linked[d.Key] = true, true
		}
	}
	for c := range cols {
		slices.SortStableFunc(cols[c], func(a, b *Unit) int {
			switch {
			case linked[a.Key] == linked[b.Key]:
				return 0
			case linked[a.Key]:
				return -1
			}
			return 1
		})
	}
	const (
		boxH   = 28.0
		gapX   = 90.0
		gapY   = 18.0
		margin = 20.0
	)
	type pos struct{ x, y float64 }
	at := map[string]pos{}
	for c := 0; c < ncols; c++ {
		for r, u := range cols[c] {
			at[u.Key] = pos{margin + float64(c)*(boxW+gapX), margin + float64(r)*(boxH+gapY)}
		}
	}
	width := margin*2 + float64(max(ncols, 1))*(boxW+gapX) - gapX
	height := margin*2 + float64(max(nrows, 1))*(boxH+gapY) - gapY

	var s strings.Builder
	svgOpen(&s, width, height, "syndicate analyze graph")
	s.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#616161"/></marker></defs>` + "\n")
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	for _, u := range us {
		from := at[u.Key]
		for _, d := range u.Deps {
			to, ok := at[d.Key]
			if !ok {
				continue
			}
			x1, y1 := from.x, from.y+boxH/2
			x2, y2 := to.x+boxW, to.y+boxH/2
			mx := (x1 + x2) / 2
			fmt.Fprintf(&s, `<path class="edge" d="M %.1f %.1f C %.1f %.1f, %.1f %.1f, %.1f %.1f" fill="none" stroke="#616161" marker-end="url(#arrow)"><title>%s depends on %s %s</title></path>`+"\n",
				x1, y1, mx, y1, mx, y2, x2, y2, esc(u.Name), esc(b.Units[d.Key].Name), esc(d.Awaits))
			fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" fill="#616161">%s</text>`+"\n", mx, (y1+y2)/2-4, esc(d.Awaits))
		}
	}
	for _, u := range us {
		p := at[u.Key]
		st := u.barState()
		fmt.Fprintf(&s, `<g class="node"><rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" rx="6" fill="%s" stroke="#424242"><title>%s: %s</title></rect>`,
			p.x, p.y, boxW, boxH, colour(st), esc(u.Name), esc(u.State))
		fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`+"\n", p.x+boxW/2, p.y+boxH/2+4, esc(u.Name))
	}
	s.WriteString("</svg>\n")
	return s.String()
}
