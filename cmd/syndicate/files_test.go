package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/relay/noisesession"
	"github.com/syndicate-go/syndicate/preserves"
)

func TestCheckReportsPositions(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.pr"), []byte(
		"<daemon web {argv: [], restart: sometimes}>\n? <x ?y>\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.pr"), []byte("<require-service <daemon web>>\n"), 0o644))
	code, out, errs := cliRun(t, "check", dir)
	require.Equal(t, 1, code)
	a := filepath.Join(dir, "a.pr")
	require.Equal(t,
		a+":1:20: argv: the command line is empty: it needs at least a program\n"+
			a+":1:33: restart: expected one of always, on-error, all, never, got sometimes\n"+
			a+":2:1: ? <x ?y> needs an instruction\n", out)
	require.Equal(t, "syndicate: 3 error(s)\n", errs)

	// Checked alone, ok.pr requires a daemon declared nowhere: a warning
	// (exit 0); the whole-tree analysis is in script/validate.
	code, out, _ = cliRun(t, "check", filepath.Join(dir, "ok.pr"))
	require.Equal(t, 0, code)
	require.Contains(t, out, "ok.pr:1:1: warning: no <daemon web …> declaration in the checked files")

	code, _, errs = cliRun(t, "check")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "check needs FILE or DIR")
}

func TestFmt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.pr")
	require.NoError(t, os.WriteFile(path, []byte("# hello\n<a>   ? <b ?x> [<c $x>]\n"), 0o640))
	want := "# hello\n<a>\n? <b ?x> [\n  <c $x>\n]\n"

	code, out, _ := cliRun(t, "fmt", path)
	require.Equal(t, 0, code)
	require.Equal(t, want, out)

	code, out, _ = cliRun(t, "fmt", "-l", path)
	require.Equal(t, 0, code)
	require.Equal(t, path+"\n", out)

	// --check changes nothing, lists the file and exits 1.
	code, out, _ = cliRun(t, "fmt", "--check", path)
	require.Equal(t, 1, code)
	require.Equal(t, path+"\n", out)

	code, out, _ = cliRun(t, "fmt", "-w", path)
	require.Equal(t, 0, code)
	require.Empty(t, out)
	code, out, _ = cliRun(t, "fmt", "--check", path)
	require.Equal(t, 0, code, "a formatted file passes --check")
	require.Empty(t, out)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "mode kept")

	code, out, _ = cliRun(t, "fmt", "-l", path)
	require.Equal(t, 0, code)
	require.Empty(t, out, "formatted file is stable")

	require.NoError(t, os.WriteFile(path, []byte("<a\n"), 0o644))
	code, _, errs := cliRun(t, "fmt", path)
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(errs, path+":2:1: "), errs)
}

// TestFmtIdempotentOnRepository runs `syndicate fmt` over every .pr file of
// the module, then over its own output: the second pass changes nothing.
func TestFmtIdempotentOnRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	out := t.TempDir()
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".pr") {
			return nil
		}
		code, first, _ := cliRun(t, "fmt", path)
		if code != 0 {
			return nil // deliberately broken test data
		}
		n++
		copy := filepath.Join(out, "f.pr")
		require.NoError(t, os.WriteFile(copy, []byte(first), 0o644))
		code, list, errs := cliRun(t, "fmt", "-l", copy)
		require.Equal(t, 0, code, errs)
		require.Empty(t, list, "%s: formatting twice changes nothing", path)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, n, 3)
}

func TestDisasm(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pr")
	require.NoError(t, os.WriteFile(good, []byte("? <a ?x> [\n  $config ! <b $x>\n]\n"), 0o644))
	code, out, errs := cliRun(t, "disasm", good)
	require.Equal(t, 0, code, errs)
	require.Equal(t, `program "`+good+`" version 3 instructions 4
1:1     during $config <group <rec a> {0: <bind <_>>}> -> [x]
1:10      seq
2:11        send $config <b $x>
`, out)

	bad := filepath.Join(dir, "bad.pr")
	require.NoError(t, os.WriteFile(bad, []byte("<a>\n? <b ?x>\n"), 0o644))
	code, out, errs = cliRun(t, "disasm", good, bad, filepath.Join(dir, "missing.pr"))
	require.Equal(t, 1, code)
	require.Contains(t, out, `program "`+good+`"`, "good files are still listed")
	require.Contains(t, out, bad+":2:1: ? <b ?x> needs an instruction\n")
	require.Contains(t, errs, "missing.pr: no such file or directory")
	require.Contains(t, errs, "syndicate: 2 error(s)\n")

	code, _, errs = cliRun(t, "disasm")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "disasm needs FILE")
}

