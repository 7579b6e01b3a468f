package example_test

import (
	"errors"
	"fmt"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
	"github.com/syndicate-go/syndicate/preserves/schema/example/draw"
	"github.com/syndicate-go/syndicate/preserves/schema/example/geo"
)

func val(t *testing.T, src string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(src)
	require.NoError(t, err)
	return v
}

// parsers of every definition, by name, returning the host value as a
// thing with ToValue.
var parsers = map[string]func(preserves.Value) (interface{ ToValue() preserves.Value }, error){
	"Color":    wrap(draw.ParseColor),
	"Point":    wrap(draw.ParsePoint),
	"Tags":     wrap(draw.ParseTags),
	"Shape":    wrap(draw.ParseShape),
	"Layer":    wrap(draw.ParseLayer),
	"Style":    wrap(draw.ParseStyle),
	"Dash":     wrap(draw.ParseDash),
	"Envelope": wrap(draw.ParseEnvelope),
	"Magic":    wrap(draw.ParseMagic),
	"Header":   wrap(draw.ParseHeader),
	"Names":    wrap(draw.ParseNames),
	"Index":    wrap(draw.ParseIndex),
	"Nop":      wrap(draw.ParseNop),
	"Alias":    wrap(draw.ParseAlias),
	"Count":    wrap(draw.ParseCount),
}

func wrap[T interface{ ToValue() preserves.Value }](f func(preserves.Value) (T, error)) func(preserves.Value) (interface{ ToValue() preserves.Value }, error) {
	return func(v preserves.Value) (interface{ ToValue() preserves.Value }, error) {
		x, err := f(v)
		if err != nil {
			return nil, err
		}
		return x, nil
	}
}

// TestRoundTrip: canonical values parse, and ToValue gives them back.
func TestRoundTrip(t *testing.T) {
	cases := []struct{ def, src string }{
		{"Color", "dark-blue"}, {"Color", "red"},
		{"Point", "[1.0 2.5]"},
		{"Tags", "#{a b}"}, {"Tags", "#{}"},
		{"Shape", "<circle [0.0 0.0] 2.0>"},
		{"Shape", "<polygon [0.0 0.0]>"},
		{"Shape", "<polygon [0.0 0.0] [1.0 1.0] [2.0 0.0]>"},
		{"Shape", "[3.0 4.0]"}, {"Shape", `#"xyz"`},
		{"Layer", `<layer "bg" #t [<circle [0.0 0.0] 1.0>] #{x} #:cap>`},
		{"Style", "{stroke: red width: 2}"},
		{"Style", "{stroke: red width: 2 dash: [1 2]}"},
		{"Envelope", "<event v1 42>"},
		{"Magic", "[1 2]"},
		{"Header", `["DRAW" 7 <region "north"> <region "south">]`},
		{"Header", `["DRAW" 123456789012345678901234567890]`},
		{"Names", `{"a": [1.0 2.0] "b": [3.0 4.0]}`},
		{"Index", `{[1.0 2.0]: [a b] [0.0 0.0]: []}`},
		{"Nop", "#f"}, {"Alias", "[1.0 2.0]"}, {"Count", "-5"},
	}
	for _, c := range cases {
		t.Run(c.def+" "+c.src, func(t *testing.T) {
			v := val(t, c.src)
			x, err := parsers[c.def](v)
			require.NoError(t, err)
			got := x.ToValue()
			require.True(t, preserves.Equal(v, got), "%s → %s", c.src, preserves.FormatText(got))
			y, err := parsers[c.def](got)
			require.NoError(t, err)
			require.Equal(t, x, y, "parse(ToValue(x)) == x")
		})
	}
}

// TestExtensibility: records, tuples and dictionaries accept more than
// they mention, and ToValue drops what parsing ignored.
func TestExtensibility(t *testing.T) {
	cases := []struct{ def, src, back string }{
		{"Point", `[1.0 2.5 "note"]`, "[1.0 2.5]"},
		{"Shape", `<circle [0.0 0.0] 2.0 "extra">`, "<circle [0.0 0.0] 2.0>"},
		{"Envelope", "<event v1 42 43>", "<event v1 42>"},
		// @on fails on the bad key, @off {} accepts: first match wins.
		{"Style", `{stroke: red width: 2 dash: "x"}`, "{stroke: red width: 2}"},
	}
	for _, c := range cases {
		x, err := parsers[c.def](val(t, c.src))
		require.NoError(t, err, c.src)
		require.True(t, preserves.Equal(val(t, c.back), x.ToValue()), "%s → %s", c.src, preserves.FormatText(x.ToValue()))
	}
}

// TestRejects: malformed values fail with ErrParse and the path to the
// part that is wrong.
func TestRejects(t *testing.T) {
	cases := []struct{ def, src, path string }{
		{"Color", "darkBlue", ""},
		{"Color", `"red"`, ""},
		{"Point", "[1 2]", "[0]"},
		{"Point", "[1.0]", ""},
		{"Point", "<p 1.0 2.0>", ""},
		{"Tags", "[a b]", ""},
		{"Tags", `#{a "b"}`, "[0]"},
		{"Shape", "<polygon>", ""},
		{"Shape", "<polygon [0.0 0.0] 7>", ""},
		{"Shape", "<square 1.0>", ""},
		{"Layer", `<layer "bg" #t [] #{} cap>`, "[4]"},
		{"Layer", `<layer "bg" #t [<square>] #{} #:cap>`, "[2][0]"},
		{"Style", "{stroke: red}", ""},
		{"Style", "{stroke: red width: 2.0}", "[width]"},
		{"Envelope", "<event v2 42>", "[0]"},
		{"Envelope", "<event v1>", ""},
		{"Envelope", `<"event" v1 42>`, ".label"},
		{"Magic", "[1 2 3]", ""},
		{"Header", `["DRAW" 7 <region "north"> 8]`, "[3]"},
		{"Header", "[DRAW 7]", "[0]"},
		{"Header", `["DRAW"]`, ""},
		{"Names", `{a: [1.0 2.0]}`, "[a]"},
		{"Nop", "#t", ""},
	}
	for _, c := range cases {
		t.Run(c.def+" "+c.src, func(t *testing.T) {
			_, err := parsers[c.def](val(t, c.src))
			require.Error(t, err)
			require.True(t, errors.Is(err, schema.ErrParse))
			var pe *schema.ParseError
			require.True(t, errors.As(err, &pe))
			path := ""
			for _, s := range pe.Path {
				path += s
			}
			require.Equal(t, c.path, path, "%v", err)
		})
	}
}

