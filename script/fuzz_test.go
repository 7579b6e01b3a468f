package script_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/script"
)

// FuzzParse: any input yields a usable File and sorted lists of errors and
// warnings, each with the file's name in its position; never a panic.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/errors.pr", "testdata/dialects.pr"} {
		if src, err := os.ReadFile(name); err == nil {
			for _, chunk := range strings.Split(string(src), "\n---\n") {
				f.Add([]byte(chunk))
			}
		}
	}
	f.Add([]byte("<* $x [<or [<rewrite <a ?x> <* $x [<reject $x>]>>]>]>"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, errs := script.ParseFile("z.pr", src)
		if file == nil {
			t.Fatal("nil File")
		}
		if !sort.IsSorted(errs) {
			t.Fatalf("errors not sorted: %v", errs)
		}
		if !sort.IsSorted(file.Warnings) {
			t.Fatalf("warnings not sorted: %v", file.Warnings)
		}
		for _, e := range append(errs, file.Warnings...) {
			if !strings.HasPrefix(e.Error(), "z.pr") {
				t.Fatalf("error without position: %v", e)
			}
		}
	})
}
