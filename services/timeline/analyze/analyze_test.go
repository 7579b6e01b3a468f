package analyze

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/timeline"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func mustName(t *testing.T, text string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(text)
	require.NoError(t, err)
	return v
}

// change builds a change: "+ready", "-run", "+require", "+failed"...
func change(at int, what string) timeline.Change {
	c := timeline.Change{Time: ms(at), Asserted: what[0] == '+'}
	switch what[1:] {
	case "require":
		c.Fact = timeline.FactRequire
	case "run":
		c.Fact = timeline.FactRun
	default:
		c.Fact = preserves.NewRecord(serviceschema.LabelServiceState, preserves.Symbol(what[1:]))
	}
	return c
}

// sampleBoot is a boot like the shipped configuration's, plus a failing
// database and an application stuck waiting for it:
//
//	<milestone services>  up at 10ms
//	<daemon hello>        one-shot, depends on services ready; complete at 1200ms
//	<daemon heartbeat>    depends on hello complete; ready at 1210ms
//	<daemon db>           failed at 300ms
//	<daemon app>          depends on db ready; never runs
func sampleBoot(t *testing.T) *Boot {
	b := &Boot{Origin: t0, Now: ms(1500), Units: map[string]*Unit{}}
	add := func(name string, cs ...timeline.Change) {
		u := UnitOf(mustName(t, name), cs, 0)
		b.Units[u.Key] = u
	}
	add("<milestone services>", change(1, "+require"), change(2, "+run"), change(9, "+started"), change(10, "+ready"))
	add("<daemon hello>", change(1, "+require"), change(11, "+run"), change(12, "+started"), change(1200, "+complete"))
	add("<daemon heartbeat>", change(1, "+require"), change(1201, "+run"), change(1202, "+started"), change(1210, "+ready"))
	add("<daemon db>", change(1, "+require"), change(5, "+run"), change(6, "+started"), change(300, "-started"), change(300, "+failed"))
	add("<daemon app>", change(1, "+require"))
	b.AddDep(mustName(t, "<daemon hello>"), mustName(t, "<service-state <milestone services> ready>"))
	b.AddDep(mustName(t, "<daemon heartbeat>"), mustName(t, "<service-state <daemon hello> complete>"))
	b.AddDep(mustName(t, "<daemon app>"), mustName(t, "<service-state <daemon db> ready>"))
	return b
}

func TestAnalyzeUnitFromHistory(t *testing.T) {
	b := sampleBoot(t)
	hb := b.Units["<daemon heartbeat>"]
	require.Equal(t, ms(1), hb.Requested)
	require.Equal(t, ms(1201), hb.Run)
	require.Equal(t, ms(1210), hb.Up)
	require.Equal(t, "ready", hb.UpState)
	require.Equal(t, "ready", hb.State)
	require.Equal(t, "complete", b.Units["<daemon hello>"].UpState)
	db := b.Units["<daemon db>"]
	require.True(t, db.Up.IsZero())
	require.Equal(t, ms(300), db.Failed)
	require.Equal(t, "failed", db.State)
	require.Equal(t, "waiting", b.Units["<daemon app>"].State)
	// A service whose ready a script asserted before it was run is up
	// as soon as it runs.
	m := UnitOf(mustName(t, "<milestone m>"), []timeline.Change{change(1, "+ready"), change(2, "+require"), change(3, "+run")}, 0)
	require.Equal(t, ms(3), m.Up)
	require.Equal(t, "ready", m.UpState)
}

func TestAnalyzeBlame(t *testing.T) {
	var out strings.Builder
	WriteBlame(&out, sampleBoot(t))
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, 6, out.String())
	// Slowest first, then those never up, by name.
	for i, want := range [][]string{
		{"REQUEST→UP", "RUN→UP", "SERVICE"},
		{"1.209s", "9ms", "ready", "<daemon heartbeat>"},
		{"1.199s", "1.189s", "complete", "<daemon hello>"},
		{"9ms", "8ms", "ready", "<milestone services>"},
		{"not up", "-", "waiting", "<daemon app>"},
		{"failed after 299ms", "-", "failed", "<daemon db>"},
	} {
		require.Equal(t, strings.Join(want, " "), strings.Join(strings.Fields(lines[i]), " "), "line %d", i)
	}
}

