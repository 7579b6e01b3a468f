package script_test

import (
	"fmt"
	"os"
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
			if msg := eachDiffers(s.Name, s.Src); msg != "" {
				t.Errorf("window %d, %s: %s", w, s.Name, msg)
			}
		}
		restore()
	}
}

// FuzzParseFileEach: on any input, ParseFileEach with a window of one,
// two or the default tokens agrees with ParseFile.
func FuzzParseFileEach(f *testing.F) {
	for _, name := range []string{"testdata/errors.pr", "testdata/dialects.pr"} {
		if src, err := os.ReadFile(name); err == nil {
			for _, chunk := range strings.Split(string(src), "\n---\n") {
				f.Add([]byte(chunk), uint8(1))
			}
		}
	}
	f.Add([]byte("<x>\n$v =~ <a ?z> [ <z $z> ] <y>\n# end"), uint8(2))
	f.Fuzz(func(t *testing.T, src []byte, w uint8) {
		defer script.SetStreamWindow(int(w%3) + 1)()
		if msg := eachDiffers("z.pr", string(src)); msg != "" {
			t.Fatal(msg)
		}
	})
}

// eachDiffers says how ParseFileEach's result on src differs from
// ParseFile's: errors and warnings, the dialect, and when there are no
// errors the top-level instructions; "" if it does not.
func eachDiffers(name, src string) string {
	want, wantErrs := script.ParseFile(name, []byte(src))
	var body []script.Instr
	got, gotErrs := script.ParseFileEach(name, []byte(src), func(in script.Instr) { body = append(body, in) })
	if fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
		return fmt.Sprintf("errors\n%v\nwant\n%v", gotErrs, wantErrs)
	}
	if fmt.Sprint(got.Warnings) != fmt.Sprint(want.Warnings) || got.Dialect != want.Dialect {
		return fmt.Sprintf("warnings %v, dialect %q; want %v, %q", got.Warnings, got.Dialect, want.Warnings, want.Dialect)
	}
	if len(wantErrs) == 0 && !reflect.DeepEqual(body, want.Body) {
		return fmt.Sprintf("%d instructions differ from ParseFile's %d", len(body), len(want.Body))
	}
	return ""
}
