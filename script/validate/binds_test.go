package validate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/compile"
)

// writeScripts writes name → source into a fresh directory.
func writeScripts(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const keyedBind = `<bind <ref {oid: "config", key: #"k"}> $config #f>` + "\n"

func TestBindsWarnings(t *testing.T) {
	boot, err := os.ReadFile("../../etc/syndicate/boot.pr")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the warnings, in order; nil for none
	}{
		// The hostile case of issue 12: a caveat that stops run-service
		// but lets Observe through, and a keyed bind in another file.
		{"exposed across files", map[string]string{
			"a.pr": "let ?u = <* $config [<reject <run-service _>>]>\n",
			"b.pr": keyedBind,
		}, []string{"b.pr:1:1: warning: this bind holds a key and is asserted into $config, which is handed out attenuated at ", "a.pr:1:10 by caveats that let the holder observe it"}},
		{"noise secret key, retargeted", map[string]string{
			"a.pr": "<require-service <config-watcher \"/x\" {config: <* $config [<reject <run-service _>>]>}>>\n" +
				"? <go> [ $config <bind <noise {service: \"s\", secretKey: #x\"00\"}> $config #f> ]\n",
		}, []string{"a.pr:2:18: warning: this bind holds a key"}},
		{"the shipped boot.pr is safe", map[string]string{"boot.pr": string(boot), "b.pr": keyedBind}, nil},
		{"no key", map[string]string{
			"a.pr": "let ?u = <* $config [<reject <run-service _>>]>\n<bind <ref {oid: \"config\"}> $config #f>\n",
		}, nil},
		{"rewritten into another record observes nothing", map[string]string{
			"a.pr": "let ?u = <* $config [<rewrite ?v <from-untrusted $v>>]>\n" + keyedBind,
		}, nil},
		{"accept-only", map[string]string{
			"a.pr": "let ?u = <* $config [<or [<accept <require-service _>>]>]>\n" + keyedBind,
		}, nil},
		{"a variable in a reject blocks the least", map[string]string{
			"a.pr": "let ?l = run-service\nlet ?u = <* $config [<reject <$l _>>]>\n" + keyedBind,
		}, []string{"a.pr:3:1: warning: this bind holds a key", "a.pr:2:10 by caveats that let the holder observe it"}},
		// Issue 25: a literal pattern whose template uses a capture
		// lets no observation in.
		{"a template alone is no way in", map[string]string{
			"a.pr": "let ?u = <* $config [<rewrite <accepted ?b> <ok $b>>]>\n" + keyedBind,
		}, nil},
		{"a variable in a template is the script's value", map[string]string{
			"a.pr": "let ?w = dataspace\nlet ?u = <* $config [<rewrite <accepted ?b> <ok $b $w>>]>\n" + keyedBind,
		}, nil},
		{"a captured part passed on", map[string]string{
			"a.pr": "let ?u = <* $config [<rewrite <say ?s> $s>]>\n" + keyedBind,
		}, []string{"a.pr:2:1: warning: this bind holds a key"}},
		{"unwrapping lets a wrapped observation in", map[string]string{
			"a.pr": "let ?u = <* $config [<rewrite <wrap ?o> $o> <reject <Observe _ _>>]>\n" + keyedBind,
		}, []string{"a.pr:2:1: warning: this bind holds a key", "a.pr:1:10 by caveats that let the holder observe it"}},
		{"unwrapped, then refused: caveats apply last first", map[string]string{
			"a.pr": "let ?u = <* $config [<reject <Observe _ _>> <rewrite <wrap ?o> $o>]>\n" + keyedBind,
		}, nil},
		{"building an observation from captures", map[string]string{
			"a.pr": "let ?u = <* $config [<rewrite <watch ?p ?o> <Observe $p $o>>]>\n" + keyedBind,
		}, []string{"a.pr:2:1: warning: this bind holds a key"}},
		{"file-local dataspaces do not meet", map[string]string{
			"a.pr": "let ?ds = dataspace\nlet ?u = <* $ds [<reject <x>>]>\n",
			"b.pr": "let ?ds = dataspace\n$ds <bind <ref {oid: \"o\", key: #\"\"}> $ds #f>\n",
		}, nil},
		{"a file-local dataspace", map[string]string{
			"a.pr": "let ?ds = dataspace\nlet ?u = <* $ds [<reject <x>>]>\n$ds <bind <ref {oid: \"o\", key: #\"\"}> $ds #f>\n",
		}, []string{"a.pr:3:5: warning: this bind holds a key and is asserted into $ds"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeScripts(t, c.files)
			ws := Binds(dir)
			if len(c.want) == 0 {
				if len(ws) != 0 {
					t.Fatalf("unexpected warnings: %v", ws)
				}
				return
			}
			if len(ws) != 1 {
				t.Fatalf("warnings %v, want one", ws)
			}
			w := ws[0]
			if !w.Warning || !errors.Is(w, ErrExposedBind) {
				t.Fatalf("%v: not an ErrExposedBind warning", w)
			}
			got := strings.TrimPrefix(w.Error(), dir+"/")
			for _, s := range c.want {
				if !strings.Contains(got, s) {
					t.Errorf("warning %q lacks %q", got, s)
				}
			}
			// CheckAll (what --check runs) reports it, as a warning only.
			err := CheckAll(dir)
			if err == nil || script.Failed(err) || !errors.Is(err, ErrExposedBind) {
				t.Fatalf("CheckAll: %v", err)
			}
		})
	}
}

