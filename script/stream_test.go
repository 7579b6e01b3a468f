package script_test

import (
	"fmt"
	"os"
	"path/filepath"
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
	type source struct{ name, src string }
	var srcs []source
	for _, data := range []string{"testdata/errors.pr", "testdata/dialects.pr"} {
		chunks, err := scripttest.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			srcs = append(srcs, source{c.File + "/" + c.Name(), c.Src})
		}
	}
	for _, glob := range []string{"testdata/*.pr", "compile/testdata/*.pr", "vm/testdata/*.pr",
		"validate/testdata/*.pr", "../etc/syndicate/*.pr", "../etc/services/*.pr"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, source{f, string(b)})
		}
	}
	var big strings.Builder
	for i := range 300 {
		fmt.Fprintf(&big, "<x %d>\n$log ! <log %d>\nlet ?v%d = stringify <a %d>\n? <s ?y> [ <t $y> ]\n", i, i, i, i)
		if i == 150 {
			big.WriteString("$v1 =~ <a ?z> [ <z $z> ]\n")
		}
	}
	srcs = append(srcs,
		source{"big", big.String()},
		source{"trailing comments", big.String() + "# the end\n# really\n"},
		source{"trailing annotation", "<x>\n@a"},
		source{"cut record", big.String() + "<x 1"},
		source{"syntax error", "<x>\n<y ;>\n<z>\n"},
		source{"dialect", "dialect sturdy-caveats\n<x>\n"},
		source{"dialect only", "dialect"},
		source{"empty", ""},
		source{"comments only", "# nothing\n"},
	)
	for _, w := range []int{1, 2, 3, 256} {
		restore := script.SetStreamWindow(w)
		for _, s := range srcs {
			want, wantErrs := script.ParseFile(s.name, []byte(s.src))
			var body []script.Instr
			got, gotErrs := script.ParseFileEach(s.name, []byte(s.src), func(in script.Instr) { body = append(body, in) })
			where := fmt.Sprintf("window %d, %s", w, s.name)
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
