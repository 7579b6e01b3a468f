package schema_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// protocolDir holds the project's protocol schemas (the generated
// package dataspace/schemas lives beside them): the reference's 20
// modules and ours, ourModule, which no reference bundle holds.
const (
	protocolDir = "../../dataspace/schemas"
	ourModule   = "syndicateGo"
)

func readGolden(t *testing.T, name string) map[string]preserves.Value {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	v, err := preserves.DecodeBinary(bin, preserves.DecodeOptions{})
	require.NoError(t, err)
	rec, ok := v.(*preserves.Record)
	require.True(t, ok)
	out := map[string]preserves.Value{}
	for _, e := range rec.Fields[0].(*preserves.Dictionary).Entries() {
		path := e.Key.(preserves.Sequence)
		require.Len(t, path, 1)
		out[string(path[0].(preserves.Symbol))] = e.Value
	}
	return out
}

// ourAlternatives are the alternatives our copies of the reference
// schemas add, by definition.
var ourAlternatives = map[string]string{"sturdy.PCompound": "anyRec"}

func TestReaderMatchesGoldenBundles(t *testing.T) {
	golden := readGolden(t, "syndicate-protocols.bundle.bin")
	for k, v := range readGolden(t, "syndicate-server.bundle.bin") {
		golden[k] = v
	}
	require.Len(t, golden, 20)
	b, err := schema.ReadDir(protocolDir)
	require.NoError(t, err)
	require.Len(t, b.Modules, len(golden)+1)
	for _, m := range b.Modules {
		if m.Path.String() == ourModule {
			continue
		}
		want, ok := golden[m.Path.String()]
		require.True(t, ok, "module %s not in the golden bundles", m.Path)
		for _, d := range m.Definitions {
			// Our one extension of a reference schema (<rec L> in caveat
			// patterns, dataspace/schemas/doc.go): the last alternative.
			if ext, ok := ourAlternatives[m.Path.String()+"."+d.Name]; ok {
				require.Equal(t, ext, d.Or[len(d.Or)-1].Label)
				d.Or = d.Or[:len(d.Or)-1]
			}
		}
		got := m.Value()
		if !preserves.Equal(got, want) {
			// Narrow the report to the first differing definition.
			wd := want.(*preserves.Record).Fields[0].(*preserves.Dictionary)
			for _, d := range m.Definitions {
				defs, _ := wd.Get(preserves.Symbol("definitions"))
				w, _ := defs.(*preserves.Dictionary).Get(preserves.Symbol(d.Name))
				require.Equal(t, preserves.FormatText(w), preserves.FormatText(d.Value()), "%s.%s", m.Path, d.Name)
			}
			require.Equal(t, preserves.FormatText(want), preserves.FormatText(got), "module %s", m.Path)
		}
	}
}

func TestReaderRejects(t *testing.T) {
	cases := map[string]string{
		"no version":           "A = int .",
		"bad version":          "version 2 .",
		"unterminated":         "version 1 . A = int",
		"glued terminator":     "version 1 . A = int.",
		"duplicate definition": "version 1 . A = int . A = bool .",
		"mixed / and &":        "version 1 . A = int / bool & string .",
		"one alternative":      "version 1 . A = / int .",
		"unlabelled any":       "version 1 . A = int / bool .",
		"duplicate label":      "version 1 . A = =x / @x int .",
		"bound compound":       "version 1 . A = <a @b <c>> .",
		"bound definition":     "version 1 . A = @x int .",
		"float":                "version 1 . A = float .",
		"set of two":           "version 1 . A = #{int string} .",
		"include":              "version 1 . include \"x.prs\" .",
		"two bindings":         "version 1 . A = <a @x @y int> .",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := schema.ReadModule("t.prs", []byte(src), schema.ModulePath{"t"})
			require.Error(t, err)
			require.True(t, errors.Is(err, schema.ErrSchema), "%v", err)
		})
	}
}
