package schema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
	"github.com/syndicate-go/syndicate/preserves/schema/meta"
)

// TestMetaRoundTripsGoldenBundles: the metaschema's generated types parse
// the reference toolchain's bundles and write them back unchanged, and
// parse what the reader makes of every protocol schema.
func TestMetaRoundTripsGoldenBundles(t *testing.T) {
	n := 0
	for _, name := range []string{"syndicate-protocols.bundle.bin", "syndicate-server.bundle.bin"} {
		for path, mod := range readGolden(t, name) {
			s, err := meta.ParseSchema(mod)
			require.NoError(t, err, path)
			require.True(t, preserves.Equal(mod, s.ToValue()), path)
			n++
		}
	}
	require.Equal(t, 20, n)
	b, err := schema.ReadDir(protocolDir)
	require.NoError(t, err)
	bv := b.Value()
	bundle, err := meta.ParseBundle(bv)
	require.NoError(t, err)
	require.True(t, preserves.Equal(bv, bundle.ToValue()))
	require.Len(t, bundle.Modules, 20+1) // and ourModule
}

// TestMetaRejectsMalformedSchema: a broken abstract form fails with the
// path to the broken part.
func TestMetaRejectsMalformedSchema(t *testing.T) {
	v, err := preserves.ParseText(`<schema {version: 1 embeddedType: #f definitions: {A: <rec <lit a> <tuple [<atom Float>]>>}}>`)
	require.NoError(t, err)
	_, err = meta.ParseSchema(v)
	require.True(t, errors.Is(err, schema.ErrParse))
	var pe *schema.ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "[0][definitions][A]", join(pe.Path))
	require.Contains(t, join(pe.Deepest().Path), "[0][definitions][A]")
}

func join(ss []string) (s string) {
	for _, x := range ss {
		s += x
	}
	return s
}

func generate(t *testing.T, srcs map[string]string) error {
	t.Helper()
	_, err := generateSrc(t, srcs)
	return err
}

func generateSrc(t *testing.T, srcs map[string]string) (map[string][]byte, error) {
	t.Helper()
	b := &schema.Bundle{}
	for name, src := range srcs {
		m, err := schema.ReadModule(name+".prs", []byte(src), schema.ModulePath{name})
		require.NoError(t, err)
		b.Modules = append(b.Modules, m)
	}
	return schema.Generate(b, schema.Options{ImportPrefix: "example.com/x"})
}

// TestGenerateLabelConstants: every literal symbol that labels a record,
// at any depth, gets one exported constant Label + Mangle(label), which
// the parsers and ToValue use; labels shared by several records get one
// constant, and `<_>` (which mangles to nothing) and non-symbol labels
// none.
func TestGenerateLabelConstants(t *testing.T) {
	out, err := generateSrc(t, map[string]string{"t": `version 1 .
Req = <http-request @id int <inner-thing @x int>> .
Shape = @point <point @x int> / @pair <pair @a int> / @discard <_> .
Point = <point @z int> .
Str = <"point" @w int> .
`})
	require.NoError(t, err)
	src := string(out["t/t.go"])
	for _, want := range []string{
		"// LabelHttpRequest is the label of Req.\n\tLabelHttpRequest = preserves.Symbol(\"http-request\")",
		"LabelInnerThing = preserves.Symbol(\"inner-thing\")",
		"// LabelPoint is the label of ShapePoint, Point.\n\tLabelPoint = preserves.Symbol(\"point\")",
		"LabelPair = preserves.Symbol(\"pair\")",
		"schema.AsRecordOf(v, LabelHttpRequest, 2)",
		"preserves.NewRecord(LabelHttpRequest, ",
		"preserves.NewRecord(LabelInnerThing, ",
		"schema.AsRecordOf(v, preserves.Symbol(\"_\"), 0)",
		"schema.AsRecordOf(v, preserves.String(\"point\"), 1)",
	} {
		require.Contains(t, src, want)
	}
	require.Equal(t, 1, strings.Count(src, "LabelPoint ="), "one constant per label")
	require.NotContains(t, src, "Label =")
	require.NotContains(t, src, `preserves.Symbol("point")`+")", "the parsers use the constant")

	err = generate(t, map[string]string{"t": "version 1 . LabelA = int . B = <a @x int> ."})
	require.True(t, errors.Is(err, schema.ErrSchema), "%v", err)
	require.Contains(t, err.Error(), "t.prs:1:")
	require.Contains(t, err.Error(), "LabelA is already taken")
}

func TestGenerateRejects(t *testing.T) {
	cases := map[string]string{
		"unresolved":        "version 1 . A = <a @b B> .",
		"unresolved module": "version 1 . A = <a @b m.B> .",
		"unresolved in #:":  "version 1 . A = #:B .",
		"anonymous int":     "version 1 . A = <point int int> .",
		"anonymous tail":    "version 1 . A = [@a int string ...] .",
		"left recursion":    "version 1 . A = B . B = A .",
		"left recursion /":  "version 1 . A = B / <x> . B = A .",
		"duplicate binding": "version 1 . A = <a @x int @x string> .",
		"duplicate & bind":  "version 1 . A = <a @x int> & <a @x int> .",
		"name collision":    "version 1 . Shape = @point <p> / <q> . ShapePoint = int .",
		"label collision":   "version 1 . A = @on-error <p> / @onError <q> .",
		"method name":       "version 1 . A = <a @toValue int> .",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			err := generate(t, map[string]string{"t": src})
			require.Error(t, err)
			require.True(t, errors.Is(err, schema.ErrSchema), "%v", err)
			require.Contains(t, err.Error(), "t.prs:1:", "the error names its place")
		})
	}
	require.NoError(t, generate(t, map[string]string{
		"t": "version 1 . A = <a @x m.B> . C = <c @l [C ...]> / #f .",
		"m": "version 1 . B = int .",
	}))
}

func TestMangle(t *testing.T) {
	for in, want := range map[string]string{
		"on-error": "OnError", "application/syndicate": "ApplicationSyndicate",
		"pathStep": "PathStep", "2d": "X2d", "caused-by": "CausedBy",
	} {
		require.Equal(t, want, schema.Mangle(in))
	}
}
