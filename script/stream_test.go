package script_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/script"
	"github.com/syndicate-go/syndicate/script/scripttest"
)

// ParseFileEach gives what ParseFile gives, whatever its window: the same
// errors and warnings, and when there are none, the same top-level
// instructions. Windows of one to three tokens cut every instruction of
// the test data at every place.
func TestParseFileEachAgreesWithParseFile(t *testing.T) {
	var srcs []scripttest.Source
	for _, data := range []string{"testdata/errors.pr", "testdata/dialects.pr"} {
		chunks, err := scripttest.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			srcs = append(srcs, scripttest.Source{Name: c.File + "/" + c.Name(), Src: c.Src})
		}
	}
	srcs = append(srcs, scripttest.Files(t, "testdata/*.pr", "compile/testdata/*.pr", "vm/testdata/*.pr",
		"validate/testdata/*.pr", "../etc/syndicate/*.pr", "../etc/services/*.pr")...)
	var big strings.Builder
	for i := range 300 {
		fmt.Fprintf(&big, "<x %d>\n$log ! <log %d>\nlet ?v%d = stringify <a %d>\n? <s ?y> [ <t $y> ]\n", i, i, i, i)
		if i == 150 {
			big.WriteString("$v1 =~ <a ?z> [ <z $z> ]\n")
		}
	}
	srcs = append(srcs,
		scripttest.Source{Name: "big", Src: big.String()},
		scripttest.Source{Name: "trailing comments", Src: big.String() + "# the end\n# really\n"},
		scripttest.Source{Name: "trailing annotation", Src: "<x>\n@a"},
		scripttest.Source{Name: "cut record", Src: big.String() + "<x 1"},
		scripttest.Source{Name: "syntax error", Src: "<x>\n<y ;>\n<z>\n"},
		scripttest.Source{Name: "dialect", Src: "dialect sturdy-caveats\n<x>\n"},
		scripttest.Source{Name: "dialect only", Src: "dialect"},
		scripttest.Source{Name: "empty", Src: ""},
		scripttest.Source{Name: "comments only", Src: "# nothing\n"},
	)
	for _, w := range []int{1, 2, 3, 256} {
		restore := script.SetStreamWindow(w)
		for _, s := range srcs {
			want, wantErrs := script.ParseFile(s.Name, []byte(s.Src))
			var body []script.Instr
			got, gotErrs := script.ParseFileEach(s.Name, []byte(s.Src), func(in script.Instr) { body = append(body, in) })
			where := fmt.Sprintf("window %d, %s", w, s.Name)
			if fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
				t.Errorf("%s: errors\n%v\nwant\n%v", where, gotErrs, wantErrs)
				continue
			}
			if fmt.Sprint(got.Warnings) != fmt.Sprint(want.Warnings) || got.Dialect != want.Dialect {
				t.Errorf("%s: warnings %v, dialect %q; want %v, %q", where, got.Warnings, got.Dialect, want.Warnings, want.Dialect)
			}
			if len(wantErrs) == 0 && !reflect.DeepEqual(body, want.Body) {
				t.Errorf("%s: %d instructions differ from ParseFile's %d", where, len(body), len(want.Body))
			}
		}
		restore()
	}
}
