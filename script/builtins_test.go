package script_test

import (
	"os"
	"regexp"
	"testing"
	"time"

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

// TestTimestamp: the one Timestamp of the tree (the `timestamp`
// built-in, and the daemon log lines of services spec §4.5).
func TestTimestamp(t *testing.T) {
	cases := map[time.Time]string{
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC):                    "2025-01-02T03:04:05+00:00",
		time.Date(2025, 1, 2, 3, 4, 5, 678000000, time.UTC):            "2025-01-02T03:04:05.678+00:00",
		time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC):            "2025-01-02T03:04:05.678901+00:00",
		time.Date(2025, 1, 2, 3, 4, 5, 678901234, time.UTC):            "2025-01-02T03:04:05.678901234+00:00",
		time.Date(2025, 1, 2, 5, 4, 5, 0, time.FixedZone("x", 2*3600)): "2025-01-02T03:04:05+00:00",
	}
	for tm, want := range cases {
		if got := script.Timestamp(tm); got != want {
			t.Errorf("Timestamp(%v) = %s, want %s", tm, got, want)
		}
	}
}

// TestIsScriptName: the one "is this file a script" rule, shared by the
// config watcher, check and validation.
func TestIsScriptName(t *testing.T) {
	for name, want := range map[string]bool{
		"a.pr": true, "00-stages.pr": true, ".hidden.pr": false, "a.prs": false,
		"a.pr~": false, "\xff.pr": false, "é.pr": true, ".pr": false,
	} {
		if got := script.IsScriptName(name); got != want {
			t.Errorf("IsScriptName(%q) = %v", name, got)
		}
	}
}
