package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// These tests exercise the integration with the real script compiler and VM.

func TestScenario31ScriptdirAndEnvironment(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "sub/x.pr"), "let ?d = scriptdir\n<dir $d>\n<greeting $extra>\n")
	w := newWorld(t, testOptions())
	env := preserves.NewDictionary(
		preserves.DictEntry{Key: preserves.Symbol("config"), Value: dataspace.Embed(w.cfg)},
		preserves.DictEntry{Key: preserves.Symbol("extra"), Value: preserves.String("hi")},
	)
	name := watcherName(dir, env)
	w.run(name)
	w.waitHas(stateText(name, "ready"))
	for _, v := range []string{
		fmt.Sprintf("<dir %s>", strconv.Quote(filepath.Join(dir, "sub"))),
		`<greeting "hi">`,
	} {
		if !w.has(v) {
			t.Errorf("missing %s; live: %v", v, w.liveWith("<"))
		}
	}
}

func TestBindingsArePrivateToEachFile(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "a.pr"), "let ?x = 1\n<a $x>\n")
	writeAtomic(t, filepath.Join(dir, "b.pr"), "<b-before>\n<b $x>\n")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	if !w.has("<a 1>") {
		t.Fatal("a.pr did not run")
	}
	// b.pr's $x is undefined: a run-time error that stops only b's facet.
	w.waitLog(filepath.Join(dir, "b.pr") + ":2:")
	w.barrier(dir)
	if w.has("<b-before>") {
		t.Fatal("b.pr's facet survived its run-time error")
	}
	if !w.has("<a 1>") {
		t.Fatal("a run-time error in b.pr affected a.pr")
	}
}

func TestScenario36NestedWatcherSeesAllVariables(t *testing.T) {
	outer := tempRoot(t)
	inner := tempRoot(t)
	writeAtomic(t, filepath.Join(inner, "in.pr"), "<inner $marker>\n")
	writeAtomic(t, filepath.Join(outer, "out.pr"),
		fmt.Sprintf("let ?marker = 7\n<require-service <config-watcher %s $.>>\n", strconv.Quote(inner)))
	w := newWorld(t, testOptions())
	w.startWatcher(outer)
	w.waitHas("<inner 7>")
	// Editing the inner tree works through the nested watcher.
	writeAtomic(t, filepath.Join(inner, "in.pr"), "<inner2 $marker>\n")
	w.waitHas("<inner2 7>")
	w.waitGone("<inner 7>")
	// Removing the outer file withdraws the nested watcher and its scripts.
	writeAtomic(t, filepath.Join(outer, "out.pr"), "<empty>\n")
	w.waitGone("<inner2 7>")
}

// Q18 (Go avoids the blip): an assertion made in a `?` handler body and
// common to the old and new version of a file is never withdrawn by an edit.
func TestEditKeepsHandlerBodyAssertions(t *testing.T) {
	dir := tempRoot(t)
	p := filepath.Join(dir, "h.pr")
	writeAtomic(t, p, "? <go> [ <require-service <daemon d>> ]\n<x 1>\n")
	w := newWorld(t, testOptions())
	w.startWatcher(dir)
	w.do(func(t *dataspace.Turn) { t.Assert(w.cfg, preserves.Rec("go")) })
	w.waitHas("<require-service <daemon d>>")
	writeAtomic(t, p, "? <go> [ <require-service <daemon d>> ]\n<x 2>\n")
	w.waitHas("<x 2>")
	w.waitGone("<x 1>")
	if got := w.eventsOf("<require-service <daemon d>>"); got != "+" {
		t.Fatalf("handler-body assertion events %q: it blinked during the edit", got)
	}
	// Removing the file still withdraws it.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	w.waitGone("<require-service <daemon d>>")
}

// The run-time warning path: a script whose caveat is written in another
// dialect's notation runs, and its warning is logged with the position.
func TestForeignCaveatNotationWarnsAtLoad(t *testing.T) {
	dir := tempRoot(t)
	writeAtomic(t, filepath.Join(dir, "net.pr"), "let ?n = <* $config [<reject <not <rec Observe>>>]>\n<loaded>\n")
	w := newWorld(t, testOptions())
	env := preserves.NewDictionary(preserves.DictEntry{Key: preserves.Symbol("config"), Value: dataspace.Embed(w.cfg)})
	w.run(watcherName(dir, env))
	w.waitHas("<loaded>")
	w.waitLog(`"pos":"` + filepath.Join(dir, "net.pr") + `:1:30"`)
	w.waitLog(`<or [<accept <Observe _ _>>]>`)
}