func TestNoiseKey(t *testing.T) {
	code, out, errs := cliRun(t, "noise-key", `"config"`)
	require.Equal(t, 0, code, errs)
	v, err := preserves.ParseText(strings.TrimSpace(out))
	require.NoError(t, err)
	spec, err := noisesession.ParseSpec(v, true)
	require.NoError(t, err, "the printed dictionary is a valid NoiseServiceSpec")
	require.Equal(t, preserves.String("config"), spec.Service)

	_, again, _ := cliRun(t, "noise-key", `"config"`)
	require.NotEqual(t, out, again, "every run makes a fresh key")

	code, _, errs = cliRun(t, "noise-key", "<a")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--service: bad value at 1:3:")
}

// Warnings are printed with their place but do not fail the check; a legacy
// `;` comment is an error that names the fix.
func TestCheckWarningsAndLegacyComments(t *testing.T) {
	dir := t.TempDir()
	net := filepath.Join(dir, "net.pr")
	require.NoError(t, os.WriteFile(net, []byte("let ?n = <* $config [<reject <not <rec Observe>>>]>\n"), 0o644))
	code, out, errs := cliRun(t, "check", net)
	require.Equal(t, 0, code)
	require.Contains(t, out, net+":1:30: warning: <not <rec Observe>> is a literal here")
	require.Contains(t, out, "<or [<accept <Observe _ _>>]>")
	require.Equal(t, "syndicate: 1 warning(s)\n", errs)

	old := filepath.Join(dir, "old.pr")
	require.NoError(t, os.WriteFile(old, []byte("; a comment from before 2023\n<a>\n"), 0o644))
	code, out, errs = cliRun(t, "check", old)
	require.Equal(t, 1, code)
	require.Contains(t, out, old+":1:1: unexpected ';': ';' comments are legacy Preserves syntax, replaced by '#'")
	require.Contains(t, out, "syndicate fmt --upgrade")
	require.Equal(t, "syndicate: 1 error(s)\n", errs)
}

func TestFmtUpgrade(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.pr")
	require.NoError(t, os.WriteFile(old, []byte(";; boot\n<require-service   <daemon a>> ; why\n"), 0o644))
	bad := filepath.Join(dir, "bad.pr")
	badSrc := "[<a> ; last\n]\n"
	require.NoError(t, os.WriteFile(bad, []byte(badSrc), 0o644))
	code, out, errs := cliRun(t, "fmt", "--upgrade", old, bad)
	require.Equal(t, 1, code)
	require.Equal(t, old+": 2 comment(s) upgraded\n", out)
	require.Contains(t, errs, bad+":2:1: unexpected ']'")
	got, err := os.ReadFile(old)
	require.NoError(t, err)
	require.Equal(t, "# boot\n<require-service   <daemon a>> # why\n", string(got))
	got, err = os.ReadFile(bad)
	require.NoError(t, err)
	require.Equal(t, badSrc, string(got), "a file that would not read is left alone")
	code, _, _ = cliRun(t, "check", old)
	require.Equal(t, 0, code)
}

// Hostile case (issue 12): a keyed bind in $config while $config is handed
// out attenuated with Observe allowed; check warns (exit status 0) and
// names both places.
func TestCheckWarnsAboutExposedBinds(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.pr"), []byte(
		"let ?u = <* $config [<reject <forbidden _>>]>\n<require-service <config-watcher \"/x\" {config: $u}>>\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.pr"), []byte(
		"<bind <ref {oid: \"config\", key: #\"k\"}> $config #f>\n"), 0o644))
	code, out, errs := cliRun(t, "check", dir)
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `b\.pr:1:1: warning: this bind holds a key and is asserted into \$config, which is handed out attenuated at .*a\.pr:1:10`, out)
	require.Contains(t, errs, "1 warning")
}
