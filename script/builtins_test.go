package script_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/syndicate-go/syndicate/script"
)

// Every built-in has its row in docs/language.md's table of expressions,
// with the table's Doc text, and the table lists nothing else.
func TestBuiltinsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile("(?ms)^\\| Expression .*?\n\n").Find(doc)
	if table == nil {
		t.Fatal("no table of expressions in docs/language.md")
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z]+)[^`]*` +\\| (.*?) +\\|$").FindAllStringSubmatch(string(table), -1)
	documented := map[string]string{}
	for _, r := range rows {
		documented[r[1]] = r[2]
	}
	for _, b := range script.Builtins {
		d, ok := documented[b.Name]
		if !ok {
			t.Errorf("built-in %s is not in docs/language.md's table of expressions", b.Name)
		} else if d != b.Doc {
			t.Errorf("built-in %s: the table says %q, Builtin.Doc %q", b.Name, d, b.Doc)
		}
		if got, ok := script.LookupBuiltin(b.Name); !ok || got != b {
			t.Errorf("LookupBuiltin(%s)", b.Name)
		}
	}
	for name := range documented {
		if _, ok := script.LookupBuiltin(name); !ok {
			t.Errorf("docs/language.md documents %s, which is no built-in", name)
		}
	}
}
