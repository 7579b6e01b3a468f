package validate

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestValidDeclarations(t *testing.T) {
	src, err := os.ReadFile("testdata/valid.pr")
	require.NoError(t, err)
	require.Empty(t, Source("testdata/valid.pr", src))
	_, errs := script.ParseFile("testdata/valid.pr", src)
	require.Empty(t, errs, "the valid test script compiles")
}

// TestInvalidDeclarations checks every validation message, with its exact
// position, against testdata/invalid.golden.
func TestInvalidDeclarations(t *testing.T) {
	src, err := os.ReadFile("testdata/invalid.pr")
	require.NoError(t, err)
	_, cerrs := script.ParseFile("testdata/invalid.pr", src)
	require.Empty(t, cerrs, "the invalid declarations still compile: only validation rejects them")
	errs := Source("testdata/invalid.pr", src)
	var lines []string
	for _, e := range errs {
		require.True(t, errors.Is(e, ErrInvalid), e.Error())
		lines = append(lines, e.Error())
	}
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		require.NoError(t, os.WriteFile("testdata/invalid.golden", []byte(got), 0o644))
	}
	want, err := os.ReadFile("testdata/invalid.golden")
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

func TestCheckAllMergesCompileAndValidationErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.pr"), []byte("<daemon x {argv: \"x\", restart: sometimes}>\n? <y>\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".hidden"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".hidden", "b.pr"), []byte("<daemon z []>"), 0o644))
	err := CheckAll(dir)
	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 2, "%v", err)
	a := filepath.Join(dir, "a.pr")
	require.Equal(t, a+":1:32: restart: expected one of always, on-error, all, never, got sometimes", list[0].Error())
	require.True(t, errors.Is(list[0], ErrInvalid))
	require.Equal(t, a+":2:1", list[1].Pos.String())
	require.True(t, errors.Is(list[1], script.ErrScript))

	require.Error(t, CheckAll(filepath.Join(dir, "missing.pr")), "I/O errors are reported")
	require.Error(t, CheckAll(filepath.Join(dir, ".hidden")), "a directory named explicitly is searched even when hidden")
}

func TestDeclaration(t *testing.T) {
	gk := preserves.NewEmbedded("a capability")
	ok := preserves.Rec("require-service", preserves.Rec("relay-listener",
		preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(9001)), gk))
	require.Empty(t, Declaration(ok), "an embedded value is a capability")

	bad, err := preserves.ParseText(`<daemon x {argv: "x", restart: sometimes}>`)
	require.NoError(t, err)
	errs := Declaration(bad)
	require.Len(t, errs, 1)
	require.Equal(t, "restart: expected one of always, on-error, all, never, got sometimes", errs[0].Error(),
		"without positions the message stands alone")
	require.ErrorIs(t, errs[0], ErrInvalid)

	withPos, err := preserves.ParseTextOptions([]byte("<require-service <daemon a b>>"), preserves.TextOptions{Positions: true, File: "x.pr"})
	require.NoError(t, err)
	require.Equal(t, "x.pr:1:18: daemon: a daemon service is named <daemon ID>, with one field, not 2 (the spec goes in a separate <daemon ID SPEC> assertion)",
		Declaration(withPos)[0].Error())
}

func FuzzSource(f *testing.F) {
	f.Add([]byte("<daemon a {argv: [\"x\"], restart: sometimes}>"))
	f.Add([]byte("<require-service <relay-listener <tcp \"h\" 1> $gk>>"))
	f.Add([]byte("<depends-on <daemon a> <service-state <daemon b> ready>>"))
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, e := range Source("f.pr", src) {
			if !e.Pos.IsValid() {
				t.Fatalf("error without a position: %v", e)
			}
		}
	})
}