func TestAnalyzeCriticalChain(t *testing.T) {
	b := sampleBoot(t)
	var out strings.Builder
	WriteChain(&out, b, CriticalChain(b, LastUp(b)))
	require.True(t, strings.HasSuffix(out.String(), "\n\n"+
		"<daemon heartbeat> @1.210s +9ms\n"+
		"└─<daemon hello> @1.200s +1.189s\n"+
		"  └─<milestone services> @10ms +8ms\n"), out.String())
	// A named service that never came up shows where it is stuck.
	out.Reset()
	WriteChain(&out, b, CriticalChain(b, b.Units["<daemon app>"]))
	require.True(t, strings.HasSuffix(out.String(), "\n\n<daemon app> (waiting)\n"), out.String())
}

// A dependee that became up after the service ran did not hold it up, and
// a dependency cycle ends the chain instead of looping.
func TestAnalyzeCriticalChainEdgeCases(t *testing.T) {
	b := &Boot{Origin: t0, Now: ms(100), Units: map[string]*Unit{}}
	for _, n := range []struct {
		name    string
		run, up int
	}{{"a", 10, 20}, {"b", 1, 50}, {"c", 1, 5}} {
		u := UnitOf(preserves.Symbol(n.name), []timeline.Change{change(0, "+require"), change(n.run, "+run"), change(n.up, "+ready")}, 0)
		b.Units[u.Key] = u
	}
	b.AddDep(preserves.Symbol("a"), mustName(t, "<service-state b ready>"))
	b.AddDep(preserves.Symbol("a"), mustName(t, "<service-state c ready>"))
	b.AddDep(preserves.Symbol("c"), mustName(t, "<service-state a ready>"))
	chain := CriticalChain(b, b.Units["a"])
	var keys []string
	for _, l := range chain {
		keys = append(keys, l.Unit.Key)
	}
	require.Equal(t, []string{"a", "c"}, keys, "b was up after a ran; c's dependency on a is a cycle")
}

// svgElement is what the well-formedness check collects.
type svgElement struct {
	name  string
	attrs map[string]string
}

// parseSVG decodes the whole document with encoding/xml (failing on any
// malformation) and returns its elements.
func parseSVG(t *testing.T, doc string) []svgElement {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	var els []svgElement
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is not well-formed XML")
		switch x := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				require.Equal(t, "svg", x.Name.Local)
				require.Equal(t, "http://www.w3.org/2000/svg", x.Name.Space)
			}
			depth++
			e := svgElement{name: x.Name.Local, attrs: map[string]string{}}
			for _, a := range x.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			els = append(els, e)
		case xml.EndElement:
			depth--
		}
	}
	require.Equal(t, 1, roots, "one root element")
	return els
}