// The shipped caveats do what the check assumes, at run time: through
// the attenuated capability an observer of every assertion, or of
// <bind …> records, sees no bind, while other observations still work.
func TestShippedAttenuationHidesBinds(t *testing.T) {
	src, err := os.ReadFile("../../etc/syndicate/boot.pr")
	if err != nil {
		t.Fatal(err)
	}
	f, errs := script.ParseFile("boot.pr", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var cs []caveat.Caveat
	var find func(in compile.Instr)
	find = func(in compile.Instr) {
		switch x := in.(type) {
		case *compile.Seq:
			for _, i := range x.Body {
				find(i)
			}
		case *compile.Let:
			if a, ok := x.Expr.(*compile.MkAttenuate); ok {
				var err error
				if cs, err = caveat.ListFromValue(a.Caveats.(*compile.Const).Value); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	find(compile.Compile(f).Body)
	if len(cs) == 0 {
		t.Fatal("no attenuation in boot.pr")
	}

	sys := dataspacetest.NewSystem(t, dataspace.Options{})
	var mu sync.Mutex
	seen := map[string]int{}
	record := func(what string) func(*dataspace.Turn, []preserves.Value) error {
		return func(_ *dataspace.Turn, caps []preserves.Value) error {
			mu.Lock()
			seen[what]++
			mu.Unlock()
			return nil
		}
	}
	sys.Spawn("t", func(t0 *dataspace.Turn) error {
		t0.PreventInertCheck()
		cfg := t0.Create(dataspace.NewDataspace())
		secret := t0.Create(dataspace.BaseEntity{})
		t0.Assert(cfg, preserves.Rec("bind", preserves.Rec("ref", preserves.NewDictionary(
			preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("config")},
			preserves.DictEntry{Key: preserves.Symbol("key"), Value: preserves.ByteString("k")})),
			dataspace.Embed(secret), preserves.Bool(false)))
		t0.Assert(cfg, preserves.Rec("service-state", preserves.Symbol("x"), preserves.Symbol("ready")))
		u, err := cfg.Attenuate(cs...)
		if err != nil {
			return err
		}
		t0.During(u, pattern.Bind{Pattern: pattern.Discard{}}, record("everything"))
		t0.During(u, pattern.Rec(preserves.Symbol("bind"), pattern.Capture(), pattern.Capture(), pattern.Capture()), record("bind"))
		t0.During(u, pattern.Rec(preserves.Symbol("service-state"), pattern.Capture(), pattern.Capture()), record("service-state"))
		return nil
	})
	// The dataspace answers observers in the order they were asserted, so
	// once the last one has its answer the others have had theirs.
	testutil.WaitFor(t, "the service-state observer", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["service-state"] == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if seen["everything"] != 0 || seen["bind"] != 0 {
		t.Fatalf("an attenuated holder saw the bind: %v", seen)
	}
}
