package validate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/script"
)

func writeTree(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	return dir
}

func messages(dir string, l script.ErrorList) []string {
	var out []string
	for _, e := range l {
		out = append(out, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
	}
	return out
}

func TestAnalyzeWholeTree(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"app.pr": `<require-service <daemon app>>
<daemon app "app">
<depends-on <daemon app> <service-state <daemon postgress> ready>>
$confg <x>
let ?local = dataspace
$local <y>
? <ping ?who> [ $who <pong> $whom <pong> ]
`,
		"db1.pr": `<daemon postgres "pg">
<daemon dup "one">
`,
		"db2.pr": `<daemon dup "two">
<require-service <daemon dup>>
`,
		"cycle.pr": `<require-service <daemon a>>
<daemon a "a">
<daemon b "b">
<depends-on <daemon a> <service-state <daemon b> ready>>
<depends-on <daemon b> <service-state <daemon a> ready>>
`,
		"svc.pr": `<require-service <deamon typo>>
<require-service <my-service>>
? <run-service <my-service>> [ <service-state <my-service> ready> ]
<require-service <served-by-state>>
<service-state <served-by-state> ready>
<require-service <config-watcher "sub" {config: $config, extra: $log}>>
$extra <fine>
`,
	})
	got := messages(dir, Analyze(dir))
	want := []string{
		"app.pr:3:1: warning: no <daemon postgress …> declaration in the checked files (did you mean <daemon postgres>?): the daemon would be started and ready at once, so what depends on it would start without it",
		"app.pr:4:1: undefined variable $confg (did you mean $config?)",
		"app.pr:7:29: undefined variable $whom (did you mean $who?)",
		"cycle.pr:4:1: dependency cycle: <daemon a> → <daemon b> → <daemon a> (these services would wait for each other for ever)",
		"db1.pr:2:1: warning: <daemon dup> is declared in 2 files (" + filepath.Join(dir, "db1.pr") + ":2:1, " + filepath.Join(dir, "db2.pr") + ":1:1): each declaration runs a process of its own",
		"db2.pr:1:1: warning: <daemon dup> is declared in 2 files (" + filepath.Join(dir, "db1.pr") + ":2:1, " + filepath.Join(dir, "db2.pr") + ":1:1): each declaration runs a process of its own",
		"svc.pr:1:1: warning: no built-in service and no script provides <deamon typo> (did you mean <daemon …>?): it would stay starting for ever",
		// The watcher's ENV is for the files it loads, not its own.
		"svc.pr:7:1: warning: $extra is bound neither in this file nor by the server: it must come from the environment of the config-watcher that loads this file; check the file together with the script declaring that watcher to have it checked",
	}
	require.Equal(t, want, got)
	for _, e := range Analyze(dir) {
		require.True(t, errors.Is(e, ErrInvalid) != e.Warning, e.Error())
	}
	// CheckAll includes the analysis: the tree fails.
	var l script.ErrorList
	require.ErrorAs(t, CheckAll(dir), &l)
	require.True(t, script.Failed(l))
}

func TestAnalyzeCleanTree(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.pr": `<require-service <daemon web>>
<daemon web "web">
<depends-on <daemon web> <service-state <daemon db> ready>>
<daemon db "db">
<depends-on <daemon web> <service-state <milestone net> ready>>
`,
	})
	require.Empty(t, Analyze(dir))
}

func TestCycleThrough(t *testing.T) {
	g := map[string][]string{"a": {"b"}, "b": {"c", "a"}, "c": {}, "d": {"a"}}
	next := func(n string) []string { return g[n] }
	require.Equal(t, []string{"a", "b", "a"}, CycleThrough("a", next))
	require.Equal(t, []string{"b", "a", "b"}, CycleThrough("b", next))
	require.Nil(t, CycleThrough("d", next), "d leads into a cycle but is not on one")
	require.Nil(t, CycleThrough("c", next))
}