// TestAlternationErrors: a failed alternation keeps every alternative's
// reason, and Deepest points into the one that got furthest.
func TestAlternationErrors(t *testing.T) {
	_, err := draw.ParseShape(val(t, "<polygon [0.0 0.0] 7>"))
	var pe *schema.ParseError
	require.True(t, errors.As(err, &pe))
	require.Len(t, pe.Alternatives, 4)
	require.Equal(t, "polygon", pe.Alternatives[1].Label)
	require.Equal(t, []string{"[1]"}, pe.Deepest().Path)
}

// TestErrorPositions: a value read with positions names file:line:col of
// the part that is wrong.
func TestErrorPositions(t *testing.T) {
	v, err := preserves.ParseTextOptions([]byte("<layer \"bg\" #t\n  [<circle [0.0 0.0] 1.0>]\n  #{x}\n  nope>"),
		preserves.TextOptions{File: "scene.pr", Positions: true})
	require.NoError(t, err)
	_, err = draw.ParseLayer(v)
	require.Error(t, err)
	var pe *schema.ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "scene.pr:4:3", pe.Pos.String())
	require.Equal(t, "scene.pr:4:3: at [4]: expected an embedded value (a capability), got nope", err.Error())
}

// TestWildcards: a Wildcard stands for an unknown part and matches any
// pattern, so a checker sees only the errors in what is known.
func TestWildcards(t *testing.T) {
	w := preserves.NewEmbedded(schema.Wildcard{})
	_, err := draw.ParseLayer(preserves.Rec("layer", w, preserves.Bool(true), w, w, w))
	require.NoError(t, err)
	_, err = draw.ParseLayer(w)
	require.NoError(t, err, "a whole unknown value")
	_, err = draw.ParseStyle(w)
	require.NoError(t, err)
	_, err = draw.ParseHeader(preserves.Sequence{w, w})
	require.NoError(t, err)
	_, err = draw.ParseLayer(preserves.Rec("layer", w, preserves.Int(1), w, w, w))
	var pe *schema.ParseError
	require.True(t, errors.As(err, &pe), "known parts are still checked")
	require.Equal(t, []string{"[1]"}, pe.Path)
	c, err := draw.ParseColor(w)
	require.NoError(t, err)
	require.Equal(t, draw.ColorRed, c)
}

func TestHostValues(t *testing.T) {
	s, err := draw.ParseStyle(val(t, "{stroke: dark-blue width: 3 dash: [1 2]}"))
	require.NoError(t, err)
	require.Equal(t, draw.Style{Stroke: draw.ColorDarkBlue, Width: big.NewInt(3),
		Dash: draw.DashOn{Dash: []*big.Int{big.NewInt(1), big.NewInt(2)}}}, s)
	require.Equal(t, "dark-blue", s.Stroke.String())
	h, err := draw.ParseHeader(val(t, `["DRAW" 7 <region "north">]`))
	require.NoError(t, err)
	require.Equal(t, []geo.Region{{Name: "north"}}, h.Extra)
	// An intersection whose hand-built parts disagree cannot be unparsed.
	bad := draw.Style{Stroke: draw.ColorRed, Width: big.NewInt(1), Dash: badDash{}}
	require.Panics(t, func() { bad.ToValue() })
}

// badDash is a Dash only in name: its value collides with Style's keys.
type badDash struct{ draw.DashOff }

func (badDash) ToValue() preserves.Value {
	return preserves.Dict(preserves.Symbol("width"), preserves.Int(9))
}

// Example shows the code preserves-schema-go generates for draw.prs in
// use: parse a value, read its fields, write it back, name a label.
func Example() {
	v, _ := preserves.ParseText(`<layer "sketch" #t [<circle [0.0 0.0] 2.0> [3.0 4.0]] #{draft} #:owner>`)
	layer, err := draw.ParseLayer(v)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range layer.Shapes {
		switch s := s.(type) {
		case draw.ShapeCircle:
			fmt.Println("circle of radius", s.Radius)
		case draw.ShapePoint:
			fmt.Println("point", s.Value.X, s.Value.Y)
		}
	}
	layer.Visible = false
	fmt.Println(preserves.FormatText(layer.ToValue()))

	// Every record label is a constant too, for code that matches
	// records without parsing them (dataspace patterns, quick checks).
	fmt.Println(v.(*preserves.Record).Label == draw.LabelLayer, draw.LabelLayer)

	_, err = draw.ParseLayer(preserves.Rec("layer", preserves.String("x"), preserves.Bool(true), preserves.Sequence{preserves.Int(1)}))
	fmt.Println(err)
	// Output:
	// circle of radius 2
	// point 3 4
	// <layer "sketch" #f [<circle [0.0 0.0] 2.0> [3.0 4.0]] #{draft} #:owner>
	// true layer
	// expected at least 5 fields, got <layer "x" #t [1]>
}