func elementsOf(els []svgElement, name, class string) []svgElement {
	var out []svgElement
	for _, e := range els {
		if e.name == name && e.attrs["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

// The plot is well-formed SVG with exactly one bar per service, coloured
// by its state.
func TestAnalyzePlotSVG(t *testing.T) {
	b := sampleBoot(t)
	// A name with XML metacharacters must not break the document.
	u := UnitOf(mustName(t, `<daemon "a<b>&c">`), []timeline.Change{change(1, "+require"), change(2, "+run"), change(3, "+started")}, 0)
	b.Units[u.Key] = u
	els := parseSVG(t, PlotSVG(b))
	bars := elementsOf(els, "rect", "bar")
	require.Len(t, bars, len(b.Units))
	states := map[string]int{}
	for _, bar := range bars {
		states[bar.attrs["data-state"]]++
		require.Equal(t, colour(bar.attrs["data-state"]), bar.attrs["fill"])
	}
	require.Equal(t, map[string]int{"ready": 2, "complete": 1, "failed": 1, "waiting": 1, "started": 1}, states)
	// Waiting to run is drawn for those that ran after their request.
	require.Len(t, elementsOf(els, "rect", "wait"), 5)
}

func TestAnalyzeGraph(t *testing.T) {
	b := sampleBoot(t)
	dot := GraphDOT(b)
	for _, want := range []string{
		`"<daemon heartbeat>" -> "<daemon hello>" [label="complete"];`,
		`"<daemon hello>" -> "<milestone services>" [label="ready"];`,
		`"<daemon app>" -> "<daemon db>" [label="ready"];`,
		`"<daemon db>" [fillcolor="#e53935", tooltip="failed"];`,
	} {
		require.Contains(t, dot, want)
	}
	require.True(t, strings.HasPrefix(dot, "digraph services {") && strings.HasSuffix(dot, "}\n"))
	els := parseSVG(t, GraphSVG(b))
	require.Len(t, elementsOf(els, "g", "node"), 5)
	require.Len(t, elementsOf(els, "path", "edge"), 3)
	// Dependees are drawn left of their dependents.
	depth := layers(b)
	require.Equal(t, 0, depth["<milestone services>"])
	require.Equal(t, 1, depth["<daemon hello>"])
	require.Equal(t, 2, depth["<daemon heartbeat>"])
}

// End to end: the server records the changes, the CLI fetches them through
// the admin socket and analyses them.
func TestAnalyzeCriticalChainSlack(t *testing.T) {
	b := &Boot{Origin: t0, Now: ms(100), Units: map[string]*Unit{}}
	a := UnitOf(preserves.Symbol("a"), []timeline.Change{change(0, "+require"), change(10, "+run"), change(20, "+ready")}, 0)
	d := UnitOf(preserves.Symbol("d"), []timeline.Change{change(0, "+require"), change(1, "+run"),
		{Time: ms(10).Add(3 * time.Microsecond), Asserted: true, Fact: preserves.Rec("service-state", preserves.Symbol("ready"))}}, 0)
	b.Units["a"], b.Units["d"] = a, d
	b.AddDep(preserves.Symbol("a"), mustName(t, "<service-state d ready>"))
	chain := CriticalChain(b, a)
	require.Len(t, chain, 2)
	require.Equal(t, "d", chain[1].Unit.Key)
}

// The timeline committed beside docs/operator.md is what plot draws for
// the shipped configuration: well-formed, one bar per service, the demo
// services among them, and displayed by the guide.
func TestDocsBootPlot(t *testing.T) {
	src, err := os.ReadFile("../../../docs/boot-plot.svg")
	require.NoError(t, err)
	els := parseSVG(t, string(src))
	bars := elementsOf(els, "rect", "bar")
	require.GreaterOrEqual(t, len(bars), 5)
	text := string(src)
	for _, name := range []string{"&lt;daemon heartbeat&gt;", "&lt;daemon hello&gt;", "&lt;milestone services&gt;"} {
		require.Equal(t, 1, strings.Count(text, `text-anchor="end">`+name+`<title>`), "one labelled bar for %s", name)
	}
	require.Equal(t, len(bars), strings.Count(text, `text-anchor="end">`), "one label per bar")
	graph, err := os.ReadFile("../../../docs/boot-graph.svg")
	require.NoError(t, err)
	require.Len(t, elementsOf(parseSVG(t, string(graph)), "path", "edge"), 2)
	guide, err := os.ReadFile("../../../docs/operator.md")
	require.NoError(t, err)
	require.Contains(t, string(guide), "![Timeline of the shipped configuration's boot](boot-plot.svg)")
	require.Contains(t, string(guide), "![Dependency graph of the shipped configuration](boot-graph.svg)")
}

// In the drawn graph, services with edges come first in their column, so
// an isolated service that started earlier does not push a chain down.
func TestAnalyzeGraphSVGLinkedFirst(t *testing.T) {
	b := &Boot{Origin: t0, Now: ms(100), Units: map[string]*Unit{}}
	for i, n := range []string{"z", "b", "a"} { // z starts first
		u := UnitOf(preserves.Symbol(n), []timeline.Change{change(i, "+run"), change(i+1, "+ready")}, 0)
		b.Units[u.Key] = u
	}
	b.AddDep(preserves.Symbol("a"), mustName(t, "<service-state b ready>"))
	svg := GraphSVG(b)
	parseSVG(t, svg)
	y := func(name string) string {
		m := regexp.MustCompile(`<rect x="[0-9.]+" y="([0-9.]+)"[^>]*><title>` + name + `: `).FindStringSubmatch(svg)
		require.NotNil(t, m, name)
		return m[1]
	}
	require.Equal(t, "20.0", y("b"), "b, linked, tops column 0")
	require.Equal(t, "20.0", y("a"), "a, its dependant, beside it in column 1")
	require.NotEqual(t, "20.0", y("z"), "z, isolated, below b")
}
