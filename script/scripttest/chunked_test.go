package scripttest

import (
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	text := "preamble\n---\n<a>\n?x   ### 1: binder\n### 2: second\n#= want <a>\n---\n<b>  ### run 3: oops\n"
	cs, err := Parse("f.pr", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("%d chunks", len(cs))
	}
	c := cs[0]
	if c.Line != 3 || len(c.Expect) != 2 || c.Expect[1].Line != 4 || c.Expect[1].Col != 2 || c.Expect[0].Runtime {
		t.Errorf("chunk 0: %+v", c)
	}
	if got := strings.Split(c.Src, "\n"); len(got) < 6 || got[2] != "<a>" || strings.TrimSpace(got[3]) != "?x" || got[4] != "" || got[5] != "" {
		t.Errorf("source lines %q", got)
	}
	if a := c.Args("want"); len(a) != 1 || a[0] != "<a>" {
		t.Errorf("want %v", a)
	}
	if p := c.Match(false, []string{"f.pr:4:1: binder ?x", "f.pr:4:2: second"}); len(p) != 0 {
		t.Errorf("match: %v", p)
	}
	if p := c.Match(false, []string{"f.pr:4:1: binder ?x", "f.pr:9:9: extra"}); len(p) != 2 {
		t.Errorf("mismatch not reported: %v", p)
	}
	if !cs[1].Expect[0].Runtime || cs[1].Expect[0].Line != 8 {
		t.Errorf("chunk 1: %+v", cs[1].Expect)
	}
	if _, err := Parse("f.pr", "---\n### 1: orphan\n"); err == nil {
		t.Error("orphan marker accepted")
	}
}

// update is accepted so that `go test ./script/... -update` (which
// regenerates the compile package's golden files) runs in every package.
var _ = flag.Bool("update", false, "regenerate golden files (used by script/compile)")
