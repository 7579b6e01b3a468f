package format

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script"
)

func fmtString(t *testing.T, src string) string {
	t.Helper()
	out, err := Source("t.pr", []byte(src))
	require.NoError(t, err)
	again, err := Source("t.pr", out)
	require.NoError(t, err)
	require.Equal(t, string(out), string(again), "formatting is idempotent")
	return string(out)
}

func TestLayout(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"one instruction per line", `<a>   <b 1>`, "<a>\n<b 1>\n"},
		{"during with block body", "? <x ?y>[<z $y>   ! <m>]", "? <x ?y> [\n  <z $y>\n  ! <m>\n]\n"},
		{"let and join stay on one line", "let ?d = join \"/\" [$a \"b\"]\nlet ?s =\n stringify $d", "let ?d = join \"/\" [$a \"b\"]\nlet ?s = stringify $d\n"},
		{"retarget", "$log\n! <log \"-\" {line: \"x\"}>", "$log ! <log \"-\" {line: \"x\"}>\n"},
		{"empty block", "? <x> []", "? <x> []\n"},
		{"on stop", "?- [ <a> ]", "?- [\n  <a>\n]\n"},
		{"conditional", "$x =~ <a ?b> [<c $b>] <d>", "$x =~ <a ?b> [\n  <c $b>\n]\n<d>\n"},
		{"comments on their own lines", "<a>\n# about b\n<b> ? <c> # body\n[<d>]",
			"<a>\n# about b\n<b>\n? <c>\n# body\n[\n  <d>\n]\n"},
		{"a trailing comment stays on its line", "<a 1>  # about a\n<b 2> # about b\n# before c\n<c>",
			"<a 1>  # about a\n<b 2>  # about b\n# before c\n<c>\n"},
		{"a trailing comment in a block", "? <x> [<a> # about a\n<b>]", "? <x> [\n  <a>  # about a\n  <b>\n]\n"},
		{"a blank line after a header comment stays", "# header\n\n<a>\n# about b\n<b>",
			"# header\n\n<a>\n# about b\n<b>\n"},
		{"header, blank, comment", "# header\n\n# about a\n<a>", "# header\n\n# about a\n<a>\n"},
		{"blank lines kept once", "<a>\n\n\n<b>\n<c>\n\n# x\n<d>", "<a>\n\n<b>\n<c>\n\n# x\n<d>\n"},
		{"blank lines inside blocks", "[<a>\n\n<b>]", "[\n  <a>\n\n  <b>\n]\n"},
		{"trailing comments", "<a>\n\n# the end\n# really", "<a>\n\n# the end\n# really\n"},
		{"only comments", "# nothing here\n", "# nothing here\n"},
		// Issue 26: fmt keeps the author's order of dictionary keys.
		{"canonical atoms, the author's key order", "<a 1.50 {z: 1 a: 2}>", "<a 1.5 {z: 1, a: 2}>\n"},
		{"grouped keys stay grouped", "<daemon d {argv: \"x\"\n\n  user: \"web\" group: \"web\"\n  restart: always}>",
			"<daemon d {argv: \"x\", user: \"web\", group: \"web\", restart: always}>\n"},
		{"long daemon hangs", `<daemon d {argv: ["sh" "-c" "a very long command line that does not fit on one line"] restart: always}>`,
			"<daemon d {\n  argv: [\"sh\" \"-c\" \"a very long command line that does not fit on one line\"]\n  restart: always\n}>\n"},
		{"interpreter line", "#!/usr/bin/env syndicate-server\n<a>", "#!/usr/bin/env syndicate-server\n<a>\n"},
		{"empty file", "", ""},
		{"blank lines between comments kept", "# header\n\n\n# about a\n# more\n<a>\n\n# x\n\n# y\n<b>",
			"# header\n\n# about a\n# more\n<a>\n\n# x\n\n# y\n<b>\n"},
		{"nested records hang", `<require-service <config-watcher $servicesDir {config: $servicesConfig, log: $log, gatekeeper: $gatekeeper}>>`,
			"<require-service <config-watcher $servicesDir {\n  config: $servicesConfig\n  log: $log\n  gatekeeper: $gatekeeper\n}>>\n"},
		{"argv of atoms stays on one line", `<daemon d ["sh" "-c" "a very long command line that does not fit on one line at all, really"]>`,
			"<daemon d [\"sh\" \"-c\" \"a very long command line that does not fit on one line at all, really\"]>\n"},
		{"comment on a dictionary key", "<daemon d {# the program\nargv: \"x\"}>", "<daemon d {\n  # the program\n  argv: \"x\"\n}>\n"},
		{"comments inside a block", "? <a> [\n# first\n\n# second\n<b>]", "? <a> [\n  # first\n\n  # second\n  <b>\n]\n"},
		{"nested block indentation", "? <a> [? <b> [<c {k: \"v\"}>]]", "? <a> [\n  ? <b> [\n    <c {k: \"v\"}>\n  ]\n]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, fmtString(t, c.in))
		})
	}
}

