package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// generated lists the files holding a //go:generate line for this command.
var generated = []string{
	"../../dataspace/schemas/doc.go",
	"../../preserves/schema/meta/doc.go",
	"../../preserves/schema/example/doc.go",
}

// TestGeneratedCodeIsCurrent regenerates, with the arguments of each
// //go:generate line, into a scratch directory and compares with the
// checked-in code: it fails (and so does CI) when a schema or the
// generator changed and `go generate ./...` was not run.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	for _, doc := range generated {
		t.Run(doc, func(t *testing.T) {
			src, err := os.ReadFile(doc)
			require.NoError(t, err)
			var args []string
			for _, line := range strings.Split(string(src), "\n") {
				if _, rest, ok := strings.Cut(line, "//go:generate go run "); ok {
					args = strings.Fields(rest)[1:]
				}
			}
			require.NotEmpty(t, args, "no //go:generate line in %s", doc)
			dir := filepath.Dir(doc)
			scratch := t.TempDir()
			var out string
			for i := range args {
				if i > 0 && args[i-1] == "-o" {
					out = filepath.Join(dir, args[i])
					args[i] = scratch
				}
			}
			args[len(args)-1] = filepath.Join(dir, args[len(args)-1])
			require.NoError(t, run(args))
			n := 0
			err = filepath.WalkDir(scratch, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(scratch, p)
				want, err := os.ReadFile(p)
				require.NoError(t, err)
				got, err := os.ReadFile(filepath.Join(out, rel))
				require.NoError(t, err, "%s is not checked in: run go generate ./...", rel)
				require.Equal(t, string(want), string(got), "%s is stale: run go generate ./...", rel)
				n++
				return nil
			})
			require.NoError(t, err)
			require.NotZero(t, n)
		})
	}
}

func TestRunRejectsBadSchemas(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.prs"), []byte("version 1 .\nA = <a @b Missing> .\n"), 0o644))
	err := run([]string{"-o", t.TempDir(), dir})
	require.ErrorContains(t, err, "a.prs:2:11: module a has no definition Missing")
	require.Error(t, run([]string{"-o", t.TempDir()}))
	require.Error(t, run([]string{"-alias", "nonsense", dir}))
}