func TestSyntaxErrorHasPosition(t *testing.T) {
	_, err := Source("bad.pr", []byte("<a>\n  <b"))
	var se *script.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "bad.pr", se.Pos.File)
	require.Equal(t, 2, se.Pos.Line)
	require.True(t, errors.Is(err, preserves.ErrUnexpectedEOF))
}

// sameValues checks that formatting kept every value and comment.
func sameValues(t *testing.T, name string, a, b []byte) {
	t.Helper()
	opts := preserves.TextOptions{Annotations: true}
	va, errA := preserves.ReadAllText(append(append([]byte(nil), a...), "\n[]"...), opts)
	vb, errB := preserves.ReadAllText(append(append([]byte(nil), b...), "\n[]"...), opts)
	require.NoError(t, errA, name)
	require.NoError(t, errB, name)
	require.Equal(t, len(va), len(vb), name)
	for i := range va {
		require.True(t, preserves.Equal(va[i], vb[i]), "%s: value %d changed", name, i)
		require.Equal(t, comments(va[i]), comments(vb[i]), "%s: comments of value %d changed", name, i)
	}
}

func comments(v preserves.Value) []string {
	var out []string
	var walk func(v preserves.Value)
	walk = func(v preserves.Value) {
		if a, ok := v.(*preserves.Annotated); ok {
			for _, x := range a.Anns {
				out = append(out, preserves.FormatText(x))
			}
			v = a.Item
		}
		switch x := v.(type) {
		case *preserves.Record:
			walk(x.Label)
			for _, f := range x.Fields {
				walk(f)
			}
		case preserves.Sequence:
			for _, e := range x {
				walk(e)
			}
		case *preserves.Set:
			for _, e := range x.Elems() {
				walk(e)
			}
		case *preserves.Dictionary:
			for _, e := range x.Entries() {
				walk(e.Key)
				walk(e.Value)
			}
		}
	}
	walk(v)
	return out
}

// moduleRoot finds the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found")
		dir = parent
	}
}

// TestIdempotentOnRepository formats every .pr file of the module: the
// result must keep the values and comments, formatting it again must change
// nothing, and it must still compile exactly as well as the original.
func TestIdempotentOnRepository(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".pr") {
			return nil
		}
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, path)
		out, err := Source(rel, src)
		if err != nil {
			// Test data with deliberate syntax errors: the formatter must
			// report them as the script reader does.
			_, rerr := script.ReadValues(rel, src)
			require.NotNil(t, rerr, "%s: formatter failed but the script reader did not: %v", rel, err)
			return nil
		}
		n++
		again, err := Source(rel, out)
		require.NoError(t, err, rel)
		require.Equal(t, string(out), string(again), "%s: formatting twice changes nothing", rel)
		sameValues(t, rel, src, out)
		_, before := script.ParseFile(rel, src)
		_, after := script.ParseFile(rel, out)
		require.Equal(t, len(before), len(after), "%s: formatting changes no script error count", rel)
		require.False(t, bytes.Contains(out, []byte("\n\n\n")), rel)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, n, 3, "some .pr files were formatted")
	t.Logf("formatted %d files", n)
}

func FuzzSource(f *testing.F) {
	f.Add([]byte("? <a ?x> [<b $x>]\n# c\n<d>"))
	f.Add([]byte("let ?x = join \"/\" [\"a\"]\n\n$log ! <log>"))
	f.Add([]byte("@0#"))
	f.Add([]byte("<a #{1 2} #\"bytes\" #x\"00ff\" |sym bol| #:<e>>\n# trailing"))
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Source("f.pr", src)
		if err != nil {
			return
		}
		again, err := Source("f.pr", out)
		if err != nil {
			t.Fatalf("formatted output does not read back: %v\n%s", err, out)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("not idempotent:\n%s\n---\n%s", out, again)
		}
	})
}
